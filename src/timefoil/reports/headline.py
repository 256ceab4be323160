"""What every view says of a run's numbers: which are its headline figures (scoring's rule,
``headline_names``) and which are marked above or below chance.

A mark needs p < 0.05 divided by the count of numbers tested together: the headline figures
among themselves, and the rest of the run's numbers among themselves (Bonferroni). A run's
table holds some 75 numbers tested against chance; at p < 0.05 each, a model answering at
random would be marked on about four of them, and a reader would take them for findings."""
from __future__ import annotations

from dataclasses import replace

from ..benchmarks import get_benchmark
from ..scoring import ScoreReport, SummarySpec, headline_names
from ..measures.stats import MetricValue, unread_of

ALPHA = 0.05
ABOVE, BELOW, BIASED = "above", "below", "biased"
# the rule in words, for the legends of every view
RULE = ("▲ (bold): above chance, ▼ (red): below, each at p < 0.05 divided by the count of numbers tested with it "
        "(a run's headline figures together, the rest of its numbers together)")


def headline(report: ScoreReport) -> list[str]:
    """The headline metric's full name, then the figures shown beside it; from the metrics the
    report holds now (a report read otherwise keeps the same names)."""
    try:
        spec = get_benchmark(report.benchmark).summary
    except ValueError:  # a benchmark this version does not declare: the protocol's own metrics
        spec = SummarySpec()
    return headline_names([m.name for m in report.metrics], report.protocol, spec)


def tested(metric: MetricValue) -> bool:
    """Whether the number is tested against chance: a metric whose answers are mostly unread is
    not (it is shown as unread), and does not count in the correction of the others."""
    return (metric.value is not None and metric.p_value is not None and metric.chance is not None
            and unread_of(metric) is None)


def marks(report: ScoreReport) -> dict[str, str]:
    """Metric name -> ABOVE or BELOW chance (BIASED for a difference, such as the choice bias,
    that differs from 0), for the numbers that pass the corrected threshold."""
    shown = set(headline(report))
    numbers = [m for m in report.metrics if tested(m)]
    found: dict[str, str] = {}
    for family in ([m for m in numbers if m.name in shown], [m for m in numbers if m.name not in shown]):
        bar = ALPHA / max(len(family), 1)
        for m in family:
            p_below = m.extra.get("p_below")
            if m.extra.get("difference"):
                if m.p_value < bar and m.value != m.chance:
                    found[m.name] = BIASED
            elif m.p_value < bar and m.value > m.chance:
                found[m.name] = ABOVE
            elif p_below is not None and p_below < bar and m.value < m.chance:
                found[m.name] = BELOW
    return found


def with_marks(report: ScoreReport) -> ScoreReport:
    """The report with each metric's mark in its extras ("mark": "" where none), so that a view
    given one metric marks it as every other view does."""
    found = marks(report)
    return replace(report, metrics=[replace(m, extra={**m.extra, "mark": found.get(m.name, "")})
                                    for m in report.metrics])


def mark_of(metric: MetricValue) -> str:
    """The metric's mark; one not marked by ``with_marks`` is judged alone (a family of one)."""
    if "mark" in metric.extra:
        return metric.extra["mark"]
    if unread_of(metric):
        return ""
    if metric.extra.get("difference"):
        return BIASED if metric.p_value is not None and metric.p_value < ALPHA else ""
    return ABOVE if metric.significant else BELOW if metric.below_chance else ""


def favours(metric: MetricValue) -> str:
    """A choice bias (acc_B - acc_A) in words: which letter the model prefers, where it does."""
    if mark_of(metric) != BIASED:
        return "no bias shown"
    return "favours A" if metric.value < 0 else "favours B"
