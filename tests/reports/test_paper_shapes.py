"""Tables in the papers' shapes: TemporalBench's per-source and per-category tables (BA, in the
paper's order, under the paper's names), VELOCITI's runs x tests table (Table 2)."""
import csv
import json

from helpers import cli


def tb_record(idx, video, source, category, gt):
    options = {"A": f"true {video}", "B": f"neg {idx}"} if gt == "A" else {"A": f"neg {idx}", "B": f"true {video}"}
    return {"idx": idx, "video_name": f"short_video/{source}/{video}.mp4", "category": category, "dataset": source,
            "question": f"Which caption?\nA. {options['A']}\nB. {options['B']}", "GT": gt}


def csv_tables(path):
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    tables, current = {}, None
    for row in rows:
        if row and row[0] == "benchmark":
            current = row[5] if len(row) > 5 else "main"
        elif row and row[0] == "run":
            tables[current] = row[1:]
    return tables


def test_temporalbench_gives_one_table_per_source_and_one_per_category_in_the_papers_order(tmp_path):
    (tmp_path / "data").mkdir()
    # written in another order than the paper's, sources spelt as a release may spell them
    records = [tb_record("q0", "v0", "Oops", "Others", "A"), tb_record("q1", "v1", "COIN", "Action Type", "B"),
               tb_record("q2", "v2", "Movie_Description", "Action Order", "A"),
               tb_record("q3", "v3", "ActivityNet", "Event Order", "B"),
               tb_record("q4", "v3", "ActivityNet", "Action Frequency", "A")]
    (tmp_path / "data" / "temporalbench_short_qa.json").write_text(json.dumps(records))
    done = cli("run", "temporalbench", "--model", "random", "--blind", "--data", str(tmp_path / "data"), "--out",
               str(tmp_path / "run"), "--cache-dir", str(tmp_path / "c"), "--no-progress")
    assert done.returncode == 0, done.stderr
    done = cli("report", str(tmp_path / "run"), "--csv", str(tmp_path / "t.csv"))
    assert done.returncode == 0, done.stderr
    tables = csv_tables(tmp_path / "t.csv")
    assert list(tables) == ["main", "Tables 8 and 9: BA by source dataset", "Table 7: BA by category"]
    assert not any(c.startswith("category:") for c in tables["main"])
    # binary accuracy alone, a column per source as the paper names it
    assert tables["Tables 8 and 9: BA by source dataset"] == ["ActivityNet", "COIN", "Movie Description", "Oops"]
    assert tables["Table 7: BA by category"] == ["Action Order", "Action Frequency", "Action Type", "Event Order",
                                                 "Others"]
    # the run's own table lists its sections in the same order: sources, then categories
    rows = [line.split("│")[1].strip() for line in done.stdout.splitlines() if line.startswith("│ category:")]
    assert rows == [f"category:{name}" for name in ("ActivityNet", "COIN", "Movie_Description", "Oops", "Action Order",
                                                    "Action Frequency", "Action Type", "Event Order", "Others")]


def test_velociti_runs_side_by_side_by_test_with_ctrl_and_the_average(tmp_path):
    (tmp_path / "data").mkdir()
    with open(tmp_path / "data" / "velociti.jsonl", "w") as handle:
        for k, test in enumerate(("chrono", "control", "agent_bind", "chrono")):
            handle.write(json.dumps({"test_name": test, "video_id": f"v{k}", "pos": f"he sits {k}",
                                     "neg": f"he runs {k}"}) + "\n")
    for seed in ("1", "2"):
        done = cli("run", "velociti", "--model", "random", "--blind", "--seed", seed, "--data", str(tmp_path / "data"),
                   "--out", str(tmp_path / seed), "--cache-dir", str(tmp_path / "c"), "--no-progress")
        assert done.returncode == 0, done.stderr
    done = cli("report", str(tmp_path / "1"), str(tmp_path / "2"))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if "Table 2: StrictVLE by test" in line)
    header = [cell.strip() for cell in lines[start + 2].split("┃")[1:-1]]
    # the paper's test order and names, control first; the average over 2 of the 7 tests says so
    assert header == ["run", "Ctrl", "AgBind", "EvChr", "Avg (2 of 7 tests)"]
    body = [line for line in lines[start + 3:start + 12] if line.startswith("│ random")]
    assert len(body) == 2
