"""generation: free text about the video (a dense caption), scored against the item's
reference texts with BLEU, ROUGE-L, CIDEr and sentence-embedding similarity."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from ..measures.caption_metrics import caption_metrics
from ..core.items import Item
from ..models.requests import Answer, Request
from ..measures.stats import MetricValue
from .base import Outcome, PlanContext, PlannedRequest, Protocol


@dataclass
class GenerationOutcome(Outcome):
    generated: str | None = None  # None where the request failed: scored as an empty caption


class Generation(Protocol):
    name = kind = "generation"
    prompted = True
    description = "free text about the video, scored against reference texts"
    metrics = {"BLEU-1..4 / ROUGE-L / CIDEr": "overlap with the reference captions (percent)",
               "embedding similarity": "all-MiniLM-L6-v2 cosine to the best reference (percent)"}
    accepts = frozenset({"references"})

    def plan_item(self, item: Item, context: PlanContext) -> list[PlannedRequest]:
        prompts = context.prompts
        request = Request(self.kind, context.video(item.videos[0]), item.prompt or prompts.generation,
                          context.shown_sampling, system=prompts.system,
                          max_tokens=context.max_tokens or prompts.max_tokens)
        return [PlannedRequest(f"{item.id}|gen", request, {"published": True} if item.prompt else {}, 1)]

    def new_outcome(self, item: dict[str, Any]) -> GenerationOutcome:
        return GenerationOutcome(item)

    def take(self, outcome: GenerationOutcome, request: dict[str, Any], answer: Answer, verdict: dict | None) -> None:
        outcome.generated = None if answer.error else answer.raw

    def item_metrics(self, outcomes: Sequence[GenerationOutcome], tie_policy: str) -> list[MetricValue]:
        return caption_metrics([o.generated for o in outcomes], [o.item["texts"] for o in outcomes])


PROTOCOL = Generation()
