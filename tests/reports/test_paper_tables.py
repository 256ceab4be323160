"""Each paper table a benchmark declares, printed for two runs side by side in the paper's shape
(runs as rows, the paper's columns in its order under its names, its rows under them) alike in
the terminal, CSV, LaTeX, HTML and JSON; numbers pooled over the items named so beside the
averages over tests."""
import csv
import html
import json
import re

import pytest
from click.testing import CliRunner

from benchmark_files import tb_question, velociti_fixture
from timefoil import score_run
from timefoil.cli import main
from timefoil.reports.html.tables import latex_escape

TESTS = ("control", "agent_random", "agent_bind", "coref", "action_adv", "action_manner", "action_bind", "chrono")
BY_TEST = ["Ctrl", "AgRand", "AgBind", "AgCref", "ActAdv", "ActMan", "ActBind", "EvChr"]


def both(sections, metrics):
    return [f"{s} {m}" for s in sections for m in metrics]


# title -> (the columns' names, a quoted row and its numbers as the paper prints them)
TABLES = {
    "velociti · entailment · Table 2: StrictVLE by test": (
        BY_TEST + ["Avg"], "LLaVA-OneVision-7B", [81.6, 56.7, 32.9, 8.0, 29.7, 30.6, 36.4, 30.5, 32.1]),
    "velociti · entailment · Table 3: acc(pos) and acc(neg|pos)": (
        both(["Ctrl", "Avg"], ["acc(pos)", "acc(neg|pos)"]), "GPT-4o (subset)", [63.0, 100.0, 64.5, 72.3]),
    "velociti · entailment · Table 4: ClassicVLE by test": (
        BY_TEST + ["Avg"], "LLaVA-OneVision-72B", [99.4, 95.8, 83.3, 80.5, 84.2, 81.2, 78.4, 81.9, 83.6]),
    "velociti · entailment · Table 7: acc(pos) and acc(neg|pos) by test": (
        both(BY_TEST + ["Avg"], ["acc(pos)", "acc(neg|pos)"]), "Qwen2-VL-7B",
        [92.4, 91.5, 92.8, 42.1, 90.7, 14.9, 97.6, 6.6, 94.3, 18.9, 93.0, 18.8, 91.0, 18.1, 98.0, 0.4, 93.9, 17.1]),
    "velociti · similarity · Table 4: ClassicVLE (the similarity's accuracy) by test": (
        BY_TEST + ["Avg"], "SigLIP", [95.3, 79.0, 54.4, 50.4, 66.4, 55.0, 54.0, 48.2, 58.2]),
    "velociti · choice · Table 5: multiple choice, both orders": (
        both(["Ctrl", "Avg"], ["acc_A", "acc_B", "bias", "A∧B"]), "LLaVA-OneVision-7B",
        [96.0, 99.6, 3.6, 95.9, 28.7, 96.5, 67.8, 28.7]),
    "velociti · choice · Table 10: multiple choice by test": (
        both(BY_TEST[1:], ["bias", "A∧B"]), "GPT-4o (subset)",
        [4.1, 92.5, 4.7, 79.3, 3.4, 60.8, -10.1, 77.0, -7.0, 74.1, 2.0, 70.7, -60.8, 25.7]),
    "temporalbench · choice · Tables 8 and 9: BA by source dataset": (
        ["ActivityNet", "COIN", "Movie Description", "Oops"], None, []),
    "temporalbench · choice · Table 7: BA by category": (
        ["Action Order", "Action Frequency", "Event Order", "Others"], None, []),
}
# the metric behind each column, by the run's names
KEYS = {"Ctrl": "control", **dict(zip(BY_TEST[1:], TESTS[1:])), "Avg": "overall/average"}
ONE_METRIC = {"velociti · entailment · Table 2: StrictVLE by test": "StrictVLE",
              "velociti · entailment · Table 4: ClassicVLE by test": "ClassicVLE",
              "velociti · similarity · Table 4: ClassicVLE (the similarity's accuracy) by test": "accuracy"}


