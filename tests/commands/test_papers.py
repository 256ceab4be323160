"""The five papers in one command: one model load for all of them, runs equal to separate `run`
commands, a Ctrl-C in the third benchmark resumed with nothing asked twice, and a missing
benchmark skipped in one line with a non-zero exit."""
import json
import os
import shutil

import pytest
from click.testing import CliRunner

from benchmark_files import PAPER_NAMES, five_benchmarks
from timefoil.cli import main
from timefoil.cli.entry import Interrupted
from timefoil.models import MODELS, ModelLoader
from timefoil.models.reference import RandomModel

LOADS: list[str] = []
ASKED: list[str] = []
STOP_AT = {"path": None}  # a video path part: the first batch that shows one raises KeyboardInterrupt, once


class Counted(RandomModel):
    """The chance model, counting its loads and every request it answers."""

    name = "counted"

    def answer(self, requests, frames):
        paths = [r.video.key() if r.video else "" for r in requests]
        if STOP_AT["path"] and any(STOP_AT["path"] in p for p in paths):
            STOP_AT["path"] = None
            raise KeyboardInterrupt
        answers = super().answer(requests, frames)
        ASKED.extend(r.key() for r in requests)
        return answers


@pytest.fixture(autouse=True)
def counted_model():
    MODELS.register(ModelLoader("counted", lambda arg, options, cache_dir: LOADS.append(arg) or Counted(), "test"))
    LOADS.clear()
    ASKED.clear()
    yield
    MODELS.pop("counted")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return five_benchmarks(tmp_path_factory.mktemp("papers"))


def timefoil(*args):
    """The command in this process (a run without its progress bar); a Ctrl-C is returned as the
    exception the entry point turns into exit 130."""
    try:
        return CliRunner().invoke(main, [*args, *(["--no-progress"] if args[0] == "run" else [])])
    except Interrupted as interrupted:
        return interrupted


def stored(run_dir):
    with open(os.path.join(run_dir, "items.jsonl"), encoding="utf-8") as handle:
        records = [json.loads(line) for line in handle]
    return sorted((r["id"], json.dumps({k: v for k, v in r["answer"].items() if k != "latency"}, sort_keys=True))
                  for r in records)


def scores(run_dir):
    done = timefoil("score", str(run_dir), "--json")
    assert done.exit_code == 0, done.output
    return json.loads(done.output)["metrics"]


def test_all_runs_the_five_papers_with_one_load_equal_to_five_separate_runs(data, tmp_path):
    done = timefoil("run", "all", "--model", "counted", "--data-root", data, "--out", str(tmp_path / "all"),
                    "--cache-dir", str(tmp_path / "c1"))
    assert done.exit_code == 0, done.output
    assert len(LOADS) == 1
    lines = [line.strip() for line in done.output.splitlines()]
    card = lines.index(f"card: {tmp_path / 'all'}")  # after every run's tables: the card ends the output
    assert card > max(i for i, line in enumerate(lines) if line.startswith("vitatecs · similarity · "))
    folders = sorted(os.listdir(tmp_path / "all"))
    assert folders == ["temporalbench-choice", "velociti-entailment", "vilma-similarity", "vinoground-choice",
                       "vitatecs-similarity"]
    asked_together = sorted(ASKED)
    LOADS.clear()
    ASKED.clear()
    for folder in folders:
        benchmark = folder.split("-")[0]
        alone = timefoil("run", benchmark, "--model", "counted", "--data", os.path.join(data, benchmark), "--out",
                         str(tmp_path / "alone" / folder), "--cache-dir", str(tmp_path / "c2"))
        assert alone.exit_code == 0, alone.output
        assert stored(tmp_path / "all" / folder) == stored(tmp_path / "alone" / folder)
        assert scores(tmp_path / "all" / folder) == scores(tmp_path / "alone" / folder)
    assert len(LOADS) == 5 and sorted(ASKED) == asked_together


def test_ctrl_c_in_the_third_benchmark_then_the_same_command_finishes_asking_nothing_twice(data, tmp_path):
    command = ["run", "all", "--model", "counted", "--data-root", data, "--out", str(tmp_path / "out"),
               "--cache-dir", str(tmp_path / "cache")]
    STOP_AT["path"] = os.path.join(data, "vitatecs")  # vinoground, temporalbench, then vitatecs
    assert isinstance(timefoil(*command), Interrupted)  # exit 130 from the entry point
    assert sorted(os.listdir(tmp_path / "out")) == ["temporalbench-choice", "vinoground-choice", "vitatecs-similarity"]
    again = timefoil(*command)
    assert again.exit_code == 0, again.output
    assert len(ASKED) == len(set(ASKED))  # every request answered once over both commands
    for name in PAPER_NAMES:
        folder = next(f for f in os.listdir(tmp_path / "out") if f.startswith(name))
        records = stored(tmp_path / "out" / folder)
        assert records and len(records) == len({i for i, _ in records})
    third = timefoil("run", "all", "--model", "counted", "--data-root", data, "--out", str(tmp_path / "out"),
                     "--cache-dir", str(tmp_path / "other-cache"))
    assert third.exit_code == 0 and len(ASKED) == len(set(ASKED))  # finished runs kept: none asked again


