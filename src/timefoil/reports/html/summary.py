"""The report's first section: per benchmark and run, the headline number with its interval,
its chance (and the paper's, where that differs), the paper's rows for the same model, and a
one-line verdict; under it, a row each for the figures that stand beside it (a choice run's
accuracy, A∧B and bias)."""
from __future__ import annotations

from collections import OrderedDict
from html import escape

from ..pairing import HEADLINE_ITEMS, Comparison, compare, rights
from ...protocols import Outcome
from ..headline import ABOVE, BELOW, favours, headline, mark_of
from ..report import (ScoredRun, format_difference, format_p, nominal_chance, other_reading, quoted_rows,
                      paper_numbers, split_name)
from ...measures.stats import MetricValue, unread_of, unread_words

ORDER_ABLATIONS = ("shuffled", "reversed")


def _without_order(config: dict) -> str:
    sampling = {k: v for k, v in (config.get("sampling") or {}).items() if k not in ("order", "seed")}
    return repr(sorted({**config, "sampling": sampling}.items(), key=lambda kv: kv[0]))


def order_ablation(run: ScoredRun, runs: list[ScoredRun], configs: dict[str, dict],
                   outcomes: dict[str, list[Outcome]]) -> tuple[str, Comparison] | None:
    """The run with natural frame order paired with its shuffled (else reversed) twin, if present."""
    config = configs[run.run_dir]
    if config.get("blind") or (config.get("sampling") or {}).get("order", "natural") != "natural":
        return None
    for order in ORDER_ABLATIONS:
        for other in runs:
            other_config = configs[other.run_dir]
            if ((other_config.get("sampling") or {}).get("order") == order
                    and _without_order(other_config) == _without_order(config)):
                a, b = rights(outcomes[run.run_dir]), rights(outcomes[other.run_dir])
                return order, compare(run.run_dir, a, other.run_dir, b, HEADLINE_ITEMS)
    return None


def verdict(metric: MetricValue, ablation: tuple[str, Comparison] | None = None) -> str:
    counts = unread_of(metric)
    if counts:  # no verdict on chance for answers that were not read
        return f"unread: {counts[0]:,} of {counts[1]:,} answers could not be read; no score"
    if metric.extra.get("difference"):
        said = favours(metric)
    else:
        mark = mark_of(metric)
        said = "above chance" if mark == ABOVE else "below chance" if mark == BELOW else "at chance"
    if ablation is not None:
        order, c = ablation
        moved = "moved it" if c.p_value < 0.05 else "did not move it"
        said += (f"; {order} frames {moved} ({format_difference(c.difference)} points of {c.unit} right, "
                 f"paired p {format_p(c.p_value)})")
    return said


def _interval(metric: MetricValue) -> str:
    counts = unread_of(metric)
    if counts:
        return f'<span class="v unread">{escape(unread_words(counts))}</span>{other_html(metric)}'
    ci = f' <span class="ci">[{metric.ci95[0]:.1f}, {metric.ci95[1]:.1f}]</span>' if metric.ci95 else ""
    return f'<span class="v">{metric.value:.1f}</span>{ci}{other_html(metric)}'


def other_html(metric: MetricValue) -> str:
    """The other reading's number under a cell, where it differs, with its own n, chance and p."""
    other = other_reading(metric)
    if other is None:
        return ""
    name, alt = other
    shown = "–" if alt["value"] is None else f"{alt['value']:.1f}"
    detail = f"read as {name}: n={alt['n']}" + ("" if alt["chance"] is None else f", chance {alt['chance']:.1f}") \
        + ("" if alt["p_value"] is None else f", p={alt['p_value']:.3g}")
    return (f'<div class="other" title="{escape(detail)}">{escape(name)} {shown} '
            f'<span class="ci">n {alt["n"]}</span></div>')


def _row(run: ScoredRun, metric: MetricValue, first: bool, said: str) -> str:
    """A row of the summary: the run's headline (its label over the metric's name), or a figure beside it."""
    benchmark, protocol, name = run.report.benchmark, run.report.protocol, metric.name
    chance = "" if metric.chance is None else f"{metric.chance:.1f}"
    stated = nominal_chance(benchmark, protocol, name)
    if stated is not None and (metric.chance is None or abs(stated - metric.chance) >= 0.05):
        chance += f' <span class="paper-chance" title="the chance the paper states">paper {stated:.1f}</span>'
    paper = "; ".join(f"{escape(row.label)} {value:g} ({escape(row.cited)})"
                      for row, value in paper_numbers(benchmark, protocol, run.report.model, name))
    mark = mark_of(metric)
    cls = "sig" if mark == ABOVE else "below" if mark == BELOW else ""
    label, kind = (escape(run.label), "") if first else ("", ' class="beside"')
    return (f'<tr data-run="{escape(run.run_dir)}" data-metric="{escape(name)}"{kind}>'
            f'<th>{label}<div class="metric">{escape(split_name(name)[1])}</div></th>'
            f'<td class="{cls}">{_interval(metric)}</td><td>{chance}</td>'
            f'<td class="paper-rows">{paper or "–"}</td><td class="verdict">{escape(said)}</td></tr>')


def summary_html(runs: list[ScoredRun], configs: dict[str, dict], outcomes: dict[str, list[Outcome]]) -> str:
    grouped: OrderedDict[tuple[str, str], list[ScoredRun]] = OrderedDict()
    for run in runs:
        grouped.setdefault((run.report.benchmark, run.report.protocol), []).append(run)
    body = []
    for (benchmark, protocol), members in grouped.items():
        body.append(f'<tr class="group"><th colspan="5">{escape(benchmark)} · {escape(protocol)}</th></tr>')
        shown_names = []
        for run in members:
            metrics = {m.name: m for m in run.report.metrics}
            names = headline(run.report)
            shown = [metrics[name] for name in names if metrics[name].value is not None]
            if not shown or shown[0].name != names[0]:
                body.append(f'<tr data-run="{escape(run.run_dir)}"><th>{escape(run.label)}</th>'
                            f'<td colspan="4" class="empty">no scored items</td></tr>')
                continue
            shown_names += [m.name for m in shown]
            body.append(_row(run, shown[0], True, verdict(shown[0], order_ablation(run, runs, configs, outcomes))))
            body += [_row(run, metric, False, verdict(metric)) for metric in shown[1:]]
        for name in OrderedDict.fromkeys(shown_names):
            rows = [row for row in quoted_rows(benchmark, protocol, [name]) if name in row.values]
            if rows:
                listed = " · ".join(f"{escape(r.label)} {r.values[name]:.1f}" for r in rows)
                sources = ", ".join(OrderedDict.fromkeys(r.quoted_from for r in rows))
                body.append(f'<tr class="quoted"><td colspan="5">{escape(sources)}, '
                            f'{escape(split_name(name)[1])}: {listed}</td></tr>')
    return ('<div class="scroll"><table class="summary"><colgroup><col class="c-run"><col class="c-value">'
            '<col class="c-chance"><col class="c-paper"><col class="c-verdict"></colgroup><thead><tr>'
            '<th>run · headline metric</th><th>value [95% CI]</th><th>chance</th><th>published, same model</th>'
            f'<th>verdict</th></tr></thead><tbody>{"".join(body)}</tbody></table></div>')
