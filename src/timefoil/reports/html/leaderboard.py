"""Many runs of one benchmark and protocol as one sortable table: the headline and the figures
beside it, then the main tests, each with its interval and its mark against chance. Where two runs' intervals
overlap, a cell's tooltip gives the paired test between them on that column's items."""
from __future__ import annotations

from html import escape

from ...protocols import Outcome
from ..headline import ABOVE, BELOW, headline, mark_of
from ..report import ScoredRun, format_difference, format_p, split_name
from ...measures.stats import MetricValue, unread_of, unread_words
from .compare import pair
from .tables import PaperTable


def _columns(table: PaperTable) -> list[tuple[str, str | None]]:
    """(metric name, test or None): the headline figures, then each test's first table metric."""
    shown = list(dict.fromkeys(name for run, _ in table.rows for name in headline(run.report)))
    first_metric = table.columns[0][1] if table.columns else None
    tests = [section for section, metric in table.columns
             if metric == first_metric and section != "overall" and not section.startswith("category:")]
    return [(name, None) for name in shown] + [(f"{t}/{first_metric}", t) for t in tests]


def _overlap(a: MetricValue, b: MetricValue) -> bool:
    return bool(a.ci95 and b.ci95 and a.ci95[0] <= b.ci95[1] and b.ci95[0] <= a.ci95[1])


def _cell(run: ScoredRun, metric: MetricValue | None, test: str | None, others: list[tuple[ScoredRun, dict]],
          name: str, outcomes: dict[str, list[Outcome]]) -> str:
    if metric is None or metric.value is None:
        return '<td class="empty" data-value="">–</td>'
    if unread_of(metric):  # no score: sorted with the empty cells
        return f'<td class="unread" data-value="">{escape(unread_words(unread_of(metric)))}</td>'
    tip = [f"95% CI [{metric.ci95[0]:.1f}, {metric.ci95[1]:.1f}]" if metric.ci95 else "",
           f"chance {metric.chance:.1f}" if metric.chance is not None else "",
           f"p {format_p(metric.p_value)} against " + ("no bias" if metric.extra.get("difference") else "chance")
           if metric.p_value is not None else ""]
    for other, metrics in others:
        theirs = metrics.get(name)
        if theirs is not None and theirs.value is not None and _overlap(metric, theirs):
            c = pair(run, other, outcomes, test=test).comparison
            where = f"the {c.unit} of {test}" if test else f"the {c.unit}"
            tip.append(f"overlaps {other.label}: {format_difference(c.difference)} points for {other.label}, "
                       f"paired p {format_p(c.p_value)} over {c.n} of {where}")
    mark = mark_of(metric)
    cls = "sig" if mark == ABOVE else "below" if mark == BELOW else ""
    ci = f'<span class="ci">[{metric.ci95[0]:.1f}, {metric.ci95[1]:.1f}]</span>' if metric.ci95 else ""
    return (f'<td class="{cls}" data-value="{metric.value!r}" title="{escape(chr(10).join(t for t in tip if t))}">'
            f'<span class="v">{metric.value:.1f}</span> {ci}</td>')


def leaderboard_html(table: PaperTable, outcomes: dict[str, list[Outcome]]) -> str:
    columns = _columns(table)
    head = "".join(f'<th class="sort" title="sort by {escape(name)}">'
                   f'{escape(test or split_name(name)[1])}</th>' for name, test in columns)
    rows = []
    for run, metrics in table.rows:
        others = [(o, m) for o, m in table.rows if o is not run]
        cells = "".join(_cell(run, metrics.get(name), test, others, name, outcomes) for name, test in columns)
        rows.append(f'<tr data-run="{escape(run.run_dir)}"><th data-value="{escape(run.label)}">'
                    f'{escape(run.label)}</th>{cells}</tr>')
    return (f'<section class="leaderboard" data-benchmark="{escape(table.benchmark)}" '
            f'data-protocol="{escape(table.protocol)}"><h3>{escape(table.title)}</h3><div class="scroll">'
            f'<table class="sortable"><thead><tr><th class="sort">run</th>{head}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table></div></section>')
