"""Splitting a plan by video: every request of one video lands in one shard (or on one worker),
so its frames are decoded once and a model can reuse them; shards are balanced by estimated
cost (frames shown, summed over the video's requests).

The assignment depends only on the plan (request contents, never paths or timing), so every
process of a Slurm array computes the same shards without talking to the others."""
from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from ..core.hashing import stable_hash
from ..core.items import Item, VideoRef
from ..models.requests import Request
from ..protocols import PlannedRequest
from ..video.frames import content_key
from ..video.sampling import DEFAULT_MAX_FRAMES


@dataclass(frozen=True)
class Shard:
    index: int  # 1 .. count
    count: int

    def __post_init__(self) -> None:
        if self.count < 1 or not 1 <= self.index <= self.count:
            raise ValueError(f"a shard is I/N with 1 <= I <= N, got {self.index}/{self.count}")

    @staticmethod
    def parse(text: str) -> "Shard":
        index, sep, count = text.partition("/")
        try:
            return Shard(int(index), int(count))
        except ValueError:
            if not sep or not index.strip().isdigit() or not count.strip().isdigit():
                raise ValueError(f"a shard is written I/N (e.g. 2/8), got {text!r}") from None
            raise

    @property
    def label(self) -> str:
        return f"{self.index}/{self.count}"

    def to_json(self) -> dict[str, int]:
        return {"index": self.index, "count": self.count}

    @staticmethod
    def from_json(data: dict[str, Any] | None) -> "Shard | None":
        return Shard(int(data["index"]), int(data["count"])) if data else None


class VideoUnits:
    """The unit of placement of each request: its video's content (a blind request is a unit
    of its own). One instance memoises the content of each reference it has seen."""

    def __init__(self) -> None:
        self._seen: dict[VideoRef, str] = {}

    def __call__(self, request: Request) -> str:
        if request.video is None:
            return "blind:" + request.key()
        unit = self._seen.get(request.video)
        if unit is None:
            unit = self._seen[request.video] = "video:" + stable_hash(content_key(request.video), 32)
        return unit


def request_cost(request: Request) -> int:
    """Frames shown (an upper bound for an fps sampling); a text-only request costs 1."""
    if request.video is None or request.sampling is None:
        return 1
    sampling = request.sampling
    # an uncapped fps sampling's count depends on the clip: the default cap stands in for it
    return 1 if sampling.single_frame else (sampling.frames or sampling.max_frames or DEFAULT_MAX_FRAMES)


def unit_costs(requests: Iterable[Request], units: VideoUnits | None = None) -> dict[str, int]:
    """Cost per unit over distinct requests (a request shared by two items is asked once)."""
    units = units or VideoUnits()
    costs: dict[str, int] = {}
    seen: set[Request] = set()  # equal fields, equal request: no content hash needed to count it once
    for request in requests:
        if request in seen:
            continue
        seen.add(request)
        unit = units(request)
        costs[unit] = costs.get(unit, 0) + request_cost(request)
    return costs


def assign(costs: dict[str, int], count: int) -> dict[str, int]:
    """Unit -> shard (1 .. count): the costliest unit first, each to the least loaded shard
    (ties: the lower index); units of equal cost in the order of their keys. Deterministic."""
    if count < 1:
        raise ValueError("at least one shard")
    # shards beyond the number of units would stay empty: never hold a load for them
    loads = [(0, index) for index in range(1, min(count, len(costs)) + 1)]
    out: dict[str, int] = {}
    for unit in sorted(costs, key=lambda u: (-costs[u], u)):
        load, index = heapq.heappop(loads)
        out[unit] = index
        heapq.heappush(loads, (load + costs[unit], index))
    return out


def plan_digest(ids: Iterable[str]) -> str:
    """Identity of a whole plan: its request ids in sorted order."""
    return stable_hash(sorted(ids), 32)


# The parts of a plan's contents, as merge names them when two shards differ in one.
PLAN_PARTS = {"items": "the items as loaded", "prompts": "the prompts asked",
              "videos": "the videos' contents", "requests": "the requests (sampling, options, answer budget)"}


def _as_loaded(item: Item) -> dict:
    return {**item.describe(), "prompt": item.prompt, "target_position": item.target_position,
            "labels": list(item.labels), "joined": item.joined_video.to_json() if item.joined_video else None}


def plan_contents(planned: Sequence[tuple[Item, PlannedRequest]], protocol: str | None,
                  fingerprint: str | None) -> dict[str, str]:
    """Digests of everything the whole plan asks, part by part (``PLAN_PARTS``), and one of it
    all with the protocol and the model's fingerprint. Request ids name the questions, not their
    wording: shards with the same ids may still ask in other words (another timefoil, an edited
    annotation file), and only these digests tell."""
    items = {item.id: item for item, _ in planned}
    asked = sorted((p for _, p in planned), key=lambda p: p.id)
    parts = {
        "items": stable_hash([_as_loaded(items[i]) for i in sorted(items)], 32),
        "prompts": stable_hash([[p.id, p.request.system, p.request.text] for p in asked], 32),
        "videos": stable_hash([[p.id, content_key(p.request.video) if p.request.video else None] for p in asked], 32),
        "requests": stable_hash([[p.id, p.request.key(), p.info, p.expected] for p in asked], 32),
    }
    return {"digest": stable_hash([protocol, fingerprint, parts], 32), **parts}


def video_batches(keys: list[str], requests: dict[str, Request], batch_size: int,
                  units: VideoUnits | None = None, whole_videos: bool = False) -> list[list[list[str]]]:
    """Batches of at most ``batch_size`` request keys, in bundles that one worker answers in
    order: whole videos are packed into a batch while they fit; a video with more requests
    than a batch fills a bundle of its own (``whole_videos``: one batch of its own, for a model
    that chunks a video's prompts itself). A video is never split across bundles, so its
    frames are decoded once and a model can reuse them across its prompts. Keys keep their
    order within a video; videos keep the order of their first key."""
    units = units or VideoUnits()
    by_unit: dict[str, list[str]] = {}
    for key in keys:
        by_unit.setdefault(units(requests[key]), []).append(key)
    size = max(1, batch_size)
    bundles: list[list[list[str]]] = []
    packed: list[str] = []
    for unit_keys in by_unit.values():
        if packed and len(packed) + len(unit_keys) > size:
            bundles.append([packed])
            packed = []
        if len(unit_keys) > size:
            step = len(unit_keys) if whole_videos else size
            bundles.append([unit_keys[start:start + step] for start in range(0, len(unit_keys), step)])
        else:
            packed.extend(unit_keys)
    if packed:
        bundles.append([packed])
    return bundles
