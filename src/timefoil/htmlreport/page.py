"""One self-contained HTML file: styles, script, plots and thumbnails inline; nothing is
fetched when it is opened. Text from data or models is escaped on the way into HTML, and the
sample browser builds its DOM with textContent only."""
from __future__ import annotations

import json
import os
import time
from collections import OrderedDict
from html import escape

from ..paths import __version__
from ..report import ScoredRun, load_scored
from ..runner import load_run
from ..protocols import get_protocol
from ..scoring import outcomes_from_records
from ..stats import MetricValue
from ..video.sampling import Sampling
from .browser import OUTCOMES, Thumbnails, browser_items
from .compare import comparisons
from .svg import bar_plot, entailment_scatter, line_plot
from .tables import PaperTable, paper_tables

# Nothing may be fetched: images only from data: URLs, styles and the one script inline.
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'"
ASSET_DIR = os.path.join(os.path.dirname(__file__), "assets")


def _asset(name: str) -> str:
    with open(os.path.join(ASSET_DIR, name), encoding="utf-8") as handle:
        return handle.read()


def _cell(metric: MetricValue | None, run_dir: str, column: str) -> str:
    if metric is None or metric.value is None:
        return f'<td data-metric="{escape(column)}" class="empty">–</td>'
    ci = metric.ci95
    detail = (f"n={metric.n}, chance {metric.chance:.1f}" if metric.chance is not None else f"n={metric.n}")
    if ci:
        detail += f", 95% CI [{ci[0]:.1f}, {ci[1]:.1f}]"
    if metric.p_value is not None:
        detail += f", p={metric.p_value:.3g}"
    half = f'<span class="ci">±{(ci[1] - ci[0]) / 2:.1f}</span>' if ci else ""
    warn = (' <span class="warn" title="joined videos sampled with fewer than 3 frames">!</span>'
            if metric.extra.get("warning") else "")
    cls = "sig" if metric.significant else "below" if metric.below_chance else ""
    return (f'<td data-metric="{escape(column)}" class="{cls}" title="{escape(detail)}">'
            f'<span class="v">{metric.value:.1f}</span>{half}{warn}</td>')


def table_html(table: PaperTable) -> str:
    groups: OrderedDict[str, list[str]] = OrderedDict()
    for section, metric in table.columns:
        groups.setdefault(section, []).append(metric)
    head1 = "".join(f'<th colspan="{len(m)}">{escape(s)}</th>' for s, m in groups.items())
    head2 = "".join(f"<th>{escape(m)}</th>" for s, ms in groups.items() for m in ms)
    chance = "".join(f'<td data-metric="{escape("/".join(c))}">'
                     f'{"" if table.chance(c) is None else f"{table.chance(c):.1f}"}</td>' for c in table.columns)
    rows = [f'<tr class="chance"><th>chance</th>{chance}</tr>']
    for run, metrics in table.rows:
        cells = "".join(_cell(metrics.get("/".join(c)), run.run_dir, "/".join(c)) for c in table.columns)
        rows.append(f'<tr data-run="{escape(run.run_dir)}"><th>{escape(run.label)}</th>{cells}</tr>')
    for row in table.quoted:
        cells = "".join(f'<td data-metric="{escape("/".join(c))}">{table.quoted_value(row, c)}</td>'
                        for c in table.columns)
        rows.append(f'<tr class="quoted" title="quoted from the paper ({escape(row.source)}), not run here">'
                    f'<th>{escape(row.label)} <span class="paper">paper</span></th>{cells}</tr>')
    counts = "".join(f"<li>{escape(run.label)}: {run.report.items} items, {run.report.errors} with errors, "
                     f"{run.report.parse_failures} parse failures, {run.report.ties} ties</li>"
                     for run, _ in table.rows)
    return (f'<section class="table" data-benchmark="{escape(table.benchmark)}" '
            f'data-protocol="{escape(table.protocol)}"><h3>{escape(table.title)}</h3><div class="scroll">'
            f'<table class="paper"><thead><tr><th rowspan="2">run</th>{head1}</tr><tr>{head2}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table></div><ul class="counts">{counts}</ul></section>')


