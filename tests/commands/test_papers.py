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


def headline_metric(run_dir):
    scored = json.loads(CliRunner().invoke(main, ["score", str(run_dir), "--json"]).output)
    return next(m for m in scored["metrics"] if m["name"] == scored["headline"][0])


def headline_value(run_dir):
    return f"{headline_metric(run_dir)['value']:.1f}"


def headline_half_width(run_dir):
    low, high = headline_metric(run_dir)["ci95"]
    return f"{(high - low) / 2:.1f}"


def runs_in(folder):
    return sorted(name for name in os.listdir(folder) if os.path.isdir(os.path.join(folder, name)))


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
    card = lines.index(f"card: {tmp_path / 'all'} · model counted")  # after every run's tables: it ends them
    assert card > max(i for i, line in enumerate(lines) if line.startswith("vitatecs · similarity · "))
    assert os.path.isfile(tmp_path / "all" / "suite.json")  # a suite: a one-benchmark rerun goes beneath
    folders = runs_in(tmp_path / "all")
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
    assert runs_in(tmp_path / "out") == ["temporalbench-choice", "vinoground-choice", "vitatecs-similarity"]
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
    assert len(runs_in(tmp_path / "out")) == 4 and len(LOADS) == 1


def test_options_for_one_benchmark_go_by_its_name(data, tmp_path):
    done = timefoil("run", "velociti,vinoground", "--model", "counted", "--data-root", data, "--out",
                    str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache"), "--bench-arg",
                    "velociti.protocol=choice")
    assert done.exit_code == 0, done.output
    assert runs_in(tmp_path / "out") == ["velociti-choice", "vinoground-choice"]
    refused = timefoil("run", "velociti,vinoground", "--model", "counted", "--data-root", data, "--out",
                       str(tmp_path / "o2"), "--bench-arg", "vilma.protocol=choice")
    assert refused.exit_code == 2 and "'vilma' is not one of this run's benchmarks" in refused.output


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
    offline = CliRunner().invoke(main, ["prepare", "all", "--dest", str(tmp_path / "empty")],
                                 env={"HF_HUB_OFFLINE": "1"})
    lines = offline.output.strip().splitlines()
    assert offline.exit_code == 1 and len(lines) == 6  # a line per benchmark naming it, then the verdict
    assert [line.split(":")[0] for line in lines[:5]] == list(PAPER_NAMES)
    downloads = [line for line in lines if "Hugging Face dataset" in line or "needs huggingface_hub" in line]
    assert len(downloads) == 3 and all("HF_HUB_OFFLINE is set and the local cache does not hold it" in line or
                                       "downloading needs huggingface_hub" in line for line in downloads)


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
                                         "--no-thumbnails"], terminal_width=100, env={"COLUMNS": "100"})
    finally:
        MODELS.pop("llava-onevision-7b")
    assert card.exit_code == 0, card.output
    lines = card.output.splitlines()
    assert lines[0].strip() == f"card: {tmp_path / 'out'} · model llava-onevision-7b"  # named once
    # the card: up to the tables, which name the model once above them all
    rows = lines[:lines.index("model llava-onevision-7b")]
    assert not any("llava-onevision-7b" in line for line in rows[1:])
    flat = " ".join(" ".join(rows).split())
    for benchmark, protocol in (("temporalbench", "choice"), ("velociti", "entailment"), ("vilma", "similarity"),
                                ("vinoground", "choice"), ("vitatecs", "similarity")):
        assert f"{benchmark} · {protocol}" in flat
    velociti = next(line for line in rows if line.strip().startswith("velociti · entailment"))
    temporalbench = next(line for line in rows if line.strip().startswith("temporalbench · choice"))
    assert max(len(line) for line in rows) <= 100
    # value, ±, chance and the paper's number on the benchmark's line
    assert velociti.split()[-4:] == [headline_value(tmp_path / "out" / "velociti-entailment"),
                                       headline_half_width(tmp_path / "out" / "velociti-entailment"), "25.0", "32.1"]
    assert temporalbench.split()[-1] == "13.31" and temporalbench.split()[-2] == "25.0"
    stripped = [line.strip() for line in rows]
    assert "published, velociti · entailment: LLaVA-OneVision-7B (paper, Table 2)" in stripped
    # TemporalBench's row for this model is printed in its repository's README, not in the paper
    assert "published, temporalbench · choice: LLaVA-OneVision-7B, 1 frame (released README)" in stripped
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


