"""Vinoground: its pairs, published orders and concatenations, its chain of thought and quoted rows."""
import json
import os
from collections import Counter
import pytest
from timefoil.benchmarks import DataError, get_benchmark
from timefoil.execution.offline import answer_offline
from timefoil.models.requests import Answer
from timefoil.scoring import score_records
from benchmark_files import (vinoground_with_videos, AlwaysA, vinoground_fixture)
from helpers import cli
import re
import numpy as np
from timefoil.models import MODELS, Model, ModelLoader
from timefoil import RunConfig, run
from timefoil.video import write_video


def test_vinoground_loader_groups_categories_and_published_orders(tmp_path):
    items = get_benchmark("vinoground").load(vinoground_fixture(tmp_path))
    assert len(items) == 8 and Counter(i.role for i in items) == {"text": 4, "video": 4}
    first = [i for i in items if i.group_id == "0"]
    assert all(i.categories == ("action", "cyclical", "spatial") for i in first)
    video_pos = next(i for i in first if i.id == "0_pos:video")
    assert video_pos.texts == ("a dog runs then 0 sits",) and video_pos.target_position == 1
    records = answer_offline(items, "choice", AlwaysA(), prompts=get_benchmark("vinoground").prompts)
    by_id = {r["item"]["id"]: r for r in records}
    assert by_id["0_pos:video"]["request"]["text"] == "Q video 0 pos"
    # the true (pos) video is shown second, as the published GT "B" says
    assert by_id["0_pos:video"]["request"]["video"]["parts"][1]["path"].endswith("0_pos.mp4")
    report = score_records(records, benchmark="vinoground", model="a", protocol="choice")
    # "A" is right for pos text questions (GT A) and neg video questions (GT A) only
    assert report.get("overall/text").value == 0.0 and report.get("overall/video").value == 0.0
    assert report.get("overall/accuracy").value == 50.0
    assert report.get("category:cyclical/accuracy").n == 4


def test_vinoground_without_published_orders_is_balanced(tmp_path):
    items = get_benchmark("vinoground").load(vinoground_fixture(tmp_path, pairs=50, orders=False))
    records = answer_offline(items, "choice", AlwaysA())
    first = Counter(r["request"]["position"] for r in records)
    assert first[0] == first[1] == 100


def test_vinoground_missing_column_is_named(tmp_path):
    (tmp_path / "vinoground.csv").write_text("index,major,minor,pos_cap\n0,action,,a dog runs\n")
    with pytest.raises(DataError, match=r"vinoground.csv: row 2: missing field 'neg_cap'"):
        get_benchmark("vinoground").load(str(tmp_path))


def test_vinoground_end_to_end_and_prepare_reports_missing(tmp_path):


    root = vinoground_fixture(tmp_path / "data", pairs=2)  # the run goes beside the data, never into it
    os.makedirs(os.path.join(root, "vinoground_videos"))
    for n in range(2):
        for k, s in enumerate(("pos", "neg")):
            frames = [np.full((16, 16, 3), 40 * k + 10 * t, np.uint8) for t in range(12)]
            write_video(os.path.join(root, "vinoground_videos", f"{n}_{s}.mp4"), frames, 6)
    result = cli("run", "vinoground", "--model", "random", "--data", root, "--frames", "5", "--out",
                 str(tmp_path / "run"), "--cache-dir", str(tmp_path / "cache"))
    assert result.returncode == 0, result.stderr
    scored = json.loads(cli("score", str(tmp_path / "run"), "--json").stdout)
    names = {m["name"] for m in scored["metrics"]}
    assert {"overall/text", "overall/video", "overall/group", "category:spatial/group"} <= names
    assert scored["errors"] == 0 and scored["items"] == 8
    video = next(m for m in scored["metrics"] if m["name"] == "overall/video")
    assert "warning" not in video and video["chance"] == 25.0
    prepared = cli("prepare", "vinoground", "--dest", root, "--no-download")
    assert "4 videos referenced, 0 missing" in prepared.stdout
    os.remove(os.path.join(root, "vinoground_videos", "1_neg.mp4"))
    prepared = cli("prepare", "vinoground", "--dest", root, "--no-download")
    assert "1 missing" in prepared.stdout and "1_neg.mp4" in prepared.stdout


def test_vinoground_published_concatenations_are_accepted(tmp_path):
    root = vinoground_fixture(tmp_path, pairs=1)
    built = get_benchmark("vinoground").load(root)
    published = get_benchmark("vinoground").load(root, concatenated="published")
    records = {r["item"]["id"]: r for r in answer_offline(published, "choice", AlwaysA())}
    assert records["0_pos:video"]["request"]["video"]["path"].endswith("vinoground_videos_concated/0.mp4")
    assert "parts" in answer_offline(built, "choice", AlwaysA())[1]["request"]["video"]
    with pytest.raises(DataError, match="concatenated must be"):
        get_benchmark("vinoground").load(root, concatenated="yes")


COT = "\nplease think step by step"




