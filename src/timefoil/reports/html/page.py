"""One self-contained HTML file: styles, script, plots and thumbnails inline; nothing is
fetched when it is opened. Text from data or models is escaped on the way into HTML, and the
sample browser builds its DOM with textContent only."""
from __future__ import annotations

import dataclasses
import json
import os
import time
from collections import OrderedDict
from html import escape

from ..pairing import HEADLINE_ITEMS
from ...core.output import write_whole
from ...core.paths import __version__
from ..headline import ABOVE, BELOW, RULE, mark_of
from ..report import ScoredRun, format_difference, format_p, load_scored, reading_line
from ...execution.stored import load_run
from ...protocols import get_protocol
from ...scoring import outcomes_from_records
from ...measures.stats import MetricValue, unread_of, unread_words
from ...video.sampling import Sampling
from .browser import OUTCOMES, Thumbnails, browser_items
from .leaderboard import leaderboard_html
from .summary import other_html, summary_html
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
    if unread_of(metric):
        return (f'<td data-metric="{escape(column)}" class="unread">{escape(unread_words(unread_of(metric)))}'
                f'{other_html(metric)}</td>')
    ci = metric.ci95
    detail = (f"n={metric.n}, chance {metric.chance:.1f}" if metric.chance is not None else f"n={metric.n}")
    if ci:
        detail += f", 95% CI [{ci[0]:.1f}, {ci[1]:.1f}]"
    if metric.p_value is not None:
        detail += f", p={metric.p_value:.3g}"
    half = f'<span class="ci">±{(ci[1] - ci[0]) / 2:.1f}</span>' if ci else ""
    warn = (' <span class="warn" title="joined videos sampled with fewer than 3 frames">!</span>'
            if metric.extra.get("warning") else "")
    mark = mark_of(metric)
    cls = "sig" if mark == ABOVE else "below" if mark == BELOW else ""
    return (f'<td data-metric="{escape(column)}" class="{cls}" title="{escape(detail)}">'
            f'<span class="v">{metric.value:.1f}</span>{half}{warn}{other_html(metric)}</td>')


