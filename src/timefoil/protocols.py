"""Protocols turn items into requests and stored answers back into per-item outcomes.

similarity  one request per option: score(video, text); the target must score highest.
entailment  one Yes/No request per option: e = p(Yes) / (p(Yes) + p(No)).
choice      the options shown together under letters; asked in one balanced order, or in
            every order ("both" for two options).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from .hashing import stable_hash
from .items import Item, VideoRef
from .metrics import rank_outcome
from .parsing import Parsed, parse_choice, parse_yes_no
from .requests import Answer, Request
from .video.sampling import Sampling

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
PROTOCOLS = ("similarity", "entailment", "choice", "generation")
ORDER_POLICIES = ("balanced", "both")


@dataclass(frozen=True)
class Prompts:
    """Prompt templates of a benchmark. Choice templates see {c1}, {c2}, ... (also {d1}...),
    {options} (one "A. text" line each) and {caption}; entailment sees {caption}."""

    choice: str = "Which caption best describes this video?\n{options}\nAnswer with the option's letter."
    video_choice: str = ("Which video segment matches this caption? Note: The video contains two segments "
                         "separated by a 2-second black frame. Caption: {caption}. "
                         "A. First segment (before black frame), B. Second segment (after black frame)")
    entailment: str = ("Carefully watch the video and pay attention to the sequence of events, the details "
                       "and actions of persons.\nHere is a caption that describes the video: {caption}\n"
                       "Based on your observation, does the given video entail the caption?")
    generation: str = ("Describe this video in detail: every action in the order it happens, how often, in "
                       "which direction and by whom.")
    system: str | None = None
    concat_gap: float = 2.0
    max_tokens: int = 512  # dense captions are long


@dataclass(frozen=True)
class PlannedRequest:
    id: str
    request: Request
    info: dict[str, Any]  # "option": j, or "position"/"order" for choice
    expected: int  # how many requests the item has in all


def target_positions(items: Sequence[Item], policy: str, seed: int) -> dict[str, list[int]]:
    """Where the true option is shown, per item. "both" shows it at every position;
    "balanced" once, positions spread evenly over the items in a seeded order (neither
    always first, as an early Vinoground port did, nor correlated with item order).
    An item may fix its own order (``metadata['target_position']``, published GT letters)."""
    if policy not in ORDER_POLICIES:
        raise ValueError(f"option order must be one of {ORDER_POLICIES}")
    out: dict[str, list[int]] = {}
    ranked = sorted(items, key=lambda it: stable_hash([seed, it.id]))
    for rank, item in enumerate(ranked):
        fixed = item.metadata.get("target_position")
        if policy == "both":
            out[item.id] = list(range(item.n_options))
        elif fixed is not None:
            out[item.id] = [int(fixed)]
        else:
            out[item.id] = [rank % item.n_options]
    return out


def shown_order(n_options: int, target: int, position: int) -> list[int]:
    """Option indices as shown: the target at ``position``, the others in their own order."""
    others = [j for j in range(n_options) if j != target]
    return others[:position] + [target] + others[position:]


def _fill_choice(template: str, texts: Sequence[str], labels: Sequence[str], caption: str = "") -> str:
    fields = {f"c{i + 1}": t for i, t in enumerate(texts)}
    fields.update({f"d{i + 1}": t for i, t in enumerate(texts)})
    fields["options"] = "\n".join(f"{lab}. {t}" for lab, t in zip(labels, texts))
    fields["caption"] = caption
    return template.format(**fields)


def plan_requests(item: Item, protocol: str, prompts: Prompts, sampling: Sampling,
                  positions: Sequence[int] = (0,), blind: bool = False) -> list[PlannedRequest]:
    def video(ref: VideoRef | None) -> VideoRef | None:
        return None if blind else ref

    sampling_used = None if blind else sampling
    if protocol == "generation" or item.options_are == "references":
        if protocol != "generation":
            raise ValueError(f"item {item.id} has reference texts, not options: use the generation protocol")
        request = Request("generation", video(item.videos[0]), item.metadata.get("prompt") or prompts.generation,
                          sampling_used, system=prompts.system, max_tokens=prompts.max_tokens)
        return [PlannedRequest(f"{item.id}|gen", request, {}, 1)]
    if protocol in ("similarity", "entailment"):
        planned = []
        for j in range(item.n_options):
            ref = item.videos[j] if item.options_are == "videos" else item.videos[0]
            caption = item.texts[0] if item.options_are == "videos" else item.texts[j]
            if protocol == "similarity":
                request = Request("similarity", video(ref), caption, sampling_used)
            else:
                request = Request("entailment", video(ref), prompts.entailment.format(caption=caption),
                                  sampling_used, labels=("Yes", "No"), caption=caption, system=prompts.system)
            planned.append(PlannedRequest(f"{item.id}|opt{j}", request, {"option": j}, item.n_options))
        return planned
    if protocol != "choice":
        raise ValueError(f"unknown protocol {protocol!r}; choose from {PROTOCOLS}")
    planned = []
    labels = tuple(LETTERS[: item.n_options])
    for position in positions:
        order = shown_order(item.n_options, item.target, position)
        if item.options_are == "videos":
            if item.n_options != 2:
                raise ValueError(f"item {item.id}: video options are shown as two joined segments")
            ref = VideoRef.concat(item.videos[order[0]], item.videos[order[1]], prompts.concat_gap)
            text = prompts.video_choice.format(caption=item.texts[0])
            option_texts: tuple[str, ...] = ()
        else:
            ref = item.videos[0]
            option_texts = tuple(item.texts[j] for j in order)
            text = _fill_choice(prompts.choice, option_texts, labels)
        if position == item.metadata.get("target_position"):  # the published question, as published
            text = item.metadata.get("prompt") or text
            if item.metadata.get("joined_video"):
                ref = VideoRef.file(item.metadata["joined_video"])
        request = Request("choice", video(ref), text, sampling_used, labels=labels,
                          option_texts=option_texts, system=prompts.system)
        planned.append(PlannedRequest(f"{item.id}|pos{position}", request,
                                      {"position": position, "order": order}, len(positions)))
    return planned


# -- outcomes ---------------------------------------------------------------------------
@dataclass
class Trial:
    position: int
    chosen: int | None  # option index, None if unparsed or failed
    correct: bool
    status: str  # parse status or "error"


@dataclass
class ItemOutcome:
    item: dict[str, Any]
    kind: str
    scores: list[float | None] = field(default_factory=list)  # similarity score or e(V, C) per option
    keys: list[str] = field(default_factory=list)  # request key per option: shared scores share a key
    trials: list[Trial] = field(default_factory=list)
    generated: str | None = None  # free text, for generation items
    errors: list[str] = field(default_factory=list)
    parse_failures: int = 0
    unanswered: int = 0
    degenerate: bool = False

    @property
    def target(self) -> int:
        return self.item["target"]

    @property
    def n_options(self) -> int:
        return self.item["n_options"]

    @property
    def is_proficiency(self) -> bool:
        return self.item["role"] == "proficiency"

    @property
    def e_pos(self) -> float | None:
        return self.scores[self.target]

    @property
    def e_neg(self) -> list[float | None]:
        return [s for j, s in enumerate(self.scores) if j != self.target]

    def correct(self, tie_policy: str = "strict") -> bool:
        """Whether the item counts as right in group scores."""
        if self.unanswered or (self.errors and self.kind != "choice"):
            return False
        if self.kind == "similarity":
            return rank_outcome(self.scores, self.target, tie_policy)[0]
        if self.kind == "entailment":  # StrictVLE
            return (self.e_pos is not None and self.e_pos > 0.5
                    and all(x is not None and x < 0.5 for x in self.e_neg))
        return bool(self.trials) and all(t.correct for t in self.trials)

    def tie(self) -> bool:
        return self.kind == "similarity" and not self.errors and not self.unanswered and \
            rank_outcome(self.scores, self.target)[1]

    def chance(self) -> float:
        if self.kind == "similarity":
            return 1 / self.n_options
        if self.kind == "entailment":
            return 0.5 ** self.n_options
        if self.kind == "generation":
            return 0.0
        return (1 / self.n_options) ** max(1, len(self.trials))

    def comparisons(self) -> list[tuple[str, list[str]]]:
        """Similarity: the target's score key must beat every other option's key."""
        return [(self.keys[self.target], [k for j, k in enumerate(self.keys) if j != self.target])]


def entailment_value(answer: Answer) -> tuple[float | None, str]:
    """e = p(Yes) / (p(Yes) + p(No)) when probabilities are known, else 1 or 0 from the
    greedy answer (closed models), else None (a parse failure)."""
    probs = answer.probs or {}
    yes, no = probs.get("yes"), probs.get("no")
    if yes is not None and no is not None and yes + no > 0:
        return yes / (yes + no), "ok"
    parsed = parse_yes_no(answer.raw)
    if not parsed.ok:
        return None, parsed.status
    return (1.0 if parsed.value == "yes" else 0.0), "ok"


def parse_answer(request: dict[str, Any], answer: Answer) -> Parsed | None:
    """The parser's reading of a stored answer (None for similarity scores). For choice, a
    judge model's reading is used when the raw answer itself does not parse."""
    if request["kind"] == "entailment":
        return parse_yes_no(answer.raw)
    if request["kind"] != "choice":
        return None
    parsed = parse_choice(answer.raw, request["labels"], request["option_texts"])
    judged = (answer.meta.get("judge") or {}).get("raw")
    if not parsed.ok and judged:
        reread = parse_choice(judged, request["labels"])
        parsed = reread if reread.ok else parsed
    return parsed