class Reasoner(Model):
    """Reasons at length, mentioning both letters, and concludes B."""

    name = "reasoner"

    def __init__(self):
        self.seen = []

    def answer_generation(self, requests, frames):
        self.seen += requests
        return [Answer(raw=f"A shows one thing and B another ({r.key()[:6]}).\nSo the answer is B.") for r in requests]


class SaysA(Model):
    name = "says-a"

    def __init__(self, asked):
        self.asked = asked

    def answer_generation(self, requests, frames):
        self.asked.extend(re.findall(r"====(.*?)====", r.text, re.S)[-1] for r in requests)
        return [Answer(raw="A") for _ in requests]


@pytest.fixture()
def vinoground(tmp_path):
    os.makedirs(tmp_path / "vino")
    return vinoground_with_videos(tmp_path / "vino")


def test_vinoground_cot_asks_every_question_with_the_suffix_and_judges_every_answer(vinoground, tmp_path,
                                                                                   monkeypatch):
    asked = []
    monkeypatch.setitem(MODELS, "says-a", ModelLoader("says-a", lambda arg, options, cache_dir: SaysA(asked),
                                                      "test judge"))
    model = Reasoner()
    config = RunConfig("vinoground", "reasoner", data_dir=vinoground, variant="cot", judge="says-a")
    report = run(config, str(tmp_path / "cot"), cache_dir=str(tmp_path / "c"), model=model, progress=False)
    assert len(model.seen) == 8  # the 8 questions of two pairs, each asked once (published orders)
    assert all(r.text.endswith(COT) and r.max_tokens == 1024 and r.kind == "generation" for r in model.seen)
    assert {r.text[:-len(COT)] for r in model.seen} == {f"Q {kind} {n} {s}" for kind in ("text", "video")
                                                         for n in range(2) for s in ("pos", "neg")}
    records = [json.loads(line) for line in open(tmp_path / "cot" / "items.jsonl")]
    assert all(r["judge"]["raw"] == "A" and r["parsed"]["value"] == "A" for r in records)
    assert all(r["answer"]["raw"].endswith("So the answer is B.") for r in records)  # the reasoning is kept
    assert len(asked) == 8 and all(text.endswith("So the answer is B.") for text in asked)  # parseable ones too
    # "A" is right where the published GT is A: pos text questions and neg video questions.
    assert report.get("overall/accuracy").value == 50.0 and report.parse_failures == 0


def test_cot_without_a_judge_reads_the_conclusion(vinoground, tmp_path):
    report = run(RunConfig("vinoground", "reasoner", data_dir=vinoground, variant="cot", max_tokens=300),
                 str(tmp_path / "cot"), cache_dir=str(tmp_path / "c"), model=Reasoner(), progress=False)
    records = [json.loads(line) for line in open(tmp_path / "cot" / "items.jsonl")]
    assert all(r["parsed"]["value"] == "B" and r["judge"] is None for r in records)  # not the first "A"
    assert {r["request"]["max_tokens"] for r in records} == {300}
    # "B" is right for neg text questions and pos video questions: 4 of 8
    assert report.get("overall/accuracy").value == 50.0 and report.get("overall/group").value == 0.0


# -- reference rows -----------------------------------------------------------------------------
def test_the_papers_rows_are_quoted_under_a_runs_tables(vinoground, tmp_path):
    import csv

    from click.testing import CliRunner

    from timefoil.cli import main

    cli, out = CliRunner(), str(tmp_path / "run")
    result = cli.invoke(main, ["run", "vinoground", "--model", "random", "--data", vinoground, "--frames", "5",
                               "--out", out, "--cache-dir", str(tmp_path / "c"), "--no-progress"])
    assert result.exit_code == 0, result.output
    quoted = next(line for line in result.output.splitlines() if "paper · GPT-4o (32 frames)" in line)
    assert ["54.0", "38.2", "24.6"] == [c for c in re.findall(r"\d+\.\d", quoted)]
    assert "VideoCLIP" not in result.output  # a similarity row, and this run asked choice questions
    paths = {k: str(tmp_path / f"t.{k}") for k in ("csv", "tex", "html", "json")}
    result = cli.invoke(main, ["report", out, "--csv", paths["csv"], "--latex", paths["tex"], "--html",
                               paths["html"], "--json", paths["json"], "--no-thumbnails"])
    assert result.exit_code == 0, result.output
    rows = list(csv.reader(open(paths["csv"])))
    header = next(r for r in rows if r and r[0] == "run")
    human = next(r for r in rows if r and r[0] == "human (quoted from the paper, Table 2)")
    assert human[header.index("overall/group")] == "90.0" and human[header.index("overall/text")] == "93.4"
    assert r"\textit{human (paper, Table 2)}" in open(paths["tex"]).read()
    assert 'class="quoted"' in open(paths["html"]).read()
    tables = json.load(open(paths["json"]))
    human = {"label": "human", "source": "Table 2", "origin": "paper",
             "values": {"overall/text": 93.4, "overall/video": 94.0, "overall/group": 90.0}}
    assert human in tables[0]["quoted_from_paper"]
