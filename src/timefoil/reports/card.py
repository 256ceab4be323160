"""One card for a model's runs (``timefoil report OUT`` on what ``run all`` wrote): a row per run
with its benchmark's headline figures, interval and chance, beside the paper's published row for
the same model where the paper has one; the per-benchmark tables follow it."""
from __future__ import annotations

import os

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..execution.store import CONFIG
from ..measures.stats import unread_of
from .headline import headline
from .report import ScoredRun, paper_numbers, split_name, value_text


class NoRuns(ValueError):
    """A folder that holds no run, itself or beneath."""


def run_dirs_in(path: str, depth: int = 2) -> list[str]:
    """``path`` if it is a run, else the runs beneath it (a sweep's values, run all's benchmarks),
    sorted; a folder holding none is refused naming what was looked for. A run that also holds
    runs in its folders (a one-benchmark run written at a suite's root) stands with them, first:
    ``mixed`` says so."""
    beneath = _beneath(path, depth)
    if os.path.isfile(os.path.join(path, CONFIG)):
        return [path, *beneath]
    if not beneath:
        raise NoRuns(f"{path} is not a run directory (no {CONFIG}) and holds none in its folders")
    return beneath


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
    """One row per run: its benchmark, the headline figure (the figures shown beside it on the
    lines under it) with its ± and chance, and the paper's number for the same model on the same
    line; whose row that number is goes under the table. The model is named once, in the title,
    where every run has the same one."""
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
        cells = [f"{report.benchmark} · {report.protocol}", run.sampling,
                 "\n".join(split_name(m.name)[1] for m in shown) or "–",
                 _lines([value_text(m) if m.value is not None else Text("–", style="dim") for m in shown]),
                 _lines([Text(f"{(m.ci95[1] - m.ci95[0]) / 2:.1f}" if m.ci95 and not unread_of(m) else "",
                              style="dim") for m in shown]),
                 _lines([Text("" if m.chance is None or unread_of(m) else f"{m.chance:.1f}") for m in shown]),
                 "\n".join(numbers[:len(shown)]) or "–"]
        table.add_row(*([report.model] if len(models) > 1 else []), *cells)
        if row != "–":
            whose.append(f"published, {report.benchmark} · {report.protocol}: {row}")  # the row says where
    width = min(console.width, CARD_WIDTH)
    console.print(table, width=width)
    for line in whose:  # wider than a cell: under the table, not beside it
        console.print(line, style="cyan", markup=False, width=width)


def _lines(texts: list[Text]) -> Text:
    return Text("\n").join(texts) if texts else Text("–", style="dim")


__all__ = ["NoRuns", "beside_paper", "mixed", "print_card", "run_dirs_in"]