@pytest.fixture(scope="module")
def reported(tmp_path_factory):
    """Two runs (random, constant) of each benchmark and protocol, blind, and one report of all."""
    root = tmp_path_factory.mktemp("shapes")
    velociti_fixture(root / "velociti", [{"test_name": test, "video_id": f"v{k}{n}", "pos": f"he sits {k} {n}",
                                          "neg": f"he runs {k} {n}"} for k, test in enumerate(TESTS) for n in range(2)])
    (root / "tb").mkdir()
    records = []
    for v, (source, category) in enumerate([("Oops", "Others"), ("COIN", "Action Frequency"),
                                            ("Movie_Description", "Action Order"), ("ActivityNet", "Event Order")]):
        for k in range(2):
            record = tb_question(f"v{v}_{k}", f"short_video/{source}/v{v}.mp4", category, f"true {v}",
                                 f"negative {v} {k}", "AB"[k])
            records.append({**record, "dataset": source})
    (root / "tb" / "temporalbench_short_qa.json").write_text(json.dumps(records))
    runs = {}
    for benchmark, protocol, data in (("velociti", "entailment", "velociti"), ("velociti", "similarity", "velociti"),
                                      ("velociti", "choice", "velociti"), ("temporalbench", "choice", "tb")):
        for model in ("random", "constant"):
            out = str(root / f"{benchmark}-{protocol}-{model}")
            done = CliRunner().invoke(main, ["run", benchmark, "--model", model, "--protocol", protocol, "--blind",
                                             "--data", str(root / data), "--out", out, "--cache-dir",
                                             str(root / "cache"), "--no-progress"])
            assert done.exit_code == 0, done.output
            runs.setdefault((benchmark, protocol), []).append(out)
    files = {kind: str(root / f"tables.{kind}") for kind in ("csv", "tex", "html", "json")}
    done = CliRunner().invoke(main, ["report", *[d for group in runs.values() for d in group], "--csv", files["csv"],
                                     "--latex", files["tex"], "--html", files["html"], "--json", files["json"],
                                     "--no-thumbnails"])
    assert done.exit_code == 0, done.output
    return runs, done.output, files


def expected_rows(runs, title):
    """(label, the run's numbers for the table's columns) of both runs, as `score` gives them."""
    benchmark, protocol = title.split(" · ")[:2]
    headings = TABLES[title][0]
    out = []
    for run_dir in runs[(benchmark, protocol)]:
        metrics = {m.name: m.value for m in score_run(run_dir).metrics}
        cells = []
        for heading in headings:
            if benchmark == "temporalbench":  # BA alone; the source as the data spells it
                key = f"category:{'Movie_Description' if heading == 'Movie Description' else heading}/BA"
            else:  # "Ctrl" in a table of one metric, named in its title; "Ctrl acc(pos)" where it has several
                section, _, metric = heading.partition(" ")
                metric = metric or ONE_METRIC[title]
                key = f"{KEYS[section]} {metric}" if section == "Avg" else f"{KEYS[section]}/{metric}"
            cells.append("" if metrics.get(key) is None else f"{metrics[key]:.1f}")
        out.append(cells)
    return out


def terminal_tables(text):
    """title -> (column names below "run", {row label: its first line's cells})."""
    lines, found = text.splitlines(), {}
    for index, line in enumerate(lines):
        if not line.startswith("┏"):
            continue
        above = [lines[k].strip() for k in range(max(0, index - 2), index)]  # a title may wrap
        title = next((t for t in (" ".join(above), above[-1]) if t in TABLES), None)
        if title is None:
            continue
        end_head = next(k for k in range(index, len(lines)) if lines[k].startswith("┡"))
        heads = [[c.strip() for c in row.split("┃")[1:-1]] for row in lines[index + 1:end_head]]
        names = [" ".join(filter(None, parts)) for parts in zip(*heads)][1:]
        rows = {}
        for row in lines[end_head + 1:]:
            if row.startswith("└"):
                break
            cells = [c.strip() for c in row.split("│")[1:-1]]
            if cells[0]:
                rows[cells[0]] = cells[1:]
        found[title] = (names, rows)
    return found


def number(cell):
    """The value of a terminal cell ("42.9▲ ±12.5"), or "" for none."""
    match = re.match(r"-?\d+\.\d", cell)
    return match.group(0) if match else ""


