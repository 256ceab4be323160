"""Commands that read stored runs and load no model: ``score``, ``check`` and ``report``."""
from __future__ import annotations

import json
import os

import click

from ..core.paths import refuse_output_inside
from ..execution.stored import score_run
from ..measures.metrics import TIE_POLICIES
from .app import main
from .common import Failure, guard, reading_option


@main.command()
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--json", "as_json", is_flag=True)
@click.option("--tie-policy", type=click.Choice(TIE_POLICIES), default="strict", show_default=True)
@reading_option
@guard
def score(run_dir: str, as_json: bool, tie_policy: str, reading: str) -> None:
    """Recompute every metric from a run's stored answers (no model needed)."""
    report = score_run(run_dir, tie_policy=tie_policy, reading=reading)
    if as_json:
        click.echo(json.dumps(report.to_json(), indent=2, ensure_ascii=False))
        return
    from ..reports.report import load_scored, print_runs

    scored = load_scored(run_dir, reading)
    scored.report = report
    print_runs([scored])


@main.command()
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--no-plan", is_flag=True, help="do not compare with a fresh plan of the benchmark's files")
@guard
def check(run_dir: str, no_plan: bool) -> None:
    """Verify a stored run: every request answered once, no corrupt line, a readable configuration."""
    from ..commands.checking import check_run
    from ..core.outside import terminal_line

    problems, counts = check_run(run_dir, plan=not no_plan)
    summary = ", ".join(f"{v} {k}" for k, v in counts.items())
    if problems:
        for line in problems[:50]:
            click.echo(f"  {terminal_line(line, 400)}")  # an id from the data: no escape reaches the terminal
        raise Failure(f"{run_dir}: {len(problems)} problem(s) ({summary})")
    click.echo(f"{run_dir}: whole ({summary})")


@main.command()
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--html", "html_path", type=click.Path(dir_okay=False), help="one self-contained HTML report")
@click.option("--csv", "csv_path", type=click.Path(dir_okay=False), help="the paper tables as CSV")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), help="the paper tables as JSON")
@click.option("--latex", "latex_path", type=click.Path(dir_okay=False), help="the paper tables as LaTeX")
@click.option("--samples", default=200, show_default=True, help="items per run in the HTML sample browser")
@click.option("--no-thumbnails", is_flag=True, help="leave frame thumbnails out of the HTML report")
@reading_option
@guard
def report(run_dirs, html_path, csv_path, json_path, latex_path, samples, no_thumbnails, reading):
    """Tables of one or more runs, side by side; optionally an HTML report and exports. A folder
    of runs (what run all or a frames sweep writes) stands for its runs, led by one card: a row
    per run with its headline figures beside the paper's row for the same model."""
    from ..reports.card import mixed, print_card, run_dirs_in
    from ..reports.report import load_scored, make_console, print_runs
    from ..execution.store import RUN_FILES

    # Other files beside a run's own are harmless (a report.html kept with its run); its own are not.
    for written in (html_path, csv_path, json_path, latex_path):
        refuse_output_inside(written, [os.path.join(d, name) for d in run_dirs for name in RUN_FILES])
    for line in filter(None, map(mixed, run_dirs)):
        click.echo(f"timefoil: {line}", err=True)
    folders = [d for d in run_dirs if run_dirs_in(d) != [d]]
    run_dirs = [run for d in run_dirs for run in run_dirs_in(d)]
    runs = [load_scored(d, reading) for d in run_dirs]
    console = make_console()
    if folders:
        print_card(runs, console, title=f"card: {', '.join(folders)}")
    print_runs(runs, console, headlines=not folders)
    if csv_path or json_path or latex_path:
        from ..reports.html import paper_tables, write_table_csv, write_table_json, write_table_latex

        tables = paper_tables(runs)
        for path, writer in ((csv_path, write_table_csv), (json_path, write_table_json),
                             (latex_path, write_table_latex)):
            if path:
                writer(tables, path)
                click.echo(f"wrote {path}")
    if html_path:
        from ..reports.html import write_html

        write_html(list(run_dirs), html_path, limit=samples, thumbnails=not no_thumbnails, reading=reading)
        click.echo(f"wrote {html_path}")