def table_html(table: PaperTable) -> str:
    groups: OrderedDict[str, list[str]] = OrderedDict()  # the sections as shown, each over its metrics
    for index in range(len(table.columns)):
        section, metric = table.label(index)
        groups.setdefault(section, []).append(metric)
    if table.one_metric:  # a paper table of one metric, named in its title: a column per section
        head = "<tr><th>run</th>" + "".join(f"<th>{escape(s)}</th>" for s in groups) + "</tr>"
    else:
        head = ('<tr><th rowspan="2">run</th>' + "".join(f'<th colspan="{len(m)}">{escape(s)}</th>'
                                                         for s, m in groups.items())
                + "</tr><tr>" + "".join(f"<th>{escape(m)}</th>" for ms in groups.values() for m in ms) + "</tr>")
    chance = "".join(f'<td data-metric="{escape("/".join(c))}">'
                     f'{"" if table.chance(c) is None else f"{table.chance(c):.1f}"}</td>' for c in table.columns)
    rows = [f'<tr class="chance"><th>chance</th>{chance}</tr>']
    for run, metrics in table.rows:
        cells = "".join(_cell(metrics.get("/".join(c)), run.run_dir, "/".join(c)) for c in table.columns)
        rows.append(f'<tr data-run="{escape(run.run_dir)}"><th>{escape(run.label)}</th>{cells}</tr>')
    for row in table.quoted:
        cells = "".join(f'<td data-metric="{escape("/".join(c))}">{table.quoted_value(row, c)}</td>'
                        for c in table.columns)
        rows.append(f'<tr class="quoted" title="quoted from the {escape(row.cited)}, not run here">'
                    f'<th>{escape(row.label)} <span class="paper">{escape(row.origin)}</span></th>{cells}</tr>')
    counts = "".join(f"<li>{escape(run.label)}: {run.report.items} items, {run.report.errors} with errors, "
                     f"{run.report.parse_failures} parse failures, {run.report.stopped} stopped (refused, blocked or "
                     f"out of tokens), {run.report.ties} ties"
                     + (f"; ran on {escape(run.ran_on)}" if run.ran_on else "")
                     + (f"; {escape(reading_line(run.report))}" if reading_line(run.report) else "") + "</li>"
                     for run, _ in table.rows)
    return (f'<section class="table" data-benchmark="{escape(table.benchmark)}" '
            f'data-protocol="{escape(table.protocol)}"><h3>{escape(table.title)}</h3><div class="scroll">'
            f'<table class="paper"><thead>{head}</thead>'
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
        for run, metrics in table.rows if not table.part else ():  # a part table repeats its main table's runs
            config = dict(configs[run.run_dir])
            x = _sampling_x(run, config)
            metric = metrics.get(f"overall/{headline}")
            if x is None or metric is None or metric.value is None or not metric.ci95:
                continue
            # the same run but for its frames (or fps): an order or single-frame ablation is no sweep point
            sampling = {k: v for k, v in (config.get("sampling") or {}).items() if k not in ("frames", "fps")}
            key = json.dumps({**config, "sampling": sampling}, sort_keys=True, default=str)
            if all(p[0] != float(x) for p in sweeps.get(key, [])):
                sweeps.setdefault(key, []).append((float(x), metric.value, metric.ci95[0], metric.ci95[1], run,
                                                   metric))
        for points in sweeps.values():
            if len({p[0] for p in points}) > 1:
                unit = "frames" if configs[points[0][4].run_dir]["sampling"].get("frames") else "fps"
                chance = points[0][5].chance
                figures.append(line_plot({points[0][4].report.model: [p[:4] for p in points]},
                                         f"{table.title}: {headline} against {unit}", unit, headline, chance))
        for run, metrics in table.rows if table.bars else ():  # per test / category bars
            bars = [(section, metrics[f"{section}/{headline}"].value, metrics[f"{section}/{headline}"].chance)
                    for section in OrderedDict.fromkeys(s for s, _ in table.columns if s != "overall")
                    if f"{section}/{headline}" in metrics and metrics[f"{section}/{headline}"].value is not None]
            if len(bars) > 1:
                figures.append(bar_plot(bars, f"{table.title} · {run.label}: {headline} by test and category",
                                        headline, "category-bars"))
        biased = [(run.label, metrics["overall/bias"].value, 0.0) for run, metrics in table.rows
                  if not table.part and "overall/bias" in metrics and metrics["overall/bias"].value is not None]
        if biased:
            figures.append(bar_plot(biased, f"{table.title}: multiple-choice bias (acc_B − acc_A)", "bias, points",
                                    "bias-bars", lo=-100, hi=100))
    return [_figure(svg) for svg in figures]


# What each kind of plot draws, said under it.
LEGENDS = {"entailment-scatter": "Each dot an item: green right under StrictVLE, red wrong; shaded: the StrictVLE "
                                 "region (true caption entailed, foil not); dashed: the diagonal.",
           "frames-line": "Line: the metric at each sampling; vertical bars: 95% CI; dashed: chance.",
           "category-bars": "Bars: the metric per test or category, its value at the right; dashed: each one's "
                            "chance. A value of 0 is the short mark at the axis.",
           "bias-bars": "Bars: acc_B − acc_A per run (0: no bias), value at the right; dashed: 0."}


def _figure(svg: str) -> str:
    kind = svg.split('data-plot="', 1)[1].split('"', 1)[0]
    return (f'<figure data-kind="{escape(kind)}">{svg}<figcaption><b>{escape(_title_of(svg))}</b>. '
            f'{escape(LEGENDS.get(kind, ""))}</figcaption></figure>')


def _title_of(svg: str) -> str:
    import html as html_module

    start = svg.index("<title>") + len("<title>")
    return html_module.unescape(svg[start:svg.index("</title>", start)])


def comparison_html(tables: list[PaperTable]) -> str:
    rows = []
    for table in tables:
        for p in table.pairs:
            c = p.comparison
            rows.append(f'<tr data-first="{escape(c.first)}" data-second="{escape(c.second)}">'
                        f'<td>{escape(table.title)}</td><td class="run">{escape(p.first.label)}</td>'
                        f'<td class="run">{escape(p.second.label)}</td><td>{escape(c.unit)}</td><td>{c.n}</td>'
                        f"<td>{100 * c.first_right / max(c.n, 1):.1f}</td>"
                        f"<td>{100 * c.second_right / max(c.n, 1):.1f}</td><td>{format_difference(c.difference)}</td>"
                        f"<td>{c.only_first}</td><td>{c.only_second}</td>"
                        f'<td class="{"sig" if c.p_value < 0.05 else ""}" data-p="{c.p_value!r}">'
                        f"{format_p(c.p_value)}</td></tr>")
    if not rows:
        return "<p>Comparisons need two or more runs of the same benchmark and protocol.</p>"
    return ('<div class="scroll"><table class="compare"><thead><tr><th>benchmark</th><th>run A</th><th>run B</th>'
            '<th>unit</th><th>paired items</th><th>A right %</th><th>B right %</th><th>B − A</th><th>only A right</th>'
            '<th>only B right</th><th>paired p</th></tr></thead><tbody>' + "".join(rows) + "</tbody></table></div>")


def _metric(data: dict) -> MetricValue:
    """A metric back from its JSON (``MetricValue.to_json``)."""
    return MetricValue(data["name"], data["value"], data["n"], data["chance"],
                       tuple(data["ci95"]) if data["ci95"] else None, data["p_value"],
                       {k: v for k, v in data.items() if k in ("p_below", "warning", "mark", "difference")})


def ablation_html(data: dict, figures: list[str]) -> str:
    """The terminal's ablation table (``timefoil.commands.ablation.ablation_data``), then its frames sweep."""
    head = "".join(f"<th>{escape(name)}</th>" for name in data["headline"])
    rows = []
    for row in data["rows"]:
        cells = "".join(_cell(_metric(row["metrics"][name]), row["run"], name) if name in row["metrics"] else
                        f'<td data-metric="{escape(name)}" class="empty">–</td>' for name in data["headline"])
        right = f"{row['right']}/{row['n']}" if row["n"] is not None else ""
        rows.append(f'<tr data-condition="{escape(row["condition"])}" data-run="{escape(row["run"])}">'
                    f'<th>{escape(row["condition"])}</th>{cells}<td data-col="right">{right}</td>'
                    f'<td data-col="difference">{format_difference(row["difference"])}</td>'
                    f'<td data-col="p">{format_p(row["p_value"])}</td></tr>')
    lines = "".join(f'<li data-what="{escape(d["what"])}">{escape(d["line"])}</li>' for d in data["dependence"])
    sweep = "".join(f for f in figures if 'data-kind="frames-line"' in f)
    return (f'<p class="legend">{escape(data["benchmark"])} · {escape(data["protocol"])} · {escape(data["model"])}. '
            f'Each condition paired with the full run over the {escape(data["unit"])} (McNemar exact); Δ vs full: '
            f'the condition minus the full run, in points of items right.</p><div class="scroll">'
            f'<table class="ablation"><thead><tr><th>condition</th>{head}<th>items right</th><th>Δ vs full</th>'
            f'<th>paired p</th></tr></thead><tbody>{"".join(rows)}</tbody></table></div>'
            f'<ul class="dependence">{lines}</ul><div class="figures">{sweep}</div>')


def _run_list(runs: list[ScoredRun], path: str) -> str:
    """Run directories relative to the report file; the full path on hover."""
    here = os.path.dirname(os.path.abspath(path))
    return "".join(f'<li><code title="{escape(os.path.abspath(r.run_dir))}">'
                   f"{escape(os.path.relpath(os.path.abspath(r.run_dir), here))}</code>: "
                   f"{escape(r.report.benchmark)} · {escape(r.report.protocol)} · {escape(r.label)}"
                   + (f" · ran on {escape(r.ran_on)}" if r.ran_on else "") + "</li>" for r in runs)


def _script_json(data) -> str:
    """JSON safe inside a <script> element: no '</' or '<!--' can close it early, and no line or
    paragraph separator ends a line of script that an older engine reads as JavaScript."""
    return json.dumps(data, ensure_ascii=False).replace("<", "\\u003c").replace(">", "\\u003e").replace(
        "&", "\\u0026").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def write_html(run_dirs: list[str], path: str, *, limit: int = 200, thumbnails: bool = True,
               ablation: dict | None = None, reading: str = "meant") -> str:
    """``ablation``: the table of ``timefoil ablate`` (its data), shown first, before the tables.
    ``reading``: how the answers are read ("meant" or "released"); the other reading's numbers
    stand beside where they differ."""
    runs = [load_scored(d, reading) for d in run_dirs]
    if ablation is not None:  # the conditions by their names, as in the terminal
        names = {row["run"]: row["condition"] for row in ablation["rows"]}
        runs = [dataclasses.replace(r, label=names.get(r.run_dir, r.label)) for r in runs]
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
    tables = paper_tables(runs, outcomes)
    figures = plots_html(runs, tables, configs, outcomes)
    filters = {"run": [[i, r.label + " · " + r.report.benchmark] for i, r in enumerate(runs)],
               "benchmark": sorted({i["benchmark"] for i in items}), "test": sorted({i["test"] for i in items}),
               "category": sorted({c for i in items for c in i["categories"]}), "outcome": list(OUTCOMES)}
    sections = [("summary", "Summary", '<p class="legend">Each run\'s headline number, its 95% interval and chance, '
                 "and under it the figures shown beside it (a choice run's accuracy, A∧B and bias); "
                 f"{escape(RULE)}. Paper: the paper's row for the same model.</p>"
                 + summary_html(runs, configs, outcomes))]
    if ablation is not None:
        sections.append(("ablation", "Ablation", ablation_html(ablation, figures)))
        figures = [f for f in figures if 'data-kind="frames-line"' not in f]
    boards = [leaderboard_html(t, outcomes) for t in tables if len(t.rows) > 1 and not t.part] \
        if ablation is None else []
    if boards:
        sections.append(("leaderboard", "Leaderboard", '<p class="legend">Click a column to sort. [..]: 95% CI; '
                         f"{escape(RULE)}. Hover a cell for its p-value and, where two runs' intervals overlap, "
                         f"the paired test between them (over the {HEADLINE_ITEMS}).</p>" + "".join(boards)))
    sections.append(("tables", "Tables", f'<p class="legend">{escape(RULE)}. ±: half-width '
                     "of the 95% confidence interval. Hover a cell for n, chance, interval and p-value.</p>"
                     + "".join(table_html(t) for t in tables)))
    sections.append(("plots", "Plots", f'<div class="figures">{"".join(figures) or "<p>No plots for these runs.</p>"}'
                     "</div>"))
    if ablation is None:
        sections.append(("compare", "Comparisons", '<p class="legend">Paired over the items both runs answered, in the '
                         "unit named (headline items: the main items the headline metrics count, proficiency left "
                         "out); an item is right when all its requests are (StrictVLE for entailment). McNemar's exact "
                         "test on the items right in one run only.</p>" + comparison_html(tables)))
    sections.append(("browser", "Samples", '<div id="filters"></div><p id="shown"></p><div id="items"></div>'))
    nav = " ".join(f'<a href="#{key}">{title}</a>' for key, title, _ in sections)
    body = "\n".join(f'<section id="{key}"><h2>{title}</h2>{content}</section>' for key, title, content in sections)
    html_text = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<title>timefoil report</title><style>{_asset("report.css")}</style></head>
<body><header><h1>timefoil report</h1><p>{len(runs)} run(s) · generated {escape(time.strftime("%Y-%m-%d %H:%M"))}
by timefoil {escape(__version__)}</p><ul class="runs">{_run_list(runs, path)}</ul>
<nav>{nav}</nav></header>
<main>
{body}
</main>
<script type="application/json" id="data-items">{_script_json(items)}</script>
<script type="application/json" id="data-filters">{_script_json(filters)}</script>
<script>{_asset("browser.js")}</script>
<script>{_asset("sort.js")}</script>
</body></html>
"""
    return write_whole(path, html_text)  # whole or not at all: a full disk leaves no cut page
