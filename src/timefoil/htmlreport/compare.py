"""Paired comparison of runs on the same items: McNemar's exact test."""
from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

from ..report import ScoredRun
from ..stats import mcnemar_exact


@dataclass
class Comparison:
    first: ScoredRun
    second: ScoredRun
    n: int  # items both runs answered
    first_right: int
    second_right: int
    only_first: int  # b: right in the first run only
    only_second: int  # c: right in the second run only
    p_value: float

    @property
    def difference(self) -> float:
        return 100 * (self.second_right - self.first_right) / self.n if self.n else 0.0


def compare(first: ScoredRun, second: ScoredRun, outcomes: dict[str, dict[str, bool]]) -> Comparison:
    a, b = outcomes[first.run_dir], outcomes[second.run_dir]
    shared = sorted(set(a) & set(b))
    only_first = sum(a[i] and not b[i] for i in shared)
    only_second = sum(b[i] and not a[i] for i in shared)
    return Comparison(first, second, len(shared), sum(a[i] for i in shared), sum(b[i] for i in shared),
                      only_first, only_second, mcnemar_exact(only_first, only_second))


def comparisons(runs: list[ScoredRun], outcomes: dict[str, dict[str, bool]]) -> list[Comparison]:
    """Every pair of runs of the same benchmark and protocol."""
    out = []
    for first, second in combinations(runs, 2):
        if (first.report.benchmark, first.report.protocol) == (second.report.benchmark, second.report.protocol):
            out.append(compare(first, second, outcomes))
    return out