def test_the_terminal_prints_each_paper_table_with_both_runs_and_the_papers_rows(reported):
    runs, output, _ = reported
    found = terminal_tables(output)
    assert list(found) == list(TABLES)  # every table, in the order the benchmarks declare them
    for title, (headings, label, numbers) in TABLES.items():
        names, rows = found[title]
        assert names == headings, title
        labels = [k for k in rows if not k.startswith("paper · ")]
        assert len(labels) == 2 and labels[0].startswith("random") and labels[1].startswith("constant"), title
        assert [[number(c) for c in rows[k]] for k in labels] == expected_rows(runs, title), title
        if label:
            assert [float(c) for c in rows[f"paper · {label}"]] == numbers, title
        else:  # TemporalBench's paper prints no number per source or category in the text timefoil holds
            assert not any(k.startswith("paper · ") for k in rows)


def test_the_exports_hold_the_same_tables(reported):
    runs, _, files = reported
    with open(files["csv"], newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    latex = open(files["tex"], encoding="utf-8").read()
    page = open(files["html"], encoding="utf-8").read()
    exported = {f"{t['benchmark']} · {t['protocol']} · {t['part']}": t for t in json.load(open(files["json"]))
                if t.get("part")}
    for title, (headings, label, numbers) in TABLES.items():
        caption = title.split(" · ", 2)[2]
        start = next(k for k, row in enumerate(rows) if row[:1] == ["benchmark"] and row[5:] == [caption])
        assert rows[start + 1] == ["run", *headings] and rows[start + 2][0] == "chance", title
        assert [row[1:] for row in rows[start + 3:start + 5]] == expected_rows(runs, title), title
        end = rows.index([], start)
        quoted = {row[0]: row[1:] for row in rows[start + 5:end]}
        assert all("(quoted from the paper" in name for name in quoted), title
        if label:
            source = caption.split(":")[0]
            assert [float(c) for c in quoted[f"{label} (quoted from the paper, {source})"]] == numbers, title
        assert f"% {latex_escape(title)}\n" in latex
        assert "Run & " + " & ".join(latex_escape(h) for h in headings) + r" \\" in latex, title
        section = page[page.index(f"<h3>{html.escape(title)}</h3>"):]
        section = section[:section.index("</section>")]
        heads = [html.unescape(h) for h in re.findall(r"<th[^>]*>([^<]*)</th>", section[:section.index("</thead>")])]
        if all(" " not in h or h in ("Movie Description", "Action Order", "Action Frequency", "Event Order")
               for h in headings):
            assert heads == ["run", *headings], title
        else:  # the sections over the metrics
            sections = list(dict.fromkeys(h.split(" ")[0] for h in headings))
            assert heads == ["run", *sections, *[h.split(" ", 1)[1] for h in headings]], title
        assert all(f'data-run="{html.escape(d)}"' in section for d in runs[tuple(title.split(" · ")[:2])])
        assert exported[title]["headings"] == headings


def test_pooled_numbers_are_named_so_beside_the_averages(reported):
    _, output, files = reported
    lines = output.splitlines()
    start = lines.index(next(line for line in lines if line.strip() == "velociti · entailment · overall, side by side"))
    heads = [c.strip() for c in lines[start + 2].split("┃")[1:-1]]
    assert heads == ["run", "average StrictVLE", "average ClassicVLE", "average acc(pos)", "average acc(neg|pos)",
                     "pooled StrictVLE", "pooled ClassicVLE", "pooled acc(pos)", "pooled acc(neg|pos)"]
    # a run's own table: the averages on a row of their own, the pooled numbers on theirs
    assert {"│ average over tests", "│ pooled (without control)"} <= {line[:26].rstrip() for line in lines}
    with open(files["csv"], newline="", encoding="utf-8") as handle:
        header = next(row for row in csv.reader(handle) if row[:1] == ["run"])  # VELOCITI entailment's main table
    assert "pooled (without control)/StrictVLE" in header and "overall/average StrictVLE" in header
    assert "overall/StrictVLE" not in header