def build_outcome(records: Sequence[dict[str, Any]]) -> ItemOutcome:
    """Outcome of one item from its stored records (the last record per request id wins)."""
    latest = {r["id"]: r for r in records}
    first = next(iter(latest.values()))
    item, kind = first["item"], first["request"]["kind"]
    out = ItemOutcome(item=item, kind=kind)
    expected = first["expected"]
    out.unanswered = max(0, expected - len(latest))
    if kind in ("similarity", "entailment"):
        out.scores = [None] * item["n_options"]
        out.keys = [f"missing:{item['id']}:{j}" for j in range(item["n_options"])]
    for record in latest.values():
        request, answer = record["request"], Answer.from_json(record["answer"])
        out.degenerate = out.degenerate or bool(record.get("frames", {}).get("degenerate"))
        if answer.error:
            out.errors.append(answer.error)
        if kind == "generation":
            out.generated = None if answer.error else answer.raw
        elif kind in ("similarity", "entailment"):
            j = request["option"]
            out.keys[j] = request["key"]
            if answer.error:
                continue
            if kind == "similarity":
                out.scores[j] = answer.score
            else:
                out.scores[j], status = entailment_value(answer)
                out.parse_failures += status != "ok"
        else:
            order = request["order"]
            if answer.error:
                out.trials.append(Trial(request["position"], None, False, "error"))
                continue
            parsed = parse_answer(request, answer)
            chosen = order[request["labels"].index(parsed.value)] if parsed.ok else None
            out.parse_failures += not parsed.ok
            out.trials.append(Trial(request["position"], chosen, chosen == item["target"], parsed.status))
    out.trials.sort(key=lambda t: t.position)
    return out