def test_a_missing_benchmark_is_skipped_in_one_line_and_the_others_finish(data, tmp_path):
    partial = tmp_path / "data"
    shutil.copytree(data, partial)
    shutil.rmtree(partial / "vilma")
    done = timefoil("run", "all", "--model", "counted", "--data-root", str(partial), "--out", str(tmp_path / "out"),
                    "--cache-dir", str(tmp_path / "cache"))
    assert done.exit_code == 1
    lines = [line for line in done.output.splitlines() if "vilma" in line]
    assert f"timefoil: skipped vilma: no data in {partial / 'vilma'}; get it with: timefoil prepare vilma --dest " \
           f"{partial / 'vilma'}" in lines
    assert done.output.strip().splitlines()[-1] == \
        f"Error: 1 of 5 benchmarks skipped (vilma); the others are in {tmp_path / 'out'}"
    assert len(os.listdir(tmp_path / "out")) == 4 and len(LOADS) == 1


def test_options_for_one_benchmark_go_by_its_name(data, tmp_path):
    done = timefoil("run", "velociti,vinoground", "--model", "counted", "--data-root", data, "--out",
                    str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache"), "--bench-arg",
                    "velociti.protocol=choice")
    assert done.exit_code == 0, done.output
    assert sorted(os.listdir(tmp_path / "out")) == ["velociti-choice", "vinoground-choice"]
    refused = timefoil("run", "velociti,vinoground", "--model", "counted", "--data-root", data, "--out",
                       str(tmp_path / "o2"), "--bench-arg", "vilma.protocol=choice")
    assert refused.exit_code == 1 and "'vilma' is not one of this run's benchmarks" in refused.output


def test_prepare_all_checks_each_folder_and_says_where_missing_files_come_from(data, tmp_path):
    ready = CliRunner().invoke(main, ["prepare", "all", "--dest", data, "--no-download"])
    assert ready.exit_code == 0, ready.output
    assert [line for line in ready.output.splitlines() if line.endswith(" missing")] == [
        "4 videos referenced, 0 missing", "2 videos referenced, 0 missing", "6 videos referenced, 0 missing",
        "3 videos referenced, 0 missing", "3 videos referenced, 0 missing"]
    partial = tmp_path / "data"
    shutil.copytree(data, partial)
    shutil.rmtree(partial / "vilma")
    shutil.rmtree(partial / "velociti")
    done = CliRunner().invoke(main, ["prepare", "all", "--dest", str(partial), "--no-download"])
    assert done.exit_code == 1
    assert "of github.com/ilkerkesen/ViLMA, into this folder" in done.output
    assert "they come from the Hugging Face dataset katha-ai-iiith/VELOCITI: timefoil prepare velociti" in done.output
    assert done.output.strip().splitlines()[-1] == ("Error: 2 of 5 benchmarks not ready (velociti, vilma): each line "
                                                    "above says where its files come from")


def test_report_on_the_folder_prints_one_card_beside_the_papers_rows_for_the_same_model(data, tmp_path):
    """A model whose name has every word of a paper row's model ("LLaVA-OneVision-7B") is shown
    beside that row, labelled with where it is printed: VELOCITI's Table 2 average StrictVLE 32.1 (paper),
    TemporalBench's MBA 13.31 (released README)."""
    MODELS.register(ModelLoader("llava-onevision-7b", lambda arg, options, cache_dir: Counted(), "test"))
    try:
        done = timefoil("run", "all", "--model", "llava-onevision-7b", "--data-root", data, "--out",
                        str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache"))
        assert done.exit_code == 0, done.output
        card = CliRunner().invoke(main, ["report", str(tmp_path / "out"), "--html", str(tmp_path / "r.html"),
                                         "--no-thumbnails"], terminal_width=200)
    finally:
        MODELS.pop("llava-onevision-7b")
    assert card.exit_code == 0, card.output
    lines = card.output.splitlines()
    assert lines[0].strip() == f"card: {tmp_path / 'out'}"
    rows = lines[:lines.index(next(line for line in lines if line.startswith("temporalbench · choice")))]
    flat = " ".join(" ".join(rows).split())
    for benchmark, protocol in (("temporalbench", "choice"), ("velociti", "entailment"), ("vilma", "similarity"),
                                ("vinoground", "choice"), ("vitatecs", "similarity")):
        assert f"{benchmark} · {protocol}" in flat
    velociti = next(line for line in rows if "velociti · entailment" in line)
    temporalbench = next(line for line in rows if "temporalbench · choice" in line)
    assert velociti.split()[-5:] == ["32.1", "LLaVA-OneVision-7B", "(paper,", "Table", "2)"]
    # TemporalBench's row for this model is printed in its repository's README, not in the paper
    assert temporalbench.split()[-6:] == ["13.31", "LLaVA-OneVision-7B,", "1", "frame", "(released", "README)"]
    assert "headline figures" not in [line.strip() for line in lines]  # the card stands for that table
    scored = json.loads(CliRunner().invoke(main, ["score", str(tmp_path / "out" / "velociti-entailment"),
                                                  "--json"]).output)
    headline = next(m for m in scored["metrics"] if m["name"] == scored["headline"][0])
    assert f"{headline['value']:.1f}" in " ".join(line for line in rows if "velociti" in line)
    page = (tmp_path / "r.html").read_text()
    assert page.count('data-run="') >= 5 and "32.1" in page


def test_report_on_a_folder_without_runs_says_so(tmp_path):
    (tmp_path / "empty" / "sub").mkdir(parents=True)
    done = CliRunner().invoke(main, ["report", str(tmp_path / "empty")])
    assert done.exit_code == 1
    assert done.output.strip().endswith("is not a run directory (no run.json) and holds none in its folders")
