"""choice: the options shown together under letters, asked in one balanced order or in
every order ("both" for two options: acc_A, acc_B, bias, A∧B). An answer that does not parse
may be read by a judge model; its verdict is stored beside the answer and read here."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from ..measures import metrics as M
from ..measures.chance import Event, event_proportion
from ..core.hashing import stable_hash
from ..core.items import Item, VideoRef
from ..measures.parsing import Parsed, conclusion, parse_choice
from ..models.requests import Answer, Request
from ..models.stops import cut
from ..measures.stats import MetricValue, proportion
from .base import LETTERS, ORDER_POLICIES, Outcome, PlanContext, PlannedRequest, Protocol, count_unread

# The Vinoground paper's judge prompt (App. G), verbatim, for two options; the line breaks its
# printed text writes as "n" are newlines. More options: timefoil's wording, listing them.
JUDGE_TWO = ("Please parse the following model response into either A or B. If the model response is just A "
             "or B, then it denotes the model answer, just output it. The model response starts after ====, "
             "and end before ====):\n====<MODEL RESPONSE>====\nProvide output your answer as a single "
             "character (A or B): ")
JUDGE_MANY = ("A model was asked a multiple-choice question with these options:\n{options}\nIts response "
              "starts after ==== and ends before ====:\n===={response}====\nWhich option did it choose? "
              "Output only that option's letter ({letters}).")


@dataclass
class Trial:
    position: int
    chosen: int | None  # option index, None if unparsed or failed
    correct: bool
    status: str  # parse status or "error"
    key: str = ""  # the request's key: a question asked twice (a duplicated item) is one answer


@dataclass
class ChoiceOutcome(Outcome):
    trials: list[Trial] = field(default_factory=list)

    def correct(self, tie_policy: str = "strict") -> bool:
        return not self.unanswered and bool(self.trials) and all(t.correct for t in self.trials)

    def trial_events(self) -> list[Event]:
        """One per question asked: its answered trials, then one per unanswered request."""
        return [M.picks(t.key or ("trial", self.item["id"], t.position), t.position, self.n_options)
                for t in self.trials] + [M.picks(("unanswered", self.item["id"], j), 0, self.n_options)
                                         for j in range(self.unanswered)]

    def event(self) -> Event:
        return tuple(c for e in self.trial_events() for c in e)


def target_positions(items: Sequence[Item], policy: str, seed: int) -> dict[str, list[int]]:
    """Where the true option is shown, per item. "both" shows it at every position;
    "balanced" once, positions spread evenly over the items in a seeded order (neither
    always first, as an early Vinoground port did, nor correlated with item order).
    An item may fix its own order (``Item.target_position``, its published GT letter)."""
    if policy not in ORDER_POLICIES:
        raise ValueError(f"option order must be one of {ORDER_POLICIES}")
    out: dict[str, list[int]] = {}
    ranked = sorted(items, key=lambda it: stable_hash([seed, it.id]))
    for rank, item in enumerate(ranked):
        if policy == "both":
            out[item.id] = list(range(item.n_options))
        elif item.target_position is not None:
            out[item.id] = [item.target_position]
        else:
            out[item.id] = [rank % item.n_options]
    return out


def shown_order(n_options: int, target: int, position: int) -> list[int]:
    """Option indices as shown: the target at ``position``, the others in their own order."""
    others = [j for j in range(n_options) if j != target]
    return others[:position] + [target] + others[position:]


def central_option(texts: Sequence[str]) -> int:
    """The option closest to all the others (highest mean word-set Jaccard overlap). Negatives
    made by small edits of the true caption surround it, so the centre is often the truth: a
    model can find it without the video (TemporalBench's centralized-option analysis)."""
    words = [set(t.lower().split()) for t in texts]

    def closeness(i: int) -> float:
        return sum(len(words[i] & w) / max(1, len(words[i] | w)) for j, w in enumerate(words) if j != i)

    return max(range(len(texts)), key=lambda i: (closeness(i), -i))


def fill_choice(template: str, texts: Sequence[str], labels: Sequence[str], caption: str = "") -> str:
    fields = {f"c{i + 1}": t for i, t in enumerate(texts)}
    fields.update({f"d{i + 1}": t for i, t in enumerate(texts)})
    fields["options"] = "\n".join(f"{lab}. {t}" for lab, t in zip(labels, texts))
    fields["caption"] = caption
    return template.format(**fields)


class Choice(Protocol):
    name = kind = "choice"
    reasons = True
    prompted = True
    description = "the options shown together under letters; one balanced order, or every order"
    metrics = {"accuracy": "choice accuracy (per question asked)",
               "central picks / central is true": "3+ options: answers naming the option closest to the others, "
                                                  "and items whose closest option is the true one",
               "acc_A / acc_B / bias / A∧B": "two options asked in both orders (--order both)",
               "all orders": "right in every order it was asked"}

    def plan(self, items: Sequence[Item], context: PlanContext) -> list[tuple[Item, PlannedRequest]]:
        """Positions are spread over all the items together, so planning is done at once."""
        self.check(items)
        positions = target_positions(items, context.order_policy, context.seed)
        return [(item, p) for item in items for p in self.ask(item, context, positions[item.id])]

    def plan_item(self, item: Item, context: PlanContext) -> list[PlannedRequest]:
        return self.ask(item, context, target_positions([item], context.order_policy, context.seed)[item.id])

    def ask(self, item: Item, context: PlanContext, positions: Sequence[int]) -> list[PlannedRequest]:
        prompts, labels = context.prompts, item.labels or tuple(LETTERS[: item.n_options])
        planned = []
        for position in positions:
            order = shown_order(item.n_options, item.target, position)
            if item.options_are == "videos":
                if item.n_options != 2:
                    raise ValueError(f"item {item.id}: video options are shown as two joined segments")
                ref = VideoRef.concat(item.videos[order[0]], item.videos[order[1]], prompts.concat_gap)
                text = prompts.video_choice.format(caption=item.texts[0], gap=prompts.concat_gap)
                option_texts: tuple[str, ...] = ()
            else:
                ref = item.videos[0]
                option_texts = tuple(item.texts[j] for j in order)
                text = fill_choice(prompts.choice, option_texts, labels)
            published = position == item.target_position and item.prompt is not None
            if position == item.target_position:  # the published question, as published
                text = item.prompt or text
                ref = item.joined_video or ref
            request = context.question(self.kind, text, ref, labels=labels, option_texts=option_texts)
            planned.append(PlannedRequest(f"{item.id}|pos{position}", request,
                                          {"position": position, "order": order, **context.reasoning,
                                           **({"published": True} if published else {})},
                                          len(positions)))
        return planned

    def read(self, request: dict[str, Any], answer: Answer, verdict: dict | None = None) -> Parsed:
        """The answer's letter. A reasoned answer is read by the judge when there is one (every
        one goes to it, as the Vinoground paper does), else from its conclusion; a plain answer
        that names no letter is read by the judge, if one was asked."""
        labels, texts = request["labels"], request["option_texts"]
        segments = not texts  # only a question whose options are video segments shows no option texts
        judged = parse_choice(verdict["raw"], labels) if verdict and verdict.get("raw") else None
        was_cut = cut(answer.meta)  # read only where the part received decides it
        if request.get("reasoning"):
            if judged is not None and judged.ok:
                return judged
            concluded = conclusion(answer.raw, was_cut)
            return Parsed(None, "cut") if was_cut and concluded is None else \
                parse_choice(concluded, labels, texts, segments)
        parsed = parse_choice(answer.raw, labels, texts, segments, cut=was_cut)
        return judged if not parsed.ok and judged is not None and judged.ok else parsed

    def judge_request(self, request: dict[str, Any], answer: Answer) -> Request | None:
        if answer.error or answer.raw is None:
            return None
        if not request.get("reasoning") and self.read(request, answer).ok:
            return None
        labels = request["labels"]
        if len(labels) == 2 and list(labels) == ["A", "B"]:
            text = JUDGE_TWO.replace("<MODEL RESPONSE>", answer.raw)
        else:
            shown = request["option_texts"] or [f"option {label}" for label in labels]
            options = "\n".join(f"{label}. {t}" for label, t in zip(labels, shown))
            text = JUDGE_MANY.format(options=options, response=answer.raw, letters=", ".join(labels))
        return Request("generation", None, text, max_tokens=4)

    def degenerate(self, record: dict[str, Any]) -> bool:
        """Also a published pre-joined video (one file holding both clips and the black gap)
        shown in fewer than 3 frames: it cannot show a frame of each clip and of the gap."""
        frames = record.get("frames") or {}
        shown = frames.get("n")
        joined = record["item"].get("options_are") == "videos" and not frames.get("blind")
        return super().degenerate(record) or (joined and shown is not None and shown < 3)

    def new_outcome(self, item: dict[str, Any]) -> ChoiceOutcome:
        return ChoiceOutcome(item)

    def take(self, outcome: ChoiceOutcome, request: dict[str, Any], answer: Answer, verdict: dict | None) -> None:
        key = request.get("key", "")
        if answer.error:
            outcome.trials.append(Trial(request["position"], None, False, "error", key))
        else:
            parsed = self.read(request, answer, verdict)
            if outcome.rule is not None and outcome.rule.letter is not None:
                parsed = self.read_by_rule(outcome, request, answer, verdict, parsed)
            chosen = request["order"][request["labels"].index(parsed.value)] if parsed.ok else None
            if not parsed.ok:
                count_unread(outcome, answer)
            outcome.trials.append(Trial(request["position"], chosen, chosen == outcome.target, parsed.status, key))
        outcome.trials.sort(key=lambda t: t.position)

    @staticmethod
    def read_by_rule(outcome: ChoiceOutcome, request: dict[str, Any], answer: Answer, verdict: dict | None,
                     meant: Parsed) -> Parsed:
        """The letter the outcome's rule reads, counted where it differs from ``meant``. The rule
        sees what a released scorer saw: the judge's output for a judged reasoning answer."""
        judged = request.get("reasoning") and verdict and verdict.get("raw")
        letter = outcome.rule.letter(verdict["raw"] if judged else answer.raw, request["labels"])
        outcome.read_differently += letter != meant.value
        outcome.unread |= letter is None and outcome.rule.drops
        return Parsed(letter, "ok", "released") if letter else Parsed(None, "unparseable", "released")

    def item_metrics(self, outcomes: Sequence[ChoiceOutcome], tie_policy: str) -> list[MetricValue]:
        asked = [[t.correct for t in o.trials] + [False] * o.unanswered for o in outcomes]
        result = [M.accuracy("accuracy", [c for a in asked for c in a],
                             [o.n_options for o, a in zip(outcomes, asked) for _ in a],
                             [e for o in outcomes for e in o.trial_events()])]
        if outcomes and all(o.n_options == 2 and len(o.trials) == 2 for o in outcomes):
            events = [o.trial_events() for o in outcomes]
            result += M.order_metrics([o.trials[0].correct for o in outcomes], [o.trials[1].correct for o in outcomes],
                                      [e[0] for e in events], [e[1] for e in events])
        elif any(len(o.trials) > 1 for o in outcomes):
            result.append(event_proportion("all orders", [o.correct() for o in outcomes],
                                           [o.event() for o in outcomes]))
        many = [o for o in outcomes if o.n_options > 2 and o.item.get("options_are") == "texts"]
        if many:
            result += centralized(many)
        return result


def centralized(outcomes: Sequence[ChoiceOutcome]) -> list[MetricValue]:
    """How often the answer is the central option, and how often the centre is the truth."""
    centre = {o.item["id"]: central_option(o.item["texts"]) for o in outcomes}
    picks = [(t.chosen == centre[o.item["id"]], 1 / o.n_options) for o in outcomes for t in o.trials
             if t.chosen is not None]
    return [proportion("central picks", [p for p, _ in picks], [c for _, c in picks]),
            proportion("central is true", [centre[o.item["id"]] == o.target for o in outcomes],
                       [1 / o.n_options for o in outcomes])]


PROTOCOL = Choice()
