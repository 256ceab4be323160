"""Paper-style tables: one row per run, columns (section, metric) chosen by the benchmark's
declaration, a chance row, and exports of the same tables."""
from __future__ import annotations

import csv
import json
from collections import OrderedDict
from dataclasses import dataclass, field

from ...benchmarks import BENCHMARKS
from ...core.output import write_whole
from ..headline import ABOVE, mark_of
from ..pairing import HEADLINE_ITEMS, load_outcomes
from ...protocols import Outcome
from ..report import ScoredRun, format_difference, format_p, other_reading, quoted_rows, reading_line, split_name
from ..shapes import COVERAGE, Shaped, shaped_tables, shown_sources
from ...measures.stats import MetricValue
from ...scoring import SummarySpec, category_order
from .compare import RunPair, pairs


@dataclass
class PaperTable:
    benchmark: str
    protocol: str
    columns: list[tuple[str, str]]  # (section, metric)
    rows: list[tuple[ScoredRun, dict[str, MetricValue]]]
    quoted: list = field(default_factory=list)  # PaperRow: numbers quoted from the paper, not run here
    pairs: list[RunPair] = field(default_factory=list)  # the runs compared two by two, over the headline items
    part: str = ""  # a table after the main table: one kind of category ("source dataset"), or a paper table
    labels: list[tuple[str, str]] = field(default_factory=list)  # per column, (section, metric) as shown
    caption: str = ""  # a paper table's source and what it shows ("Table 2: StrictVLE by test")
    one_metric: bool = False  # a paper table of one metric, named in its caption: its columns are its sections
    bars: bool = True  # a plot of each run's numbers by section (a paper table of tests repeats the main table's)

    def quoted_value(self, row, column: tuple[str, str]) -> str:
        value = row.values.get("/".join(column))
        return "" if value is None else f"{value:.1f}"

    @property
    def title(self) -> str:
        if self.caption:
            return f"{self.benchmark} · {self.protocol} · {self.caption}"
        return f"{self.benchmark} · {self.protocol}" + (f" · by {self.part}" if self.part else "")

    def label(self, index: int) -> tuple[str, str]:
        """(section, metric) of a column as shown: the paper's names, "pooled" beside an average."""
        return self.labels[index] if self.labels else self.columns[index]

    def heading(self, index: int) -> str:
        """A column's name on one line (the exports' header)."""
        section, metric = self.label(index)
        if self.caption:
            return section if self.one_metric else f"{section} {metric}"
        return f"{section}/{metric}"

    @property
    def headings(self) -> list[str]:
        return [self.heading(k) for k in range(len(self.columns))]

    def chance(self, column: tuple[str, str]) -> float | None:
        for _, metrics in self.rows:
            metric = metrics.get("/".join(column))
            if metric is not None and metric.chance is not None:
                return metric.chance
        return None


def _sections(names: list[str], spec: SummarySpec) -> list[str]:
    """Tests first (the paper's columns, in the paper's order where it names them), then the
    pooled overall, then categories."""
    tests, cats = [], []
    for name in names:
        section, _ = split_name(name)
        if section.startswith("category:"):
            if spec.categories and section not in cats:
                cats.append(section)
        elif section != "overall" and "/" not in section and section not in tests:
            tests.append(section)
    order = list(spec.tests)
    tests.sort(key=lambda t: order.index(t) if t in order else len(order))  # the others as they came
    return tests + ["overall"] + cats


def _main_labels(columns: list[tuple[str, str]], rows) -> list[tuple[str, str]]:
    """The main table's columns as shown: a number pooled over the items named "pooled" (and
    which tests it leaves out) where the average over tests of the same metric stands beside it."""
    averaged = {COVERAGE.sub("", m).removeprefix("average ") for s, m in columns
                if s == "overall" and m.startswith("average ")}
    labels = []
    for section, metric in columns:
        if section == "overall" and metric in averaged:
            left_out = next((m.extra["excludes"] for _, metrics in rows
                             if (m := metrics.get(f"overall/{metric}")) is not None and m.extra.get("excludes")), None)
            section = f"pooled (without {left_out})" if left_out else "pooled"
        labels.append((section, metric))
    return labels