def _headline(table: PaperTable) -> str | None:
    for section, metric in table.columns:
        if section == "overall" and not metric.startswith("average"):
            return metric
    return table.columns[0][1] if table.columns else None


def _sampling_x(run: ScoredRun, config: dict) -> float | None:
    sampling = config.get("sampling") or {}
    return sampling.get("frames") or sampling.get("fps")


def plots_html(runs: list[ScoredRun], tables: list[PaperTable], configs: dict[str, dict],
               outcomes: dict[str, list]) -> list[str]:
    figures = []
    for run in runs:  # VELOCITI-style scatter for every run whose outcomes have one (entailment)
        points = [p for o in outcomes[run.run_dir] if not o.is_proficiency and (p := o.scatter_point()) is not None]
        if points:
            figures.append(entailment_scatter(points, f"{run.report.benchmark} · {run.label}"))
    for table in tables:
        headline = _headline(table)
        if headline is None:
            continue
        # runs identical but for their sampling: the metric against frames (or fps)
        sweeps: OrderedDict[str, list] = OrderedDict()
        for run, metrics in table.rows:
            config = dict(configs[run.run_dir])
            x = _sampling_x(run, config)
            metric = metrics.get(f"overall/{headline}")
            if x is None or metric is None or metric.value is None or not metric.ci95:
                continue
            key = json.dumps({k: v for k, v in config.items() if k != "sampling"}, sort_keys=True, default=str)
            sweeps.setdefault(key, []).append((float(x), metric.value, metric.ci95[0], metric.ci95[1], run, metric))
        for points in sweeps.values():
            if len({p[0] for p in points}) > 1:
                unit = "frames" if configs[points[0][4].run_dir]["sampling"].get("frames") else "fps"
                chance = points[0][5].chance
                figures.append(line_plot({points[0][4].report.model: [p[:4] for p in points]},
                                         f"{table.title}: {headline} against {unit}", unit, headline, chance))
        for run, metrics in table.rows:  # per test / category bars
            bars = [(section, metrics[f"{section}/{headline}"].value, metrics[f"{section}/{headline}"].chance)
                    for section in OrderedDict.fromkeys(s for s, _ in table.columns if s != "overall")
                    if f"{section}/{headline}" in metrics and metrics[f"{section}/{headline}"].value is not None]
            if len(bars) > 1:
                figures.append(bar_plot(bars, f"{table.title} · {run.label}: {headline} by test and category",
                                        headline, "category-bars"))
        biased = [(run.label, metrics["overall/bias"].value, 0.0) for run, metrics in table.rows
                  if "overall/bias" in metrics and metrics["overall/bias"].value is not None]
        if biased:
            figures.append(bar_plot(biased, f"{table.title}: multiple-choice bias (acc_B − acc_A)", "bias, points",
                                    "bias-bars", lo=-100, hi=100))
    return [f"<figure>{svg}<figcaption>{escape(_title_of(svg))}</figcaption></figure>" for svg in figures]


def _title_of(svg: str) -> str:
    import html as html_module

    start = svg.index("<title>") + len("<title>")
    return html_module.unescape(svg[start:svg.index("</title>", start)])


def comparison_html(runs: list[ScoredRun], outcomes: dict[str, list]) -> str:
    correct = {run.run_dir: {o.item["id"]: o.correct() for o in outcomes[run.run_dir]} for run in runs}
    rows = []
    for c in comparisons(runs, correct):
        rows.append(f'<tr data-first="{escape(c.first.run_dir)}" data-second="{escape(c.second.run_dir)}">'
                    f'<td>{escape(c.first.report.benchmark)} · {escape(c.first.report.protocol)}</td>'
                    f"<td>{escape(c.first.label)}</td><td>{escape(c.second.label)}</td><td>{c.n}</td>"
                    f"<td>{100 * c.first_right / max(c.n, 1):.1f}</td><td>{100 * c.second_right / max(c.n, 1):.1f}</td>"
                    f"<td>{c.difference:+.1f}</td><td>{c.only_first}</td><td>{c.only_second}</td>"
                    f'<td class="{"sig" if c.p_value < 0.05 else ""}" data-p="{c.p_value!r}">'
                    f'{c.p_value:.4g}</td></tr>')
    if not rows:
        return "<p>Comparisons need two or more runs of the same benchmark and protocol.</p>"
    return ('<table class="compare"><thead><tr><th>benchmark</th><th>run A</th><th>run B</th><th>paired items</th>'
            '<th>A right %</th><th>B right %</th><th>B − A</th><th>only A right</th><th>only B right</th>'
            '<th>McNemar p</th></tr></thead><tbody>' + "".join(rows) + "</tbody></table>")


