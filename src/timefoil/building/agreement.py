"""Agreement between annotators: Fleiss' kappa and Krippendorff's alpha (nominal), with
bootstrap intervals over items.

``ratings`` is one list per item of the labels its annotators gave (any hashable; missing
answers are simply absent, so items may have different numbers of ratings).
"""
from __future__ import annotations

import random
from collections import Counter
from typing import Callable, Hashable, Sequence

Ratings = Sequence[Sequence[Hashable]]


def fleiss_kappa(ratings: Ratings) -> float | None:
    """Fleiss' kappa over the items with two or more ratings (per-item agreement with each
    item's own number of raters); None when undefined (no such item, or one category only)."""
    rated = [Counter(r) for r in ratings if len(r) >= 2]
    if not rated:
        return None
    agreement = [(sum(c * c for c in counts.values()) - sum(counts.values()))
                 / (sum(counts.values()) * (sum(counts.values()) - 1)) for counts in rated]
    totals: Counter = Counter()
    for counts in rated:
        totals.update(counts)
    n = sum(totals.values())
    expected = sum((c / n) ** 2 for c in totals.values())
    if expected >= 1:
        return None
    return (sum(agreement) / len(agreement) - expected) / (1 - expected)


def krippendorff_alpha(ratings: Ratings) -> float | None:
    """Krippendorff's alpha for nominal data from the coincidence matrix (units with two or more
    values); None when undefined (fewer than two values, or a single category)."""
    coincidences: Counter = Counter()
    for unit in ratings:
        m = len(unit)
        if m < 2:
            continue
        counts = Counter(unit)
        for c, nc in counts.items():
            for k, nk in counts.items():
                coincidences[(c, k)] += (nc * (nk - (c == k))) / (m - 1)
    marginals: Counter = Counter()
    for (c, _), value in coincidences.items():
        marginals[c] += value
    n = sum(marginals.values())
    if n <= 1:
        return None
    observed = sum(v for (c, k), v in coincidences.items() if c != k)
    expected = sum(marginals[c] * marginals[k] for c in marginals for k in marginals if c != k)
    if expected == 0:
        return None
    return 1 - (n - 1) * observed / expected


def bootstrap_interval(statistic: Callable[[Ratings], float | None], ratings: Ratings, draws: int = 1000,
                       seed: int = 0, level: float = 0.95) -> tuple[float, float] | None:
    """Percentile interval of ``statistic`` over items resampled with replacement (seeded)."""
    rng = random.Random(seed)
    values = []
    for _ in range(draws):
        sample = [ratings[rng.randrange(len(ratings))] for _ in ratings]
        value = statistic(sample)
        if value is not None:
            values.append(value)
    if len(values) < draws / 2:  # undefined in most resamples: no honest interval
        return None
    values.sort()
    low = values[int((1 - level) / 2 * (len(values) - 1))]
    high = values[int((1 + level) / 2 * (len(values) - 1))]
    return low, high


def summary(ratings: Ratings, draws: int = 1000, seed: int = 0) -> dict:
    """Both coefficients with 95% bootstrap intervals, and the counts behind them."""
    out: dict = {"items": len(ratings), "ratings": sum(len(r) for r in ratings)}
    for name, statistic in (("fleiss_kappa", fleiss_kappa), ("krippendorff_alpha", krippendorff_alpha)):
        value = statistic(ratings)
        interval = bootstrap_interval(statistic, ratings, draws, seed) if value is not None and ratings else None
        out[name] = {"value": None if value is None else round(value, 4),
                     "ci95": None if interval is None else [round(interval[0], 4), round(interval[1], 4)]}
    return out
