"""entailment: one Yes/No question per option, e = p(Yes) / (p(Yes) + p(No)) (1 or 0 from
the greedy answer where probabilities are unknown). StrictVLE: e > 0.5 for the true caption
and e < 0.5 for every foil; ClassicVLE: the true caption's e above the foil's."""
from __future__ import annotations

from typing import Any, Sequence

from .. import metrics as M
from ..chance import Event
from ..parsing import Parsed, conclusion, parse_yes_no
from ..requests import Answer, Request
from ..stats import MetricValue
from .base import PlanContext
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


def entailment_value(answer: Answer, reasoning: bool = False) -> tuple[float | None, str]:
    """e and the parse status: probabilities when known, else the greedy Yes or No (a
    reasoned answer's concluding Yes or No)."""
    probs = answer.probs or {}
    yes, no = probs.get("yes"), probs.get("no")
    if yes is not None and no is not None and yes + no > 0 and not reasoning:
        return yes / (yes + no), "ok"
    parsed = parse_yes_no(conclusion(answer.raw) if reasoning else answer.raw)
    if not parsed.ok:
        return None, parsed.status
    return (1.0 if parsed.value == "yes" else 0.0), "ok"


class Entailment(PerOption):
    name = kind = "entailment"
    reasons = True
    description = "a Yes/No question per option: e = p(Yes) / (p(Yes) + p(No))"
    metrics = {"StrictVLE": "e(V,C+) > 0.5 and e(V,C-) < 0.5", "ClassicVLE": "e(V,C+) > e(V,C-)",
               "acc(pos)": "e(V,C+) > 0.5", "acc(neg|pos)": "negatives right among items whose positive was right"}

    def request(self, ref, caption: str, context: PlanContext) -> Request:
        return context.question(self.kind, context.prompts.entailment.format(caption=caption), ref,
                                labels=("Yes", "No"), caption=caption)

    def stored(self, context: PlanContext) -> dict[str, Any]:
        return context.reasoning

    def read(self, request: dict[str, Any], answer: Answer, verdict: dict | None = None) -> Parsed:
        return parse_yes_no(conclusion(answer.raw) if request.get("reasoning") else answer.raw)

    def new_outcome(self, item: dict[str, Any]) -> EntailmentOutcome:
        base = super().new_outcome(item)
        return EntailmentOutcome(item, scores=base.scores, keys=base.keys)

    def score(self, answer: Answer, outcome: ScoredOutcome, request: dict[str, Any]) -> float | None:
        value, status = entailment_value(answer, bool(request.get("reasoning")))
        outcome.parse_failures += status != "ok"
        return value

    def item_metrics(self, outcomes: Sequence[EntailmentOutcome], tie_policy: str) -> list[MetricValue]:
        e_pos, e_neg = [o.e_pos for o in outcomes], [o.e_neg for o in outcomes]
        keys = [o.caption_keys for o in outcomes]
        return [M.strict_vle(e_pos, e_neg, keys), M.classic_vle(e_pos, e_neg, keys),
                M.positive_accuracy(e_pos, [pos for pos, _ in keys]),
                M.negative_accuracy_given_positive(e_pos, e_neg, keys)]


PROTOCOL = Entailment()
