"""The card and the tables at 80, 100 and 120 columns: each headline figure on the line of its
own label (a label that wraps makes its own row taller, never another's), tables stacked rather
than split into pieces that repeat the model spec, the model named once, and a suite listed in
the papers' order however its folders sort."""
import io
import re

import pytest
from click.testing import CliRunner
from rich.console import Console

from benchmark_files import five_benchmarks
from timefoil.benchmarks import PAPERS
from timefoil.cli import main
from timefoil.reports.card import print_card, run_dirs_in
from timefoil.reports.headline import headline
from timefoil.reports.report import load_scored, print_runs, split_name, value_text

FIGURE = r"(?P<value>-?\d+\.\d[▲▼]?|— \(\d+ / \d+ unread\)|–)"


@pytest.fixture(scope="module")
def papers_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("card")
    data = five_benchmarks(root / "data")
    # choice where the papers allow it: four headline figures a run, under labels long enough to wrap
    done = CliRunner().invoke(main, ["run", "all", "--model", "random", "--data-root", data, "--out",
                                     str(root / "out"), "--cache-dir", str(root / "cache"), "--no-progress",
                                     "--bench-arg", "vilma.protocol=choice", "--bench-arg", "velociti.protocol=choice"])
    assert done.exit_code == 0, done.output
    return str(root / "out")


def printed(width: int, draw) -> str:
    buffer = io.StringIO()
    draw(Console(file=buffer, width=width, force_terminal=False, color_system=None))
    return buffer.getvalue()


@pytest.mark.parametrize("width", [80, 100, 120])
def test_each_figure_of_the_card_stands_on_its_own_labels_line(papers_run, width):
    runs = [load_scored(d) for d in run_dirs_in(papers_run)]
    text = printed(width, lambda console: print_card(runs, console, title="card"))
    lines = text.splitlines()
    assert max(len(line.rstrip()) for line in lines) <= min(width, 100)
    assert lines[0].strip() == "card · model random"  # the model once, in the title
    header = next(line for line in lines if " value " in f" {line} ")
    start = header.index("headline")  # the labels' column: left-aligned there
    end = header.index("value") + len("value")  # the value column's right edge: values are right-aligned there
    expected = [(split_name(name)[1], value_text(next(m for m in run.report.metrics if m.name == name)).plain)
                for run in runs for name in headline(run.report)]
    figures = [(line, line[:end]) for line in lines[lines.index(header) + 2:] if line[:end].strip()
               and re.search(FIGURE + "$", line[:end].rstrip())]
    assert len(figures) == len(expected), text
    for (line, left), (label, value) in zip(figures, expected):
        assert left.rstrip().endswith(value), (line, value)
        cell = left.rstrip()[:-len(value)][start:].strip()  # what the labels' column holds on this line
        assert cell and label.startswith(cell), (width, line, label)  # its own label's first line


def test_a_suite_is_listed_in_the_papers_order_whatever_its_folders_sort(papers_run):
    # folders sort temporalbench, velociti, vilma, vinoground, vitatecs; the papers' order is another
    assert [load_scored(d).report.benchmark for d in run_dirs_in(papers_run)] == list(PAPERS)
    shown = CliRunner().invoke(main, ["report", papers_run])
    assert shown.exit_code == 0, shown.output
    titles = [line.split(" · ")[0] for line in shown.output.splitlines()
              if re.match(r"^(\w+) · \w+ · \d", line)]
    assert list(dict.fromkeys(titles)) == list(PAPERS)


def test_tables_at_80_columns_are_stacked_whole_and_name_the_model_once(papers_run):
    runs = [load_scored(d) for d in run_dirs_in(papers_run)]
    text = printed(80, lambda console: print_runs(runs, console, headlines=False))
    assert max(len(line.rstrip()) for line in text.splitlines()) <= 80
    assert "…" not in text and not re.search(r"\(\d+ of \d+\)", text)  # no table in pieces
    assert text.splitlines()[0].strip() == "model random"
    titles = [line for line in text.splitlines() if re.match(r"^\w+ · \w+ · ", line)]
    assert titles and not any("random" in line for line in titles)  # not in every title again
    # VELOCITI's run table (8 metric columns) stacked: its StrictVLE per test beside its own test
    velociti = next(run for run in runs if run.report.benchmark == "velociti")
    for metric in [m for m in velociti.report.metrics if re.fullmatch(r"(agent_bind|chrono|coref)/StrictVLE",
                                                                         m.name)]:
        section = split_name(metric.name)[0]
        row = re.search(rf"│ {section} +│ +\d+ │ StrictVLE +│ +(\S+)", text)
        assert row and row.group(1) == f"{metric.value:.1f}", section
