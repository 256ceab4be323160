"""Answer items in memory, without a run directory: for notebooks, tests, and for reading
off the chance level of every metric from the structure of a benchmark's items."""
from __future__ import annotations

from typing import Sequence

from ..core.items import Item
from ..models.base import Model
from ..models.checks import check_reply
from .answering import checked
from ..protocols import PlanContext, Prompts, get_protocol
from .plan import by_content
from .records import records_for
from ..video.sampling import Sampling


def answer_offline(items: Sequence[Item], protocol: str, model: Model, *, prompts: Prompts = Prompts(),
                   sampling: Sampling = Sampling(frames=8), order_policy: str = "balanced", seed: int = 0,
                   frames=None) -> list[dict]:
    """The records a run would store: planned, deduplicated by content, answered in one batch."""
    chosen = get_protocol(protocol)
    context = PlanContext(prompts=prompts, sampling=sampling, order_policy=order_policy, seed=seed)
    by_key, requests = by_content(chosen.plan(items, context))
    keys = list(by_key)
    asked = [requests[k] for k in keys]
    answers = check_reply(model.answer(asked, frames), len(asked), f"{model.name}.answer")
    answers = [checked(model, request, answer) for request, answer in zip(asked, answers)]
    records = []
    for key, answer in zip(keys, answers):
        records += records_for(by_key[key], answer, {}, key, chosen)
    return records
