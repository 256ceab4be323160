"""`--reading` on the command line: the released scorer's number beside the meant one in the
terminal, `score --json`, the exports and the HTML report, from stored answers alone."""
import csv
import json
import os

import pytest

from helpers import cli

# VELOCITI multiple choice, each pair asked with the true caption as A, then as B; the answers
# are written over the stored ones. metrics.py keeps i1 and i4 only (first token exactly A or B).
ANSWERS = {"i1": ("A", "B"), "i2": ("A.", "B."), "i3": ("Answer: A", "Answer: B"), "i4": ("B", "B"),
           "i5": ("I cannot tell", "A")}


@pytest.fixture(scope="module")
def mc_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("reading")
    os.makedirs(root / "data")
    with open(root / "data" / "velociti.jsonl", "w") as handle:
        for k in range(1, 6):
            handle.write(json.dumps({"test_name": "chrono", "id": f"i{k}", "video_id": f"v{k}",
                                     "pos": f"he sits then runs {k}", "neg": f"he runs then sits {k}"}) + "\n")
    run = root / "run"
    done = cli("run", "velociti", "--model", "random", "--data", str(root / "data"), "--blind", "--protocol",
               "choice", "--out", str(run), "--cache-dir", str(root / "cache"), "--no-progress")
    assert done.returncode == 0, done.stderr
    with open(run / "items.jsonl", encoding="utf-8") as handle:
        records = [json.loads(line) for line in handle]
    assert len(records) == 10
    for record in records:
        record["answer"] = {"raw": ANSWERS[record["item"]["id"]][record["request"]["position"]]}
    with open(run / "items.jsonl", "w", encoding="utf-8") as handle:
        handle.writelines(json.dumps(r) + "\n" for r in records)
    return run


def metrics_of(done):
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    return data, {m["name"].removeprefix("overall/"): m for m in data["metrics"]}


def test_score_json_gives_each_reading_with_the_other_beside(mc_run):
    released, by_name = metrics_of(cli("score", str(mc_run), "--json", "--reading", "released"))
    assert released["reading"] == "released" and released["items"] == 2
    assert released["released"]["dropped"] == 3 and released["released"]["read_differently"] == 4
    assert "metrics.py:29-44" in released["released"]["source"]
    assert [(by_name[f"acc_{s}"]["value"], by_name[f"acc_{s}"]["n"]) for s in "AB"] == [(50.0, 2), (100.0, 2)]
    assert by_name["A∧B"]["chance"] == 25.0 and by_name["A∧B"]["p_value"] == pytest.approx(7 / 16)
    assert by_name["A∧B"]["meant"]["value"] == 60.0 and by_name["A∧B"]["meant"]["n"] == 5
    meant, by_name = metrics_of(cli("score", str(mc_run), "--json"))
    assert meant["reading"] == "meant" and meant["items"] == 5
    beside = by_name["acc_A"]["released"]  # 1 of 2 pairs at chance 1/2: P(X >= 1) = 3/4
    assert by_name["acc_A"]["value"] == 60.0 and (beside["value"], beside["n"], beside["chance"]) == (50.0, 2, 50.0)
    assert beside["p_value"] == pytest.approx(0.75)


def test_the_terminal_shows_both_numbers_and_what_was_read_otherwise(mc_run):
    done = cli("score", str(mc_run))
    assert done.returncode == 0, done.stderr
    assert "released 50.0 · n 2" in done.stdout  # acc_A and A∧B under the released rule
    assert "read as meant · released rule: 4 answers read otherwise than meant, 3 items dropped" in done.stdout
    done = cli("report", str(mc_run), "--reading", "released")
    assert done.returncode == 0, done.stderr
    assert "meant 60.0 · n 5" in done.stdout and "read as released" in done.stdout


def test_exports_and_html_carry_the_other_reading(mc_run, tmp_path):
    out = tmp_path / "t.csv"
    done = cli("report", str(mc_run), "--csv", str(out), "--latex", str(tmp_path / "t.tex"),
               "--html", str(tmp_path / "r.html"), "--no-thumbnails")
    assert done.returncode == 0, done.stderr
    with open(out, newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    header = next(r for r in rows if r and r[0] == "run")
    other = next(r for r in rows if r and "released reading" in r[0])
    assert "3 items dropped" in other[0]
    assert other[header.index("overall/acc_A")] == "50.0 (n 2)"
    assert other[header.index("overall/acc_B")] == "100.0 (n 2)"
    with open(tmp_path / "t.tex", encoding="utf-8") as handle:
        assert "released reading" in handle.read()
    with open(tmp_path / "r.html", encoding="utf-8") as handle:
        page = handle.read()
    assert 'class="other"' in page and "released 50.0" in page and "3 items dropped" in page


def test_run_resumed_prints_its_tables_under_the_reading_asked(mc_run, tmp_path):
    """Every request already answered: `run` asks nothing and prints the released reading."""
    data = str(mc_run.parent / "data")
    done = cli("run", "velociti", "--model", "random", "--data", data, "--blind", "--protocol", "choice",
               "--out", str(mc_run), "--cache-dir", str(tmp_path / "cache"), "--no-progress", "--reading", "released")
    assert done.returncode == 0, done.stderr
    assert "meant 60.0 · n 5" in done.stdout and "read as released" in done.stdout