def _shaped(table: Shaped) -> PaperTable:
    """A paper table of the benchmark's declaration as the HTML report and the exports show it."""
    return PaperTable(table.benchmark, table.protocol, [c.pair for c in table.columns], table.rows, table.quoted,
                      part=table.caption, labels=[(c.section, c.metric) for c in table.columns],
                      caption=table.caption, one_metric=len(table.shape.metrics) == 1, bars=bool(table.shape.kind))


def paper_tables(runs: list[ScoredRun], outcomes: dict[str, list[Outcome]] | None = None) -> list[PaperTable]:
    """``outcomes`` by run directory, when the caller has them already."""
    outcomes = outcomes if outcomes is not None else {}
    grouped: OrderedDict[tuple[str, str], list[ScoredRun]] = OrderedDict()
    for run in runs:
        grouped.setdefault((run.report.benchmark, run.report.protocol), []).append(run)
    tables = []
    for (benchmark, protocol), members in grouped.items():
        declared = BENCHMARKS.get(benchmark)
        names = list(OrderedDict.fromkeys(m.name for r in members for m in r.report.metrics))
        wanted = declared.table.get(protocol) if declared else None
        if not wanted:
            wanted = tuple(OrderedDict.fromkeys(split_name(n)[1] for n in names if split_name(n)[0] == "overall"
                                                and not n.startswith("overall/average")))
        spec = declared.summary if declared else SummarySpec()
        kinds = spec.category_kinds if spec.categories else {}
        present = set(names)
        sections = _sections(names, spec)
        columns = [(section, metric) for section in sections if not (kinds and section.startswith("category:"))
                   for metric in wanted if f"{section}/{metric}" in present]
        columns += [split_name(n) for n in names if n.startswith("overall/average")]
        rows = [(run, {m.name: m for m in run.report.metrics}) for run in members]
        shown = shown_sources(benchmark, protocol)  # those rows stand under the paper's tables
        quoted = [row for row in quoted_rows(benchmark, protocol, ["/".join(c) for c in columns])
                  if row.source not in shown]
        for run in members:
            if run.run_dir not in outcomes:
                outcomes[run.run_dir] = load_outcomes(run.run_dir, run.report.reading)
        tables.append(PaperTable(benchmark, protocol, columns, rows, quoted, pairs(members, outcomes),
                                 labels=_main_labels(columns, rows)))
        shaped = shaped_tables(members)
        tables += [_shaped(table) for table in shaped]
        declared_kinds = {table.shape.kind for table in shaped}
        for part, kind_columns in _kind_tables(spec, sections, wanted, present).items():
            if part not in declared_kinds:  # a kind the paper gives no table of, and the values no kind names
                tables.append(PaperTable(benchmark, protocol, kind_columns, rows, part=part))
    return tables


def _kind_tables(spec: SummarySpec, sections: list[str], wanted, present: set[str]) -> dict[str, list]:
    """One table per kind of category (the paper's per-source and per-category tables), its
    columns in the paper's order; values no kind names in a table of their own."""
    if not spec.category_kinds:
        return {}
    tables: dict[str, list] = {}
    for section in category_order(spec, [s for s in sections if s.startswith("category:")]):
        found = spec.category_kind(section.removeprefix("category:"))
        part = found[0] if found else "other category"
        tables.setdefault(part, []).extend((section, m) for m in wanted if f"{section}/{m}" in present)
    return {part: columns for part, columns in tables.items() if columns}


def _value(metric: MetricValue | None) -> str:
    return "" if metric is None or metric.value is None else f"{metric.value:.1f}"


def other_rows(table: PaperTable) -> list[tuple[ScoredRun, str, list[str]]]:
    """For each run with a column the other reading of its answers changes: (run, the row's
    label, that reading's values, "value (n N)", empty where the two agree)."""
    out = []
    for run, metrics in table.rows:
        found = [other_reading(metrics.get("/".join(c))) for c in table.columns]
        if any(found):
            name = next(f[0] for f in found if f)
            label = f"{run.label} · {name} reading ({reading_line(run.report) or 'the same answers'})"
            out.append((run, label, ["" if f is None else f"{_format(f[1]['value'])} (n {f[1]['n']})"
                                     for f in found]))
    return out


def write_table_csv(tables: list[PaperTable], path: str) -> None:
    write_whole(path, lambda handle: _write_csv(tables, handle), newline="")