def _script_json(data) -> str:
    """JSON safe inside a <script> element: no '</' or '<!--' can close it early, and no line or
    paragraph separator ends a line of script that an older engine reads as JavaScript."""
    return json.dumps(data, ensure_ascii=False).replace("<", "\\u003c").replace(">", "\\u003e").replace(
        "&", "\\u0026").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def write_html(run_dirs: list[str], path: str, *, limit: int = 200, thumbnails: bool = True) -> str:
    runs = [load_scored(d) for d in run_dirs]
    configs, outcomes, items = {}, {}, []
    thumbs = Thumbnails() if thumbnails else None
    for index, run in enumerate(runs):
        meta, records = load_run(run.run_dir)
        configs[run.run_dir] = meta["config"]
        protocol = get_protocol(run.report.protocol)
        outcomes[run.run_dir] = outcomes_from_records(records, protocol)
        sampling = None if meta["config"].get("blind") or not meta["config"].get("sampling") \
            else Sampling.from_json(meta["config"]["sampling"])
        items += browser_items(index, run.label, records, outcomes[run.run_dir], protocol, sampling, limit, thumbs)
    tables = paper_tables(runs)
    figures = plots_html(runs, tables, configs, outcomes)
    run_list = "".join(f"<li><code>{escape(r.run_dir)}</code>: {escape(r.report.benchmark)} · "
                       f"{escape(r.report.protocol)} · {escape(r.label)}</li>" for r in runs)
    filters = {"run": [[i, r.label + " · " + r.report.benchmark] for i, r in enumerate(runs)],
               "benchmark": sorted({i["benchmark"] for i in items}), "test": sorted({i["test"] for i in items}),
               "category": sorted({c for i in items for c in i["categories"]}), "outcome": list(OUTCOMES)}
    html_text = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<title>timefoil report</title><style>{_asset("report.css")}</style></head>
<body><header><h1>timefoil report</h1><p>{len(runs)} run(s) · generated {escape(time.strftime("%Y-%m-%d %H:%M"))}
by timefoil {escape(__version__)}</p><ul class="runs">{run_list}</ul>
<nav><a href="#tables">Tables</a> <a href="#plots">Plots</a> <a href="#compare">Comparisons</a>
<a href="#browser">Samples</a></nav></header>
<main>
<section id="tables"><h2>Tables</h2><p class="legend">Bold: above chance (one-sided p &lt; 0.05). ±: half-width of the
95% confidence interval. Hover a cell for n, chance, interval and p-value.</p>{"".join(table_html(t) for t in tables)}
</section>
<section id="plots"><h2>Plots</h2><div class="figures">{"".join(figures) or "<p>No plots for these runs.</p>"}</div>
</section>
<section id="compare"><h2>Comparisons</h2><p class="legend">Paired over the items both runs answered; an item is right
when all its requests are (StrictVLE for entailment). McNemar's exact test on the discordant items.</p>
{comparison_html(runs, outcomes)}</section>
<section id="browser"><h2>Samples</h2><div id="filters"></div><p id="shown"></p><div id="items"></div></section>
</main>
<script type="application/json" id="data-items">{_script_json(items)}</script>
<script type="application/json" id="data-filters">{_script_json(filters)}</script>
<script>{_asset("browser.js")}</script>
</body></html>
"""
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(html_text)
    return path
