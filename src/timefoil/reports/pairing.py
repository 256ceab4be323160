"""One paired comparison of two runs on the same items, McNemar's exact test on the items
right in one run only. Every output that compares runs (the ablation table, the HTML report,
its CSV and JSON) uses it, and each names its unit: the headline items (main items, as the
headline metrics count them; proficiency items left out) or all items."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from ..benchmarks import get_benchmark
from ..protocols import Outcome
from ..protocols.readings import MEANT
from ..execution.stored import load_run
from ..scoring import outcomes_from_records
from ..measures.stats import mcnemar_exact

HEADLINE_ITEMS = "headline items"
ALL_ITEMS = "all items"
UNITS = (HEADLINE_ITEMS, ALL_ITEMS)


def load_outcomes(run_dir: str, reading: str = MEANT) -> list[Outcome]:
    """The run's outcomes, read as ``reading`` says; items the released rule drops are left out."""
    meta, records = load_run(run_dir)
    rule = get_benchmark(meta["config"]["benchmark"]).released if reading != MEANT else None
    outcomes = outcomes_from_records(records, meta["config"]["protocol"], rule)
    return [o for o in outcomes if not o.unread or o.errors or o.unanswered]


def rights(outcomes: Iterable[Outcome], unit: str = HEADLINE_ITEMS, test: str | None = None) -> dict[str, bool]:
    """Item id -> right, over the unit's items (of one test, if given)."""
    if unit not in UNITS:
        raise ValueError(f"unknown unit {unit!r}; choose from {', '.join(UNITS)}")
    return {o.item["id"]: o.correct() for o in outcomes
            if (unit == ALL_ITEMS or not o.is_proficiency) and (test is None or o.item["test"] == test)}


@dataclass(frozen=True)
class Comparison:
    first: str  # the runs, as their callers name them (run directories)
    second: str
    unit: str
    n: int  # items both runs answered
    first_right: int
    second_right: int
    only_first: int  # right in the first run only
    only_second: int  # right in the second run only
    p_value: float  # McNemar's exact, two-sided

    @property
    def difference(self) -> float:
        """second - first, in points of items right."""
        return 100 * (self.second_right - self.first_right) / self.n if self.n else 0.0

    def to_json(self) -> dict:
        return {"first": self.first, "second": self.second, "unit": self.unit, "n": self.n,
                "first_right": self.first_right, "second_right": self.second_right, "only_first": self.only_first,
                "only_second": self.only_second, "difference": round(self.difference, 6), "p_value": self.p_value}


def compare(first: str, a: dict[str, bool], second: str, b: dict[str, bool], unit: str) -> Comparison:
    """``a`` and ``b`` from :func:`rights` with the same ``unit``."""
    shared = sorted(set(a) & set(b))
    only_first = sum(a[i] and not b[i] for i in shared)
    only_second = sum(b[i] and not a[i] for i in shared)
    return Comparison(first, second, unit, len(shared), sum(a[i] for i in shared), sum(b[i] for i in shared),
                      only_first, only_second, mcnemar_exact(only_first, only_second))
