"""Fault rows: command-line values that used to slip through, shards of items that show two
videos, and models whose extra is not installed."""
import json
import os
import tempfile

import pytest

from faults import Fault, cli, run_fault
from helpers import suite_on_disk
from helpers import run_ids, run_scores


def run_args(tmp_path, *extra: str) -> list[str]:
    return ["run", "synth", "--model", "random", "--data", suite_on_disk(), "--out", str(tmp_path / "run"),
            "--no-progress", *extra]


def nothing_written(tmp_path) -> None:
    assert not os.path.exists(tmp_path / "run")


def blocking(*modules: str) -> dict[str, str]:
    """An environment in which ``modules`` cannot be imported, as if their extra were not installed."""
    folder = tempfile.mkdtemp(prefix="timefoil-blocked-")
    with open(os.path.join(folder, "sitecustomize.py"), "w", encoding="utf-8") as handle:
        handle.write(f"""import sys

BLOCKED = {modules!r}


class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}}")
        return None


sys.meta_path.insert(0, Blocker())
""")
    return {"PYTHONPATH": os.pathsep.join(p for p in (folder, os.environ.get("PYTHONPATH")) if p)}


def shard_is_whole(index: int):
    def after(tmp_path) -> None:
        checked = cli("check", str(tmp_path / "run"))
        assert checked.returncode == 0 and "whole" in checked.stdout, checked.stdout + checked.stderr
        with open(tmp_path / "run" / "shard.json", encoding="utf-8") as handle:
            part = json.load(handle)
        assert part["index"] == index and part["elsewhere"], part  # some items show a video of another shard
    return after


FAULTS = [
    Fault("max-error-rate nan", lambda t: run_args(t, "--max-error-rate", "nan"), 2, r"'nan' is not a finite number",
          nothing_written),
    Fault("max-error-rate inf", lambda t: run_args(t, "--max-error-rate", "inf"), 2, r"not in the range|not a finite",
          nothing_written),
    Fault("max-error-rate above 1", lambda t: run_args(t, "--max-error-rate", "1.5"), 2, r"0<=x<=1", nothing_written),
    Fault("gpus-per-worker nan", lambda t: run_args(t, "--executor", "ray", "--gpus-per-worker", "nan"), 2,
          r"'nan' is not a finite number", nothing_written),
    Fault("fps -inf", lambda t: run_args(t, "--fps", "-inf"), 2, r"--fps", nothing_written),
    # a hundred billion shards: refused at once, without a list of that length (it took 22 GB before)
    Fault("shard count beyond the videos", lambda t: run_args(t, "--shard", "1/100000000000"), 1,
          r"the plan shows 34 videos, so it splits into at most 34 shards", nothing_written, timeout=60),
    Fault("shard index 0", lambda t: run_args(t, "--shard", "0/3"), 1, r"a shard is I/N with 1 <= I <= N, got 0/3",
          nothing_written),
    Fault("shard not I/N", lambda t: run_args(t, "--shard", "2of3"), 1, r"a shard is written I/N", nothing_written),
    *[Fault(f"complete shard {i}/3 of items showing two videos",
            lambda t, i=i: run_args(t, "--protocol", "entailment", "--shard", f"{i}/3"), 0,
            rf"shard {i}/3: \d+ items are completed in other shards", shard_is_whole(i)) for i in (1, 2, 3)],
    Fault("served model without Pillow", lambda t: run_args(t, "--model", "openai:m@http://127.0.0.1:9/v1"), 1,
          r"this model needs PIL, which is not installed; install it with: pip install 'timefoil\[api\]'",
          nothing_written, env=blocking("PIL")),
    Fault("served model without httpx", lambda t: run_args(t, "--model", "openai:m@http://127.0.0.1:9/v1",
                                                          "--model-arg", "image_format=png"), 1,
          r"needs httpx, which is not installed; install it with: pip install 'timefoil\[api\]'",
          nothing_written, env=blocking("httpx")),
    Fault("transformers model without transformers", lambda t: run_args(t, "--model", f"hf:{t}"), 1,
          r"needs transformers, which is not installed; install it with: pip install 'timefoil\[hf\]'",
          nothing_written, env=blocking("transformers")),
    Fault("text-only LM without gguf", lambda t: run_args(t, "--model", "blind-lm", "--blind"), 1,
          r"needs gguf, which is not installed; install it with: pip install 'timefoil\[hf\]'",
          nothing_written, env=blocking("gguf")),
]



def stored_synth_run(tmp_path) -> str:
    done = cli(*run_args(tmp_path), env={"TIMEFOIL_CACHE": str(tmp_path / "cache")})
    assert done.returncode == 0, done.stderr
    return str(tmp_path / "run")


def still_scored(tmp_path) -> None:
    done = cli("score", "--json", str(tmp_path / "run"))
    assert done.returncode == 0 and json.loads(done.stdout)["reading"] == "meant", done.stderr


FAULTS += [
    Fault("released reading of a benchmark without a released scorer",
          lambda t: ["score", stored_synth_run(t), "--reading", "released"], 1,
          r"synth has no released scorer to read its answers by; --reading released applies to vinoground, "
          r"temporalbench, vitatecs, velociti, vilma", still_scored),
    Fault("reading that is no rule", lambda t: ["score", stored_synth_run(t), "--reading", "lenient"], 2,
          r"'lenient' is not one of 'meant', 'released'", still_scored),
]


@pytest.mark.parametrize("fault", FAULTS, ids=str)
def test_fault(fault, tmp_path):
    run_fault(fault, tmp_path)


def test_a_slurm_style_array_of_shards_exits_0_in_every_task_and_merges_into_the_whole_run(tmp_path):
    common = ["--model", "random", "--data", suite_on_disk(), "--protocol", "entailment", "--no-progress"]
    env = {"TIMEFOIL_CACHE": str(tmp_path / "cache")}
    whole = cli("run", "synth", *common, "--out", str(tmp_path / "whole"), env=env)
    assert whole.returncode == 0, whole.stderr
    elsewhere = 0
    for index in (1, 2, 3):  # one task of the array each, as Slurm would start them
        task = cli("run", "synth", *common, "--shard", f"{index}/3", "--out", str(tmp_path / f"s{index}"), env=env)
        assert task.returncode == 0, task.stderr
        elsewhere += int(task.stderr.split(f"shard {index}/3: ")[1].split()[0])
    # each item that shows two videos on two shards is completed elsewhere once from each side
    assert elsewhere > 0 and elsewhere % 2 == 0
    merged = cli("merge", *(str(tmp_path / f"s{i}") for i in (1, 2, 3)), "--out", str(tmp_path / "merged"), env=env)
    assert merged.returncode == 0, merged.stderr
    assert run_ids(tmp_path / "merged") == run_ids(tmp_path / "whole")
    assert run_scores(tmp_path / "merged") == run_scores(tmp_path / "whole")
