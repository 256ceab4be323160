"""One card for a model's runs (``timefoil report OUT`` on what ``run all`` wrote): a row per run
with its benchmark's headline figures, interval and chance, beside the paper's published row for
the same model where the paper has one; the per-benchmark tables follow it."""
from __future__ import annotations

import json
import os

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..benchmarks import paper_order
from ..execution.store import CONFIG
from ..measures.stats import unread_of
from .headline import headline
from .report import ScoredRun, paper_numbers, split_name, value_text


class NoRuns(ValueError):
    """A folder that holds no run, itself or beneath."""


def run_dirs_in(path: str, depth: int = 2) -> list[str]:
    """``path`` if it is a run, else the runs beneath it (a sweep's values, run all's benchmarks),
    in the papers' order (benchmarks.PAPERS), as run all writes them; a folder holding none is
    refused naming what was looked for. A run that also holds
    runs in its folders (a one-benchmark run written at a suite's root) stands with them, first:
    ``mixed`` says so."""
    beneath = sorted(_beneath(path, depth), key=lambda run: (paper_order(_benchmark_of(run)), run))
    if os.path.isfile(os.path.join(path, CONFIG)):
        return [path, *beneath]
    if not beneath:
        raise NoRuns(f"{path} is not a run directory (no {CONFIG}) and holds none in its folders")
    return beneath


def _benchmark_of(run_dir: str) -> str:
    """The benchmark a run's run.json names ("" where it cannot be read: scoring says why)."""
    try:
        with open(os.path.join(run_dir, CONFIG), encoding="utf-8") as handle:
            return str(json.load(handle)["config"]["benchmark"])
    except (OSError, ValueError, KeyError, TypeError):
        return ""


def mixed(path: str) -> str | None:
    """The line saying that ``path`` is a run and a folder of runs at once, where it is."""
    if not os.path.isfile(os.path.join(path, CONFIG)):
        return None
    beneath = _beneath(path, 2)
    if not beneath:
        return None
    return (f"{path} mixes a run at its root with {len(beneath)} runs in its folders: the root's run was written "
            f"there by a one-benchmark run; move it into its own folder (e.g. {path}/<benchmark>-<protocol>)")


def _beneath(path: str, depth: int) -> list[str]:
    found = []
    for root, folders, _ in os.walk(path):
        if root[len(path):].count(os.sep) >= depth:
            folders[:] = []
            continue
        for folder in sorted(folders):
            if os.path.isfile(os.path.join(root, folder, CONFIG)):
                found.append(os.path.join(root, folder))
        folders[:] = [f for f in sorted(folders) if os.path.join(root, f) not in found]
    return sorted(found)


def beside_paper(run: ScoredRun) -> tuple[list[str], str]:
    """The paper's number beside each of the run's headline figures, from its first row for the
    same model, and whose row it is; "–" where the paper has none (as the HTML summary shows)."""
    report = run.report
    names = [name for name in headline(report) if any(m.name == name for m in report.metrics)]
    found = [paper_numbers(report.benchmark, report.protocol, report.model, name) for name in names]
    row = next((row for numbers in found for row, _ in numbers), None)
    if row is None:
        return [], "–"
    said = [next((f"{value:g}" for other, value in numbers if other is row), "") for numbers in found]
    return said, f"{row.label} ({row.cited})"


CARD_WIDTH = 100  # the card fits this many columns wherever it is printed (a terminal, a log)


def print_card(runs: list[ScoredRun], console: Console, title: str = "card") -> None:
    """A row per headline figure (the headline first, the figures shown beside it under it), its
    run's benchmark and sampling on its first row: a label that wraps makes its own row taller,
    so no figure ever stands beside another figure's label. Each figure has its ± and chance and
    the paper's number for the same model; whose row that number is goes under the table. The
    model is named once, in the title, where every run has the same one."""
    models = list(dict.fromkeys(run.report.model for run in runs))
    table = Table(title=f"{title} · model {models[0]}" if len(models) == 1 else title, title_justify="left",
                  box=box.SIMPLE_HEAD, padding=(0, 1), pad_edge=False)
    if len(models) > 1:
        table.add_column("model", max_width=24)
    table.add_column("benchmark · protocol", max_width=26)
    table.add_column("run", max_width=12)
    table.add_column("headline", max_width=34)
    for name in ("value", "±", "chance", "published"):
        table.add_column(name, justify="right", no_wrap=True)
    whose = []
    for run in runs:
        report = run.report
        metrics = {m.name: m for m in report.metrics}
        shown = [metrics[n] for n in headline(report) if n in metrics]
        numbers, row = beside_paper(run)
        labels = [*([report.model] if len(models) > 1 else []), f"{report.benchmark} · {report.protocol}",
                  run.sampling]
        if not shown:
            table.add_row(*labels, "–", Text("–", style="dim"), "", "", "–", end_section=True)
        for index, metric in enumerate(shown):
            table.add_row(*(labels if index == 0 else [""] * len(labels)), split_name(metric.name)[1],
                          _figure(metric), *_beside(metric),
                          numbers[index] if index < len(numbers) and numbers[index] else ("–" if index == 0 else ""),
                          end_section=index == len(shown) - 1)
        if row != "–":
            whose.append(f"published, {report.benchmark} · {report.protocol}: {row}")  # the row says where
    width = min(console.width, CARD_WIDTH)
    console.print(table, width=width)
    for line in whose:  # wider than a cell: under the table, not beside it
        console.print(line, style="cyan", markup=False, width=width)


def _figure(metric) -> Text:
    return value_text(metric) if metric.value is not None else Text("–", style="dim")


def _beside(metric) -> tuple[Text, Text]:
    """The figure's ± and chance; none beside a figure shown as unread."""
    if metric.value is None or unread_of(metric):
        return Text(""), Text("")
    half = f"{(metric.ci95[1] - metric.ci95[0]) / 2:.1f}" if metric.ci95 else ""
    return Text(half, style="dim"), Text("" if metric.chance is None else f"{metric.chance:.1f}")


__all__ = ["NoRuns", "beside_paper", "mixed", "print_card", "run_dirs_in"]