def test_a_damaged_run_json_skips_its_benchmark_the_others_run_and_a_finished_rerun_loads_no_model(data, tmp_path):
    out = tmp_path / "out"
    (out / "velociti-entailment").mkdir(parents=True)
    (out / "velociti-entailment" / "run.json").write_text('{"config": {"benchmark": "velo')  # cut mid-write
    command = ["run", "all", "--model", "counted", "--data-root", data, "--out", str(out),
               "--cache-dir", str(tmp_path / "cache")]
    done = timefoil(*command)
    assert done.exit_code == 1
    skipped = [line for line in done.output.splitlines() if line.startswith("timefoil: skipped")]
    assert len(skipped) == 1 and skipped[0].startswith("timefoil: skipped velociti: ") and "run.json" in skipped[0]
    assert done.output.strip().splitlines()[-1] == \
        f"Error: 1 of 5 benchmarks skipped (velociti); the others are in {out}"
    answered = [name for name in runs_in(out) if (out / name / "items.jsonl").exists()]
    assert answered == ["temporalbench-choice", "vilma-similarity", "vinoground-choice", "vitatecs-similarity"]
    assert len(LOADS) == 1
    shutil.rmtree(out / "velociti-entailment")  # set right: the same command asks only what is missing
    before = {name: (out / name / "items.jsonl").read_bytes() for name in answered}
    asked = len(ASKED)
    again = timefoil(*command)
    assert again.exit_code == 0, again.output
    assert len(LOADS) == 2 and len(ASKED) - asked == len(stored(out / "velociti-entailment"))
    assert {name: (out / name / "items.jsonl").read_bytes() for name in answered} == before
    finished = timefoil(*command)  # nothing left to ask: no model loaded, the same card
    assert finished.exit_code == 0 and len(LOADS) == 2
    assert len(ASKED) == asked + len(stored(out / "velociti-entailment"))
    card = finished.output[finished.output.index("card: "):]
    assert card == again.output[again.output.index("card: "):]
    other = timefoil(*command, "--limit", "1")  # another configuration in every folder: refused unloaded
    assert other.exit_code == 1 and len(LOADS) == 2
    assert sorted(line for line in other.output.splitlines() if line.startswith("timefoil: skipped")) == [
        f"timefoil: skipped {name}: {out / folder} holds a run with another configuration; use a new --out "
        "directory (or delete this one)" for name, folder in sorted(zip(sorted(PAPER_NAMES), runs_in(out)))]


def velociti_subset(data, tmp_path):
    """The five benchmarks with VELOCITI's first two clips marked as the paper's subset."""
    root = tmp_path / "data"
    shutil.copytree(data, root)
    path = root / "velociti" / "velociti.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    path.write_text("".join(json.dumps({**r, "in_subset": n < 2}) + "\n" for n, r in enumerate(records)))
    return str(root)


def configuration(run_dir):
    with open(os.path.join(run_dir, "run.json"), encoding="utf-8") as handle:
        return json.load(handle)["config"]


def test_the_readmes_bench_args_work_with_one_benchmark_and_with_all_and_a_misspelling_is_a_usage_error(data, tmp_path):
    root = velociti_subset(data, tmp_path)
    common = ["--model", "counted", "--data-root", root, "--cache-dir", str(tmp_path / "cache")]
    one = timefoil("run", "velociti", *common, "--out", str(tmp_path / "one"), "--bench-arg", "velociti.subset=paper",
                   "--bench-arg", "velociti.protocol=choice")
    assert one.exit_code == 0, one.output
    assert configuration(tmp_path / "one")["benchmark_args"] == {"subset": "paper"}
    assert configuration(tmp_path / "one")["protocol"] == "choice"
    assert len({r[0].rsplit("-", 1)[0] for r in stored(tmp_path / "one")}) == 2  # the subset's two clips
    plain = timefoil("run", "velociti", *common, "--out", str(tmp_path / "plain"), "--bench-arg", "subset=paper")
    assert plain.exit_code == 0, plain.output
    assert configuration(tmp_path / "plain")["benchmark_args"] == {"subset": "paper"}
    every = timefoil("run", "all", *common, "--out", str(tmp_path / "all"), "--bench-arg", "velociti.protocol=choice",
                     "--bench-arg", "velociti.subset=paper")
    assert every.exit_code == 0, every.output
    assert "velociti-choice" in runs_in(tmp_path / "all")
    assert stored(tmp_path / "all" / "velociti-choice") == stored(tmp_path / "one")
    LOADS.clear()
    for benchmark, arg, said in (
            ("all", "velociti.protocl=choice", "--bench-arg velociti.protocl=choice: unknown velociti option 'protocl' "
                                               "(did you mean protocol?); accepted: subset, protocol, variant"),
            ("velociti", "velociti.protocl=choice", "unknown velociti option 'protocl' (did you mean protocol?)"),
            ("velociti", "velocity.subset=paper", "unknown benchmark 'velocity' (did you mean velociti?)"),
            ("all", "velocity.subset=paper", "unknown benchmark 'velocity' (did you mean velociti?)"),
            ("all", "subset=paper", "vinoground has no option 'subset'"),
            ("all", "vilma.protocol=entailmnt", "unknown protocol 'entailmnt' (did you mean entailment?)"),
            ("velociti", "subset", "--bench-arg takes NAME.KEY=VALUE (or KEY=VALUE), got 'subset'")):
        refused = timefoil("run", benchmark, *common, "--out", str(tmp_path / "refused"), "--bench-arg", arg)
        assert refused.exit_code == 2 and said in refused.output, (arg, refused.output)
        assert len(refused.output.strip().splitlines()) == 1
    assert not LOADS and not (tmp_path / "refused").exists()


