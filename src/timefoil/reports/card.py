"""One card for a model's runs (``timefoil report OUT`` on what ``run all`` wrote): a row per run
with its benchmark's headline figures, interval and chance, beside the paper's published row for
the same model where the paper has one; the per-benchmark tables follow it."""
from __future__ import annotations

import os

from rich.console import Console

from ..execution.store import CONFIG
from .fit import print_table
from .headline import headline
from .report import ScoredRun, headline_table, paper_numbers


class NoRuns(ValueError):
    """A folder that holds no run, itself or beneath."""


def run_dirs_in(path: str, depth: int = 2) -> list[str]:
    """``path`` if it is a run, else the runs beneath it (a sweep's values, run all's benchmarks),
    sorted; a folder holding none is refused naming what was looked for."""
    if os.path.isfile(os.path.join(path, CONFIG)):
        return [path]
    found = []
    for root, folders, _ in os.walk(path):
        if root[len(path):].count(os.sep) >= depth:
            folders[:] = []
            continue
        for folder in sorted(folders):
            if os.path.isfile(os.path.join(root, folder, CONFIG)):
                found.append(os.path.join(root, folder))
        folders[:] = [f for f in sorted(folders) if os.path.join(root, f) not in found]
    if not found:
        raise NoRuns(f"{path} is not a run directory (no {CONFIG}) and holds none in its folders")
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


def print_card(runs: list[ScoredRun], console: Console, title: str = "card") -> None:
    rows = [(run.label, f"{run.report.benchmark} · {run.report.protocol}", run) for run in runs]
    print_table(console, headline_table(rows, title, papers=[beside_paper(run) for run in runs]), keep=3)


__all__ = ["NoRuns", "beside_paper", "print_card", "run_dirs_in"]
