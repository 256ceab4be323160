"""entailment: one Yes/No question per option, e = p(Yes) / (p(Yes) + p(No)) where the first
token's probabilities agree with the answer's text, else 1 or 0 from what the text says.
StrictVLE: e > 0.5 for the true caption and e < 0.5 for every foil; ClassicVLE: the true
caption's e above the foil's."""
from __future__ import annotations

from typing import Any, Sequence

from ..measures import metrics as M
from ..measures.chance import Event
from ..measures.parsing import Parsed, conclusion, first_word_verdict, parse_yes_no
from ..models.requests import Answer, Request
from ..models.stops import cut
from ..measures.stats import MetricValue
from .base import PlanContext, count_unread
from .similarity import PerOption, ScoredOutcome


class EntailmentOutcome(ScoredOutcome):
    def correct(self, tie_policy: str = "strict") -> bool:  # StrictVLE
        if self.unanswered or self.errors:
            return False
        return (self.e_pos is not None and self.e_pos > 0.5
                and all(x is not None and x < 0.5 for x in self.e_neg))

    def tie(self) -> bool:
        return False

    def event(self) -> Event:  # StrictVLE: one Yes/No coin per distinct request
        return M.strict_event(*self.caption_keys)

    def scatter_point(self) -> tuple[float, float, bool] | None:
        if self.e_pos is None or not self.e_neg or None in self.e_neg:
            return None
        return self.e_pos, max(self.e_neg), self.correct()


def entailment_reading(answer: Answer, reasoning: bool = False) -> tuple[float | None, Parsed]:
    """e and the reading it comes from. The first token's probabilities give e only where that
    token is a Yes or No, the text concludes the same and e lies on that side of 0.5: a served
    model's "The video does not show this, so No." is No, whatever the first token's
    alternatives favour. Otherwise the text decides (e = 1 or 0), and a text that concludes
    nothing is a parse failure. A served reply whose Yes and No are exactly as likely (e = 0.5)
    says nothing through its probabilities: what it wrote is its answer ("Yes." is e = 1). A
    reasoned answer is read from its conclusion only. A local model read from its next-token
    distribution alone (``first_token`` in its meta) wrote no text to disagree with: its e is
    the distribution's."""
    probs = answer.probs or {}
    yes, no = probs.get("yes"), probs.get("no")
    if not reasoning and (answer.meta or {}).get("first_token") is not None and yes is not None and no is not None \
            and yes + no > 0:
        # a local model read through its next-token distribution wrote no text beyond that token:
        # what it means is the distribution (e as VELOCITI computes it from the logits)
        e = yes / (yes + no)
        return e, Parsed("yes" if e > 0.5 else "no", "ok", "logprobs")
    was_cut = cut(answer.meta)  # read only where the part received decides it
    if reasoning:
        concluded = conclusion(answer.raw, was_cut)
        said = Parsed(None, "cut") if was_cut and concluded is None else parse_yes_no(concluded)
    else:
        said = parse_yes_no(answer.raw, cut=was_cut)
    if not said.ok:
        return None, Parsed(None, said.status, "text")
    if not reasoning and yes is not None and no is not None and yes + no > 0:
        e = yes / (yes + no)
        if first_word_verdict(answer.raw) == said.value and e != 0.5 and (e > 0.5) == (said.value == "yes"):
            return e, Parsed(said.value, "ok", "logprobs")
    return (1.0 if said.value == "yes" else 0.0), Parsed(said.value, "ok", "text")


def rule_reading(outcome: ScoredOutcome, answer: Answer, reasoning: bool, value: float | None,
                 meant: Parsed) -> tuple[float | None, Parsed]:
    """e as the outcome's rule reads a written answer (1 or 0, None where it reads nothing),
    counted where it differs from the meant reading. An e read from the first token's
    probabilities (a local model, a served one with log-probabilities) is what a released
    open-model scorer reads too: it stands. So does a tie of those probabilities, which the
    meant reading settles by the text: the released scorer computes e from the probabilities
    alone and keeps 0.5, which is neither Yes (> 0.5) nor No (< 0.5)."""
    if meant.read_from == "logprobs":
        return value, meant
    probs = answer.probs or {}
    if not reasoning and probs.get("yes") is not None and probs.get("yes") == probs.get("no") and probs["yes"] > 0:
        outcome.read_differently += meant.value is not None
        return 0.5, Parsed("tie", "ok", "released")
    said = outcome.rule.verdict(conclusion(answer.raw) if reasoning else answer.raw)
    outcome.read_differently += said != meant.value
    outcome.unread |= said is None and outcome.rule.drops
    if said is None:
        return None, Parsed(None, "unparseable", "released")
    return (1.0 if said == "yes" else 0.0), Parsed(said, "ok", "released")


class Entailment(PerOption):
    name = kind = "entailment"
    reasons = True
    prompted = True
    description = "a Yes/No question per option: e = p(Yes) / (p(Yes) + p(No))"
    metrics = {"StrictVLE": "e(V,C+) > 0.5 and e(V,C-) < 0.5", "ClassicVLE": "e(V,C+) > e(V,C-)",
               "acc(pos)": "e(V,C+) > 0.5", "acc(neg|pos)": "negatives right among items whose positive was right"}

    def request(self, ref, caption: str, context: PlanContext) -> Request:
        return context.question(self.kind, context.prompts.entailment.format(caption=caption), ref,
                                labels=("Yes", "No"), caption=caption)

    def stored(self, context: PlanContext) -> dict[str, Any]:
        return context.reasoning

    def read(self, request: dict[str, Any], answer: Answer, verdict: dict | None = None) -> Parsed:
        return entailment_reading(answer, bool(request.get("reasoning")))[1]

    def new_outcome(self, item: dict[str, Any]) -> EntailmentOutcome:
        base = super().new_outcome(item)
        return EntailmentOutcome(item, scores=base.scores, keys=base.keys)

    def score(self, answer: Answer, outcome: ScoredOutcome, request: dict[str, Any]) -> float | None:
        value, parsed = entailment_reading(answer, bool(request.get("reasoning")))
        if outcome.rule is not None and outcome.rule.verdict is not None:
            value, parsed = rule_reading(outcome, answer, bool(request.get("reasoning")), value, parsed)
        if not parsed.ok:
            count_unread(outcome, answer)
        return value

    def item_metrics(self, outcomes: Sequence[EntailmentOutcome], tie_policy: str) -> list[MetricValue]:
        e_pos, e_neg = [o.e_pos for o in outcomes], [o.e_neg for o in outcomes]
        keys = [o.caption_keys for o in outcomes]
        return [M.strict_vle(e_pos, e_neg, keys), M.classic_vle(e_pos, e_neg, keys),
                M.positive_accuracy(e_pos, [pos for pos, _ in keys]),
                M.negative_accuracy_given_positive(e_pos, e_neg, keys)]


PROTOCOL = Entailment()