def test_one_benchmark_run_into_a_suite_lands_in_its_folder_and_report_shows_all_five(data, tmp_path):
    partial = tmp_path / "data"
    shutil.copytree(data, partial)
    shutil.rmtree(partial / "vilma")
    suite = tmp_path / "suite"
    first = timefoil("run", "all", "--model", "counted", "--data-root", str(partial), "--out", str(suite),
                     "--cache-dir", str(tmp_path / "cache"))
    assert first.exit_code == 1 and len(runs_in(suite)) == 4
    vilma = timefoil("run", "vilma", "--model", "counted", "--data-root", data, "--out", str(suite),
                     "--cache-dir", str(tmp_path / "cache"))
    assert vilma.exit_code == 0, vilma.output
    assert f"timefoil: writing into {suite / 'vilma-similarity'} (the suite's folder for vilma)" in vilma.output
    assert runs_in(suite) == ["temporalbench-choice", "velociti-entailment", "vilma-similarity", "vinoground-choice",
                              "vitatecs-similarity"] and not (suite / "run.json").exists()
    report = CliRunner().invoke(main, ["report", str(suite)])
    assert report.exit_code == 0, report.output
    lines = report.output.splitlines()
    assert lines[0].strip() == f"card: {suite} · model counted"
    card = lines[:lines.index("model counted")]  # up to the tables, which name the model once
    rows = [line.split(" · ")[0].strip() for line in card if line.strip().split(" ")[0] in PAPER_NAMES]
    assert rows == list(PAPER_NAMES) and "mixes" not in report.output  # in the papers' order, as run all
    # a run written at the suite's root (as a one-benchmark run did before): report says so, run all refuses
    for name in ("run.json", "items.jsonl"):
        shutil.copy(suite / "vilma-similarity" / name, suite / name)
    (suite / "suite.json").unlink()
    mixed = CliRunner().invoke(main, ["report", str(suite)])
    assert mixed.exit_code == 0
    assert f"timefoil: {suite} mixes a run at its root with 5 runs in its folders" in mixed.output
    refused = timefoil("run", "all", "--model", "counted", "--data-root", data, "--out", str(suite))
    assert refused.exit_code == 1 and refused.output.strip().splitlines() == [
        f"Error: {suite} holds one run (its run.json), not a suite of benchmarks; give several benchmarks a new "
        "--out folder"]


def test_list_fits_100_columns_and_prints_every_number_it_names():
    listed = CliRunner().invoke(main, ["list"], env={"COLUMNS": "100"}).output
    assert max(len(line) for line in listed.splitlines()) <= 100
    flat = " ".join(listed.split())
    assert "Table 10 (choice) Qwen2-VL-7B: agent_random/bias 24.2, agent_random/A∧B 74.1," in flat
    assert "chrono/bias -60.8, chrono/A∧B 25.7" in flat  # GPT-4o's last two numbers
    assert "velociti subset, protocol, variant" in flat  # the --bench-arg keys


def test_each_built_in_model_declares_the_kinds_its_class_answers():
    """run all plans with the kinds a model family declares, before one loads: they must be the
    methods its class defines, or a benchmark would be planned under a protocol it cannot answer."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from timefoil.models import MODELS
    from timefoil.models.base import METHOD_PREFIX
    from timefoil.models.local.contrastive import Contrastive
    from timefoil.models.local.hf_generative import HFGenerative
    from timefoil.models.local.text_models import BlindEmbed
    from timefoil.models.reference import BagOfFramesModel, ConstantModel, RandomModel
    from timefoil.models.served.model import ServedModel

    classes = {"random": RandomModel, "constant": ConstantModel, "bag-of-frames": BagOfFramesModel,
               "clip": Contrastive, "openclip": Contrastive, "openai": ServedModel, "gemini": ServedModel,
               "anthropic": ServedModel, "hf": HFGenerative, "blind-lm": HFGenerative, "blind-embed": BlindEmbed}
    built_in = {name for name, origin in MODELS.origins.items() if origin.get("from") == "built-in"}
    assert built_in == set(classes)
    for name, model_class in classes.items():
        methods = {a[len(METHOD_PREFIX):] for a in dir(model_class)
                   if a.startswith(METHOD_PREFIX) and callable(getattr(model_class, a))}
        assert MODELS[name].kinds == methods, name
