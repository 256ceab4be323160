"""Planning a run: its items and requests, with no model loaded.

``check``, sharding, ``merge`` and the runner all read the same plan; answering items in
memory (``offline``) shares its de-duplication.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Sequence

from ..benchmarks import Benchmark, get_benchmark
from ..core.bulk import no_cycle_passes
from ..core.items import Item
from ..core.options import typed_options
from ..models import check_model_spec
from ..models.requests import Request
from ..protocols import PlanContext, PlannedRequest, Prompts, Protocol, get_protocol
from .config import RunConfig, RunError, first_groups, sampled_groups
from .sharding import Shard, VideoUnits, assign, plan_digest, unit_costs

Planned = list[tuple[Item, PlannedRequest]]


@dataclass
class RunPlan:
    config: RunConfig  # resolved: protocol, sampling and order policy filled in
    benchmark: Benchmark
    protocol: Protocol
    prompts: Prompts
    items: list[Item]
    full: Planned  # every request of the configuration (all shards)
    part: Planned  # the requests answered here: the whole plan, or its shard
    shard: Shard | None = None

    def shard_facts(self) -> dict | None:
        """What ``merge`` needs to check that the shards make the whole plan, once."""
        if self.shard is None:
            return None
        return {**self.shard.to_json(), "planned": len(self.full),
                "plan_digest": plan_digest(p.id for _, p in self.full)}


def plan_run(config: RunConfig, shard: Shard | None = None, *, check_specs: bool = True) -> RunPlan:
    """Items and requests of ``config`` (or of its ``shard``). Everything a run refuses before a
    model loads is refused here: an unknown protocol or variant, a malformed model spec, a bad
    annotation, a shard beyond the plan's videos."""
    config = config.resolved()
    benchmark = get_benchmark(config.benchmark)
    protocol = get_protocol(config.protocol)
    if config.protocol not in benchmark.protocols:
        raise RunError(benchmark.refusal(config.protocol))
    prompts = benchmark.prompts_for(config.variant, config.protocol)
    for spec in ([config.model] if check_specs else []) + ([config.judge] if config.judge else []):
        check_model_spec(spec)
    options = typed_options(benchmark.load, config.benchmark_args, f"{benchmark.name} option")
    with no_cycle_passes():
        loaded = benchmark.load(config.data_dir or "", **options)
        items = first_groups(sampled_groups(loaded, config.sample, config.seed), config.limit)
        context = PlanContext(prompts=prompts, sampling=config.sampling, order_policy=config.order_policy,
                              seed=config.seed, blind=config.blind, max_tokens=config.max_tokens)
        full = protocol.plan(items, context)
    return RunPlan(config, benchmark, protocol, prompts, items, full, in_shard(full, shard), shard)


def in_shard(planned: Planned, shard: Shard | None) -> Planned:
    if shard is None:
        return planned
    units = VideoUnits()
    costs = unit_costs((p.request for _, p in planned), units)
    if shard.count > max(1, len(costs)):  # a shard beyond the videos would be empty
        raise RunError(f"--shard {shard.label}: the plan shows {len(costs)} videos, so it splits into "
                       f"at most {len(costs)} shards")
    placed = assign(costs, shard.count)
    return [(item, p) for item, p in planned if placed[units(p.request)] == shard.index]


def by_content(planned: Sequence[tuple[Item, PlannedRequest]], skip: set[str] = frozenset()
               ) -> tuple[dict[str, list[tuple[Item, PlannedRequest]]], dict[str, Request]]:
    """Requests de-duplicated by content: a (video, text) pair two items share is asked once.
    Returns each content key's askers and its request, in plan order (ids in ``skip`` left out)."""
    users: dict[str, list[tuple[Item, PlannedRequest]]] = defaultdict(list)
    requests: dict[str, Request] = {}
    for item, p in planned:
        if p.id not in skip:
            key = p.request.key()
            users[key].append((item, p))
            requests[key] = p.request
    return users, requests
