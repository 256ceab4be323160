"""Chance from the distinct requests behind a metric: one routine for every protocol.

The random model answers each distinct request once, with one uniform draw u in [0, 1) per
request key: a similarity score is u, an entailment e is u (Yes above 1/2), a choice among n
letters names letter floor(u * n), and a ranking's hits are spans of u with their exact
probabilities. Items that ask the same (video, text) question see the same draw, as they see
the same answer from a real model.

What makes one unit of a metric right (an item, a group, a positive caption) is an ``Event``:
conditions that must all hold, ``Within(key, spans)`` (the draw falls in one of the spans) or
``Beats(winner, loser)`` (one draw above another). Units that share no key are independent.
Units that share one form a block whose joint distribution is enumerated exactly (sampled with
a fixed seed only where a block is too large to enumerate), so a shared positive caption is one
coin, not several: both a unit's chance and the metric's p-value come from these blocks.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Hashable, Sequence

import numpy as np

from .stats import MetricValue, proportion, successes_pmf

EXACT_ORDERINGS = 8  # keys whose orderings are enumerated (8! = 40,320)
EXACT_CELLS = 4096  # assignments of shared keys' cells enumerated
EXACT_EXTENSIONS = 16  # keys whose linear extensions one event counts exactly
DRAWS = 40_000  # the fixed-seed sample of a block too large for the exact routes


@dataclass(frozen=True)
class Within:
    """The draw of request ``key`` falls in one of ``spans`` ((low, high) within [0, 1))."""

    key: Hashable
    spans: tuple[tuple[float, float], ...]


@dataclass(frozen=True)
class Beats:
    """The draw of ``winner`` is above that of ``loser`` (a score ranked above another)."""

    winner: Hashable
    loser: Hashable


Condition = Within | Beats
Event = tuple[Condition, ...]
YES, NO = ((0.5, 1.0),), ((0.0, 0.5),)


def keys_of(event: Event) -> list[Hashable]:
    return [k for c in event for k in ((c.key,) if isinstance(c, Within) else (c.winner, c.loser))]


def probability(event: Event) -> float:
    """The chance that one event holds."""
    return float(_block_pmf(*_canonical([event]))[1])


def null_distribution(events: Sequence[Event]) -> tuple[list[float], np.ndarray, dict[str, int]]:
    """Each unit's chance, the distribution of the number of units right, and how units share:
    {"units sharing requests": m, "independent blocks": b} (empty when none share)."""
    blocks = _blocks(events)
    chances = [0.0] * len(events)
    shared, joint = [], []
    for block in blocks:
        if len(block) == 1:
            chances[block[0]] = probability(events[block[0]])
        else:
            shared.append(block)
            joint.append(_block_pmf(*_canonical([events[i] for i in block])))
            for i in block:
                chances[i] = probability(events[i])
    pmf = successes_pmf([chances[b[0]] for b in blocks if len(b) == 1])
    for block_pmf in joint:
        pmf = np.convolve(pmf, np.asarray(block_pmf))
    sharing = {"units sharing requests": sum(map(len, shared)), "independent blocks": len(blocks)} if shared else {}
    return chances, pmf, sharing


def event_proportion(name: str, outcomes: Sequence[bool], events: Sequence[Event], **extra) -> MetricValue:
    """Share of units right, with chance and p-value from the units' events (shared requests
    enumerated jointly). n stays the number of units the paper counts; the extra field
    "sharing" says how many of them share requests and into how many independent blocks."""
    chances, pmf, sharing = null_distribution(events)
    return proportion(name, outcomes, chances, null=pmf, **({"sharing": sharing} if sharing else {}), **extra)


def _blocks(events: Sequence[Event]) -> list[list[int]]:
    """Units joined by a shared key (union-find), each block in the units' order."""
    parent = list(range(len(events)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[Hashable, int] = {}
    for i, event in enumerate(events):
        for key in keys_of(event):
            if key in owner:
                parent[root(i)] = root(owner[key])
            else:
                owner[key] = i
    blocks: dict[int, list[int]] = {}
    for i in range(len(events)):
        blocks.setdefault(root(i), []).append(i)
    return list(blocks.values())


def _canonical(events: Sequence[Event]) -> tuple[tuple, int]:
    """The block with its keys renamed 0, 1, ... in order of appearance, so blocks of the same
    shape (every ViLMA group, every Vinoground pair) are computed once."""
    names: dict[Hashable, int] = {}

    def index(key: Hashable) -> int:
        return names.setdefault(key, len(names))

    out = []
    for event in events:
        out.append(tuple(("in", index(c.key), tuple(c.spans)) if isinstance(c, Within)
                         else ("beats", index(c.winner), index(c.loser)) for c in event))
    return tuple(out), len(names)


@lru_cache(maxsize=8192)
def _block_pmf(events: tuple, n_keys: int) -> tuple[float, ...]:
    """P(exactly j of the block's events hold), j = 0..len(events)."""
    kinds = {c[0] for event in events for c in event}
    if "beats" not in kinds:
        pmf = _within_pmf(events, n_keys)
    elif "in" not in kinds and n_keys <= EXACT_ORDERINGS:
        pmf = _orderings_pmf(events, n_keys)
    elif "in" not in kinds and len(events) == 1 and n_keys <= EXACT_EXTENSIONS:
        p = _linear_extensions(events[0], n_keys) / math.factorial(n_keys)
        pmf = np.array([1 - p, p])
    else:
        pmf = _sampled_pmf(events, n_keys)
    return tuple(float(x) for x in pmf)


def _cells(events: tuple, key: int) -> list[tuple[float, float]]:
    cuts = {0.0, 1.0} | {x for e in events for c in e if c[0] == "in" and c[1] == key for s in c[2] for x in s
                         if 0.0 < x < 1.0}
    ordered = sorted(cuts)
    return list(zip(ordered, ordered[1:]))


def _holds(event: tuple, key: int, point: float) -> bool:
    """Whether every condition of ``event`` on ``key`` holds at ``point``."""
    return all(any(lo <= point < hi for lo, hi in c[2]) for c in event if c[0] == "in" and c[1] == key)


def _within_pmf(events: tuple, n_keys: int) -> np.ndarray:
    """Spans only: the keys are independent. Enumerate the cells of the keys that several events
    share; given those, the events depend on disjoint private keys and are independent."""
    uses = [sum(any(c[1] == k for c in e) for e in events) for k in range(n_keys)]
    shared = [k for k in range(n_keys) if uses[k] > 1]
    cells = {k: _cells(events, k) for k in range(n_keys)}
    if math.prod(len(cells[k]) for k in shared) > EXACT_CELLS:
        return _sampled_pmf(events, n_keys)
    private = [{k: sum(hi - lo for lo, hi in cells[k] if _holds(e, k, (lo + hi) / 2))
                for k in {c[1] for c in e} if uses[k] == 1} for e in events]
    pmf = np.zeros(len(events) + 1)
    for assignment in itertools.product(*(cells[k] for k in shared)):
        weight = math.prod(hi - lo for lo, hi in assignment)
        points = {k: (lo + hi) / 2 for k, (lo, hi) in zip(shared, assignment)}
        probs = [math.prod(own.values()) * all(_holds(e, k, points[k]) for k in points)
                 for e, own in zip(events, private)]
        pmf += weight * _poisson_binomial(probs)
    return pmf


@lru_cache(maxsize=EXACT_ORDERINGS + 1)
def _orderings(n_keys: int) -> np.ndarray:
    """Every ordering of n draws: row r gives each key's rank (all equally likely)."""
    return np.array(list(itertools.permutations(range(n_keys))), dtype=np.int8).reshape(-1, n_keys)


def _count_holding(events: tuple, draws: np.ndarray) -> np.ndarray:
    """For each row of draws (one value per key), how many events hold."""
    count = np.zeros(len(draws), dtype=np.int64)
    for event in events:
        ok = np.ones(len(draws), dtype=bool)
        for c in event:
            if c[0] == "beats":
                ok &= draws[:, c[1]] > draws[:, c[2]]
            else:
                ok &= np.logical_or.reduce([(draws[:, c[1]] >= lo) & (draws[:, c[1]] < hi) for lo, hi in c[2]]
                                           or [np.zeros(len(draws), dtype=bool)])
        count += ok
    return count


def _orderings_pmf(events: tuple, n_keys: int) -> np.ndarray:
    ranks = _orderings(n_keys)
    return np.bincount(_count_holding(events, ranks), minlength=len(events) + 1) / len(ranks)


def _linear_extensions(event: tuple, n_keys: int) -> int:
    """Orderings (lowest first) in which every winner comes after its losers: a key may be
    placed once all the keys it must beat are placed."""
    below = [0] * n_keys
    for _, winner, loser in event:
        below[winner] |= 1 << loser
    ways = [0] * (1 << n_keys)
    ways[0] = 1
    for placed in range(1 << n_keys):
        if ways[placed]:
            for key in range(n_keys):
                if not placed >> key & 1 and below[key] & placed == below[key]:
                    ways[placed | 1 << key] += ways[placed]
    return ways[-1]


def _sampled_pmf(events: tuple, n_keys: int) -> np.ndarray:
    draws = np.random.default_rng(0).random((DRAWS, n_keys))
    return np.bincount(_count_holding(events, draws), minlength=len(events) + 1) / DRAWS


def _poisson_binomial(probs: Sequence[float]) -> np.ndarray:
    pmf = np.array([1.0])
    for p in probs:
        pmf = np.convolve(pmf, [1 - p, p])
    return pmf
