"""similarity: one request per option, score(video, text); the target must score highest.
Ties lose unless the tie policy says otherwise (ViLMA's script counts them right)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from ..measures import metrics as M
from ..measures.chance import Event
from ..core.items import Item
from ..models.requests import Answer, Request
from ..measures.stats import MetricValue
from .base import Outcome, PlanContext, PlannedRequest, Protocol, option_pairs


@dataclass
class ScoredOutcome(Outcome):
    """One score per option; ``keys`` name each score's request, so options that share a
    (video, text) pair share a score (the 2x2 matrix of a Vinoground pair)."""

    scores: list[float | None] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)

    @property
    def e_pos(self) -> float | None:
        return self.scores[self.target]

    @property
    def e_neg(self) -> list[float | None]:
        return [s for j, s in enumerate(self.scores) if j != self.target]

    def correct(self, tie_policy: str = "strict") -> bool:
        """Ties as ``tie_policy`` says, or as a released reading's scorer counts them."""
        if self.unanswered or self.errors:
            return False
        if self.rule is not None and self.rule.tie_policy:
            tie_policy = self.rule.tie_policy
        return M.rank_outcome(self.scores, self.target, tie_policy)[0]

    def tie(self) -> bool:
        return not self.errors and not self.unanswered and M.rank_outcome(self.scores, self.target)[1]

    def event(self) -> Event:
        """The target's request scores above every other option's."""
        return M.ranks_above(self.keys, self.target)

    @property
    def caption_keys(self) -> tuple[str, list[str]]:
        """(the target's request key, the other options')."""
        return self.keys[self.target], [k for j, k in enumerate(self.keys) if j != self.target]


class PerOption(Protocol):
    """Shared by similarity and entailment: one request per option, one score each."""

    def plan_item(self, item: Item, context: PlanContext) -> list[PlannedRequest]:
        return [PlannedRequest(f"{item.id}|opt{j}", self.request(ref, caption, context),
                               {"option": j, **self.stored(context)}, item.n_options)
                for j, ref, caption in option_pairs(item)]

    def stored(self, context: PlanContext) -> dict[str, Any]:
        """What the protocol keeps beside each request besides its option."""
        return {}

    def request(self, ref, caption: str, context: PlanContext) -> Request:
        return Request(self.kind, context.video(ref), caption, context.shown_sampling)

    def new_outcome(self, item: dict[str, Any]) -> ScoredOutcome:
        n = item["n_options"]
        return ScoredOutcome(item, scores=[None] * n, keys=[f"missing:{item['id']}:{j}" for j in range(n)])

    def take(self, outcome, request: dict[str, Any], answer: Answer, verdict: dict | None) -> None:
        j = request["option"]
        outcome.keys[j] = request["key"]
        if not answer.error:
            outcome.scores[j] = self.score(answer, outcome, request)

    def score(self, answer: Answer, outcome: ScoredOutcome, request: dict[str, Any]) -> float | None:
        return answer.score


class Similarity(PerOption):
    name = kind = "similarity"
    description = "score(video, text) per option; the target must score highest"
    metrics = {"accuracy": "pairwise ranking: the target above every other option (ties lose unless "
                           "--tie-policy ties-correct)"}

    def item_metrics(self, outcomes: Sequence[ScoredOutcome], tie_policy: str) -> list[MetricValue]:
        return [M.ranking_accuracy("accuracy", [o.scores for o in outcomes], [o.target for o in outcomes],
                                   tie_policy, keys=[o.keys for o in outcomes])]


PROTOCOL = Similarity()