def _write_csv(tables: list[PaperTable], handle) -> None:
    writer = csv.writer(handle)
    for table in tables:
        writer.writerow(["benchmark", table.benchmark, "protocol", table.protocol]
                        + (["table", table.caption or f"by {table.part}"] if table.part else []))
        writer.writerow(["run"] + table.headings)
        writer.writerow(["chance"] + [_format(table.chance(c)) for c in table.columns])
        for run, metrics in table.rows:
            writer.writerow([run.label] + [_value(metrics.get("/".join(c))) for c in table.columns])
        for _, label, cells in other_rows(table):
            writer.writerow([label] + cells)
        for row in table.quoted:
            writer.writerow([f"{row.label} (quoted from the {row.cited})"]
                            + [table.quoted_value(row, c) for c in table.columns])
        if table.pairs:
            writer.writerow([])
            writer.writerow([f"{table.title}: paired comparison over the {HEADLINE_ITEMS} (McNemar exact)"])
            writer.writerow(["run A", "run B", "unit", "paired items", "A right", "B right", "B - A",
                             "only A right", "only B right", "paired p"])
            for p in table.pairs:
                c = p.comparison
                writer.writerow([p.first.label, p.second.label, c.unit, c.n, c.first_right, c.second_right,
                                 format_difference(c.difference), c.only_first, c.only_second,
                                 format_p(c.p_value)])
        writer.writerow([])


def _format(value: float | None) -> str:
    return "" if value is None else f"{value:.1f}"


def write_table_json(tables: list[PaperTable], path: str) -> None:
    data = [{"benchmark": t.benchmark, "protocol": t.protocol, **({"part": t.part} if t.part else {}),
             "columns": ["/".join(c) for c in t.columns], "headings": t.headings,
             "chance": {"/".join(c): t.chance(c) for c in t.columns},
             "rows": [{"run": run.run_dir, "label": run.label, "items": run.report.items, "errors": run.report.errors,
                       "parse_failures": run.report.parse_failures, "stopped": run.report.stopped,
                       "reading": run.report.reading,
                       **({"released": run.report.released} if run.report.released else {}),
                       "metrics": {"/".join(c): metrics["/".join(c)].to_json() for c in t.columns
                                   if "/".join(c) in metrics}} for run, metrics in t.rows],
             "quoted_from_paper": [{"label": r.label, "source": r.source, "origin": r.origin, "values": r.values}
                                   for r in t.quoted],
             "comparisons": [p.to_json() for p in t.pairs]}
            for t in tables]
    write_whole(path, json.dumps(data, indent=2, ensure_ascii=False))


_LATEX = {"&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
          "^": r"\textasciicircum{}", "\\": r"\textbackslash{}", "∧": r"$\wedge$"}


def latex_escape(text: str) -> str:
    return "".join(_LATEX.get(ch, ch) for ch in str(text))


def write_table_latex(tables: list[PaperTable], path: str) -> None:
    lines = []
    for table in tables:
        lines += [f"% {latex_escape(table.title)}", r"\begin{tabular}{l" + "r" * len(table.columns) + "}", r"\toprule",
                  "Run & " + " & ".join(latex_escape(h) for h in table.headings) + r" \\", r"\midrule",
                  r"\textit{chance} & " + " & ".join(_format(table.chance(c)) for c in table.columns) + r" \\"]
        for run, metrics in table.rows:
            cells = []
            for column in table.columns:
                metric = metrics.get("/".join(column))
                text = _value(metric)
                above = metric is not None and mark_of(metric) == ABOVE
                cells.append(rf"\textbf{{{text}}}" if above and text else text)
            lines.append(latex_escape(run.label) + " & " + " & ".join(cells) + r" \\")
        for _, label, cells in other_rows(table):  # the other reading, where it differs
            lines.append(r"\textit{" + latex_escape(label) + "} & " + " & ".join(map(latex_escape, cells)) + r" \\")
        if table.quoted:
            lines.append(r"\midrule")
        for row in table.quoted:  # quoted from the paper, not run here
            lines.append(r"\textit{" + latex_escape(f"{row.label} ({row.cited})") + "} & "
                         + " & ".join(table.quoted_value(row, c) for c in table.columns) + r" \\")
        lines += [r"\bottomrule", r"\end{tabular}", ""]
    write_whole(path, "\n".join(lines))
