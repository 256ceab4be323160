"""Confidence intervals and tests against chance. Values are in percent."""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

Z95 = 1.959963984540054
# A metric whose answers are mostly unread (parse failures and stopped replies over more than
# this share of the answers behind it) is shown as "unread" with the count, never as a number
# alone: a model whose replies could not be read is not a model below chance.
UNREAD_SHARE = 0.5


@dataclass(frozen=True)
class MetricValue:
    """One reported number with everything needed to judge it."""

    name: str
    value: float | None  # percent (percentage points for differences); None when n = 0
    n: int
    chance: float | None
    ci95: tuple[float, float] | None
    p_value: float | None  # one-sided against chance (two-sided for differences)
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def significant(self) -> bool:
        """Significantly above chance (p < 0.05 and on the better side of it)."""
        return bool(self.p_value is not None and self.p_value < 0.05 and self.value is not None
                    and (self.chance is None or self.value > self.chance))

    @property
    def below_chance(self) -> bool:
        """Significantly below chance (one-sided lower tail p < 0.05): a model that prefers the
        wrong option, as the Vinoground paper marks."""
        p_below = self.extra.get("p_below")
        return bool(p_below is not None and p_below < 0.05 and self.value is not None and self.chance is not None
                    and self.value < self.chance)

    def to_json(self) -> dict[str, Any]:
        data = {"name": self.name, "value": _round(self.value), "n": self.n, "chance": _round(self.chance),
                "ci95": [_round(x) for x in self.ci95] if self.ci95 else None,
                "p_value": self.p_value, "significant": self.significant}
        data.update(self.extra)
        counts = unread_of(self)
        if counts:  # the number stays, with what it was read from
            data["unread"] = {"answers_unread": counts[0], "answers": counts[1]}
        return data


def unread_of(metric: MetricValue) -> tuple[int, int] | None:
    """(unread answers, answers) where more than UNREAD_SHARE of the metric's answers were not
    read (parse failures and stopped replies); None otherwise, or where the counts are not kept."""
    answers = metric.extra.get("answers") or 0
    unread = (metric.extra.get("parse_failures") or 0) + (metric.extra.get("stopped") or 0)
    return (unread, answers) if answers and unread > UNREAD_SHARE * answers else None


def unread_words(counts: tuple[int, int]) -> str:
    """What stands in a metric's place where its answers are mostly unread: "— (84 / 84 unread)"."""
    return f"— ({counts[0]:,} / {counts[1]:,} unread)"


def _round(x: float | None) -> float | None:
    return None if x is None else round(float(x), 6)


def wilson(successes: int, n: int) -> tuple[float, float]:
    if n == 0:
        return (0.0, 100.0)
    p = successes / n
    denom = 1 + Z95**2 / n
    centre = (p + Z95**2 / (2 * n)) / denom
    half = Z95 * math.sqrt(p * (1 - p) / n + Z95**2 / (4 * n * n)) / denom
    return (100 * max(0.0, centre - half), 100 * min(1.0, centre + half))


def _binomial_pmf(n: int, p: float) -> np.ndarray:
    k = np.arange(n + 1)
    if p <= 0 or p >= 1:
        pmf = np.zeros(n + 1)
        pmf[0 if p <= 0 else n] = 1.0
        return pmf
    logs = (np.vectorize(math.lgamma)(n + 1.0) - np.vectorize(math.lgamma)(k + 1.0)
            - np.vectorize(math.lgamma)(n - k + 1.0) + k * math.log(p) + (n - k) * math.log1p(-p))
    return np.exp(logs)


def successes_pmf(chances: Sequence[float]) -> np.ndarray:
    """The distribution of X, a sum of independent Bernoulli(chance_i) (exact): items with the
    same chance form a binomial; the distinct binomials are convolved."""
    pmf = np.array([1.0])
    for p, count in sorted(Counter(round(c, 12) for c in chances).items()):  # sorted: the same rounding
        # whatever the order of the records (a sharded or distributed run's log is in another order)
        pmf = np.convolve(pmf, _binomial_pmf(count, p))
    return pmf


def upper_tail(successes: int, chances: Sequence[float], null: np.ndarray | None = None) -> float:
    """P(X >= successes); ``null``: the distribution of X where the units are not independent."""
    pmf = successes_pmf(chances) if null is None else null
    return float(min(1.0, max(0.0, pmf[successes:].sum())))


