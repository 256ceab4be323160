"""retrieval: video-to-text retrieval over all the texts of a test (VITATECS, Table 7). Each
item's video ranks every caption and counterfactual of its test; recall@k counts the item's
caption in the top k, its counterfactual(s), and "All", the mean of those two rows (the
paper's third row). Close recalls for captions
and counterfactuals mean the model finds the video's texts by what they share (objects,
scene), not by the temporal detail that tells them apart."""
from __future__ import annotations

from collections import OrderedDict, defaultdict
from dataclasses import dataclass, field
from typing import Any, Sequence

from ..measures import metrics as M
from ..core.items import Item
from ..models.requests import Answer, Request
from ..measures.chance import Event, event_proportion
from ..measures.stats import MetricValue
from .base import Outcome, PlanContext, PlannedRequest, Protocol

KS = (1, 5, 10)
ROLES = ("caption", "counterfactual")
BOTH = "All"  # the mean of the caption and counterfactual rows


@dataclass
class RankOutcome(Outcome):
    ranks: dict[str, int | None] = field(default_factory=dict)  # "caption" / "counterfactual" -> best rank
    candidates: int = 0
    key: str = ""  # the rank request's key: duplicated rows ask one request

    def hit(self, role: str, k: int) -> bool:
        rank = self.ranks.get(role)
        return rank is not None and rank <= k

    def events(self, k: int) -> dict[str, Event]:
        return M.recall_events(self.key or ("rank", self.item["id"]), max(self.candidates, self.n_options),
                               self.n_options - 1, k)

    def correct(self, tie_policy: str = "strict") -> bool:
        return self.hit("caption", 1)

    def event(self) -> Event:
        return self.events(1)["caption"]


class Retrieval(Protocol):
    name = "retrieval"
    kind = "rank"
    accepts = frozenset({"texts"})  # a pool of every text of a test: one video, text options
    description = "video-to-text retrieval over every text of the test: recall@1/5/10"
    metrics = {"R@k caption / counterfactual": "the item's caption, or its counterfactual, ranked in the top k "
                                               "of all texts of its test",
               "R@k All": "the mean of the caption and counterfactual rows (VITATECS Table 7)"}

    def plan(self, items: Sequence[Item], context: PlanContext) -> list[tuple[Item, PlannedRequest]]:
        """One pool of candidate texts per test, shared by every request of that test."""
        self.check(items)
        pools: dict[str, list[str]] = defaultdict(list)
        for item in items:
            pools[item.test].extend(item.texts)
        pools = {test: tuple(OrderedDict.fromkeys(texts)) for test, texts in pools.items()}
        return [(item, planned) for item in items for planned in self.ask(item, context, pools[item.test])]

    def plan_item(self, item: Item, context: PlanContext) -> list[PlannedRequest]:
        return self.ask(item, context, tuple(OrderedDict.fromkeys(item.texts)))

    def ask(self, item: Item, context: PlanContext, pool: tuple[str, ...]) -> list[PlannedRequest]:
        if item.options_are != "texts":
            raise ValueError(f"item {item.id}: retrieval ranks texts for a video; this item's options are videos")
        index = {text: i for i, text in enumerate(pool)}
        asked = tuple(index[t] for t in item.texts)
        roles = ["caption" if j == item.target else "counterfactual" for j in range(len(item.texts))]
        request = Request(self.kind, context.video(item.videos[0]), "", context.shown_sampling, option_texts=pool,
                          ask=asked)
        return [PlannedRequest(f"{item.id}|rank", request, {"roles": roles}, 1)]

    def new_outcome(self, item: dict[str, Any]) -> RankOutcome:
        return RankOutcome(item)

    def take(self, outcome: RankOutcome, request: dict[str, Any], answer: Answer, verdict: dict | None) -> None:
        outcome.candidates = (request.get("candidates") or {}).get("n") or len(request["option_texts"])
        outcome.key = request.get("key", "")
        if answer.error:
            return
        for role, rank in zip(request["roles"], answer.meta.get("ranks") or []):
            best = outcome.ranks.get(role)
            outcome.ranks[role] = rank if best is None or (rank is not None and rank < best) else best

    def item_metrics(self, outcomes: Sequence[RankOutcome], tie_policy: str) -> list[MetricValue]:
        result = []
        for role in (*ROLES, BOTH):
            for k in KS:
                roles = ROLES if role == BOTH else (role,)  # "All": each item's two hits, one unit each
                units = [(o.hit(r, k), o.events(k)[r]) for o in outcomes for r in roles]
                result.append(event_proportion(f"R@{k} {role}", [h for h, _ in units], [e for _, e in units], k=k,
                                               **({"mean of": ", ".join(ROLES)} if role == BOTH else {})))
        return result


PROTOCOL = Retrieval()
