"""The papers' tables of runs, as each benchmark declares them (``Benchmark.paper_shapes``): the
runs as rows, the paper's columns in its order under the paper's names, and the paper's rows
under them. One description serves the terminal, the HTML report and the CSV, LaTeX and JSON
exports; nothing here knows a benchmark by name."""
from __future__ import annotations

import re
from collections import OrderedDict
from dataclasses import dataclass, field

from ..benchmarks import BENCHMARKS
from ..benchmarks.base import AVG, PaperRow, PaperShape
from ..measures.stats import MetricValue
from ..scoring import category_order

COVERAGE = re.compile(r" \(\d+ of \d+ tests\)$")  # "average X (3 of 7 tests)": the paper's average X


@dataclass(frozen=True)
class Column:
    key: str  # the metric's name in a run's report, less its coverage ("overall/average StrictVLE")
    section: str  # the paper's name of its section ("EvChr", "Avg", "COIN")
    metric: str

    @property
    def pair(self) -> tuple[str, str]:
        """(section, metric) as the run names them ("overall", "average StrictVLE")."""
        section, _, metric = self.key.rpartition("/")
        return section, metric


@dataclass
class Shaped:
    """One paper table filled with runs: ``rows`` (run, its metrics by ``Column.key``)."""

    benchmark: str
    protocol: str
    shape: PaperShape
    columns: list[Column]
    rows: list[tuple[object, dict[str, MetricValue]]]
    quoted: list[PaperRow] = field(default_factory=list)

    @property
    def caption(self) -> str:
        return f"{self.shape.source}: {self.shape.what}" if self.shape.what else self.shape.source

    @property
    def title(self) -> str:
        return f"{self.benchmark} · {self.protocol} · {self.caption}"

    def heading(self, column: Column) -> str:
        """A column's name on one line: its section's where the table shows one metric (named in
        its caption), else the section's and the metric's."""
        return column.section if len(self.shape.metrics) == 1 else f"{column.section} {column.metric}"


def by_key(metrics: list[MetricValue]) -> dict[str, MetricValue]:
    """A run's metrics by name, an average over fewer tests under the paper's average's name."""
    return {COVERAGE.sub("", m.name): m for m in metrics}


def shown_sources(benchmark: str, protocol: str) -> set[str]:
    """The sources of the paper tables a benchmark declares for a protocol: their rows stand under
    those tables, not under a run's own."""
    declared = BENCHMARKS.get(benchmark)
    return {shape.source for shape in declared.paper_shapes if shape.protocol == protocol} if declared else set()


def _columns(declared, shape: PaperShape, raw: list[str]) -> list[Column]:
    """The shape's columns that some run has, in the paper's order, under the paper's names."""
    present = {COVERAGE.sub("", name): name for name in raw}
    if shape.kind:
        spec = declared.summary
        sections = []
        for name in category_order(spec, OrderedDict.fromkeys(n.rpartition("/")[0] for n in raw
                                                               if n.startswith("category:"))):
            found = spec.category_kind(name.removeprefix("category:"))
            if found and found[0] == shape.kind:
                sections.append((name, spec.category_kinds[shape.kind][found[1]]))
    else:
        sections = [(s, AVG if s == AVG else declared.test_labels.get(s, s)) for s in shape.sections]
    columns = []
    for section, label in sections:
        for key, metric in zip(shape.keys(section), shape.metrics):
            if key in present:
                covered = present[key][len(key):]  # " (3 of 7 tests)" where a run has fewer tests
                columns.append(Column(key, label + covered, metric))
    return columns


def shaped_tables(runs: list) -> list[Shaped]:
    """Each declared paper table that the runs have a column of, runs of one benchmark and
    protocol together, in the order the benchmark declares its tables."""
    grouped: OrderedDict[tuple[str, str], list] = OrderedDict()
    for run in runs:
        grouped.setdefault((run.report.benchmark, run.report.protocol), []).append(run)
    tables = []
    for (benchmark, protocol), members in grouped.items():
        declared = BENCHMARKS.get(benchmark)
        if declared is None:
            continue
        raw = list(OrderedDict.fromkeys(m.name for run in members for m in run.report.metrics))
        rows = [(run, by_key(run.report.metrics)) for run in members]
        for shape in declared.paper_shapes:
            if shape.protocol != protocol:
                continue
            columns = _columns(declared, shape, raw)
            if not columns:
                continue
            keys = {c.key for c in columns}
            quoted = [row for row in declared.quoted if row.protocol == protocol and row.source == shape.source
                      and keys & set(row.values)]
            quoted.sort(key=lambda row: shape.order.index(row.label) if row.label in shape.order else len(shape.order))
            tables.append(Shaped(benchmark, protocol, shape, columns, rows, quoted))
    return tables