def lower_tail(successes: int, chances: Sequence[float], null: np.ndarray | None = None) -> float:
    """P(X <= successes): how surprising a result this far BELOW chance is."""
    pmf = successes_pmf(chances) if null is None else null
    return float(min(1.0, max(0.0, pmf[:successes + 1].sum())))


def proportion(name: str, outcomes: Sequence[bool], chances: Sequence[float], null: np.ndarray | None = None,
               **extra: Any) -> MetricValue:
    """Share of successes, with per-unit chance levels (heterogeneous chance allowed). The units
    are independent unless ``null`` gives the distribution of the number of successes."""
    n = len(outcomes)
    if n == 0:
        return MetricValue(name, None, 0, None, None, None, extra)
    k = int(sum(bool(x) for x in outcomes))
    chance = 100 * math.fsum(chances) / n  # exact: independent of the order of the units
    pmf = successes_pmf(chances) if null is None else null
    return MetricValue(name, 100 * k / n, n, chance, wilson(k, n), upper_tail(k, chances, pmf),
                       {"p_below": lower_tail(k, chances, pmf), **extra})


def mean_of(name: str, parts: Sequence[MetricValue], **extra: Any) -> MetricValue:
    """Unweighted mean of independent metrics (e.g. the average over aspects or tests).
    Each part contributes the variance its own 95% interval implies (Wilson for proportions,
    so a part at 0 or 100% still has some), and the interval never collapses to a point while
    a part has width. Proportions are tested one-sided against chance with the binomial
    variance at chance; differences (bias) two-sided against 0."""
    parts = [p for p in parts if p.value is not None and p.n > 0]
    if not parts:
        return MetricValue(name, None, 0, None, None, None, extra)
    k = len(parts)
    value = sum(p.value for p in parts) / k
    chance = sum(p.chance or 0.0 for p in parts) / k
    difference = any(p.extra.get("difference") for p in parts)
    se = math.sqrt(sum(_standard_error(p) ** 2 for p in parts)) / k
    low, high = (-100.0, 100.0) if difference else (0.0, 100.0)
    ci = (max(low, value - Z95 * se), min(high, value + Z95 * se))
    below: dict[str, float] = {}
    if difference:
        p_value = math.erfc(abs(value - chance) / (se * math.sqrt(2))) if se > 0 else None
    else:
        var0 = sum((p.chance / 100) * (1 - p.chance / 100) / p.n for p in parts) / k**2
        z = ((value - chance) / 100) / math.sqrt(2 * var0) if var0 > 0 else None
        p_value = None if z is None else 0.5 * math.erfc(z)
        if z is not None:  # the lower tail too, so a headline average below chance is marked as such
            below = {"p_below": 0.5 * math.erfc(-z)}
    return MetricValue(name, value, sum(p.n for p in parts), chance, ci, p_value,
                       {"parts": len(parts), **below, **({"difference": True} if difference else {}), **extra})


def _standard_error(part: MetricValue) -> float:
    """In percentage points: from the part's 95% interval, else the binomial one."""
    if part.ci95 is not None:
        return (part.ci95[1] - part.ci95[0]) / (2 * Z95)
    share = part.value / 100
    return 100 * math.sqrt(share * (1 - share) / part.n)


def paired_difference(name: str, first: Sequence[bool], second: Sequence[bool], **extra: Any) -> MetricValue:
    """second - first in percentage points for paired outcomes (e.g. acc_B - acc_A).
    The p-value is McNemar's exact two-sided test on the discordant pairs; chance is 0."""
    n = len(first)
    if n == 0:
        return MetricValue(name, None, 0, 0.0, None, None, extra)
    d = np.array(second, float) - np.array(first, float)
    value = 100 * d.mean()
    sd = d.std(ddof=1) if n > 1 else 0.0
    half = 100 * Z95 * sd / math.sqrt(n)
    return MetricValue(name, value, n, 0.0, (value - half, value + half),
                       mcnemar_exact(int((d > 0).sum()), int((d < 0).sum())), {"difference": True, **extra})


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value from the two discordant counts."""
    n = b + c
    if n == 0:
        return 1.0
    tail = float(_binomial_pmf(n, 0.5)[: min(b, c) + 1].sum())
    return min(1.0, 2 * tail)
