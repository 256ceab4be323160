"""The runs of one table compared in pairs, with the one paired test of ``timefoil.reports.pairing``."""
from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

from ..pairing import HEADLINE_ITEMS, Comparison, compare, rights
from ...protocols import Outcome
from ..report import ScoredRun


@dataclass(frozen=True)
class RunPair:
    first: ScoredRun
    second: ScoredRun
    comparison: Comparison

    def to_json(self) -> dict:
        return {"first_label": self.first.label, "second_label": self.second.label, **self.comparison.to_json()}


def pair(first: ScoredRun, second: ScoredRun, outcomes: dict[str, list[Outcome]], unit: str = HEADLINE_ITEMS,
         test: str | None = None) -> RunPair:
    a, b = (rights(outcomes[r.run_dir], unit, test) for r in (first, second))
    return RunPair(first, second, compare(first.run_dir, a, second.run_dir, b, unit))


def pairs(runs: list[ScoredRun], outcomes: dict[str, list[Outcome]], unit: str = HEADLINE_ITEMS) -> list[RunPair]:
    """Every pair of ``runs`` (one benchmark and protocol)."""
    return [pair(first, second, outcomes, unit) for first, second in combinations(runs, 2)]
