"""Fault rows: command-line values that used to slip through, shards of items that show two
videos, models whose extra is not installed, and Ctrl-C at any moment of a command."""
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

import pytest

from faults import Fault, cli, run_fault
from helpers import default_ctrl_c, suite_on_disk
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


def with_sitecustomize(prefix: str, code: str) -> dict[str, str]:
    """An environment whose interpreter runs ``code`` as it starts (a sitecustomize module)."""
    folder = tempfile.mkdtemp(prefix=prefix)
    with open(os.path.join(folder, "sitecustomize.py"), "w", encoding="utf-8") as handle:
        handle.write(code)
    return {"PYTHONPATH": os.pathsep.join(p for p in (folder, os.environ.get("PYTHONPATH")) if p)}


def ctrl_c_after(seconds: float) -> dict[str, str]:
    """SIGINT to the process ``seconds`` after its interpreter started, as a Ctrl-C delivers it."""
    return with_sitecustomize("timefoil-ctrl-c-", f"""import os, signal, threading

timer = threading.Timer({seconds!r}, os.kill, (os.getpid(), signal.SIGINT))
timer.daemon = True
timer.start()
""")


# Ctrl-C right after the first answers are recorded: the run has begun writing its directory
CTRL_C_MID_RUN = with_sitecustomize("timefoil-ctrl-c-", """import os, signal
from timefoil.execution import store

append = store.RunLog.append


def append_then_interrupt(self, records):
    append(self, records)
    os.kill(os.getpid(), signal.SIGINT)


store.RunLog.append = append_then_interrupt
""")
INTERRUPTED = r"^timefoil: interrupted \(Ctrl-C\); a run keeps every answer it recorded and resumes from there"


def resumes_to_the_whole_run(tmp_path) -> None:
    """What the interrupted run recorded is kept, and the same command finishes it."""
    kept = run_ids(tmp_path / "run")
    assert kept and os.path.exists(tmp_path / "run" / "run.json")
    again = cli(*run_args(tmp_path), env={"TIMEFOIL_CACHE": str(tmp_path / "cache")})
    assert again.returncode == 0, again.stderr
    done = run_ids(tmp_path / "run")
    assert set(kept) < set(done) and len(done) == len(set(done))  # nothing asked twice
    checked = cli("check", str(tmp_path / "run"))
    assert checked.returncode == 0 and "whole" in checked.stdout, checked.stdout + checked.stderr


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
    # while `timefoil run` imports its commands and plans (about a second; `list` alone now ends
    # within 0.3 s, so a Ctrl-C at 0.2 s could come after it): a traceback from the import before
    Fault("Ctrl-C 0.1 s after start", run_args, 130, INTERRUPTED, env=ctrl_c_after(0.1)),
    Fault("Ctrl-C 0.2 s after start", run_args, 130, INTERRUPTED, env=ctrl_c_after(0.2)),
    # while a run records answers: click's "Aborted!" and exit 1 before
    Fault("Ctrl-C while a run records answers", run_args, 130, INTERRUPTED, resumes_to_the_whole_run,
          env=CTRL_C_MID_RUN),
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


# A newcomer's mistakes: usage errors (exit 2) in one line that says what to do, at once, before
# any model or data loads
FAULTS += [
    Fault("benchmark misspelt", lambda t: ["run", "vinogrond", "--model", "random", "--out", str(t / "run")], 2,
          r"^Error: unknown benchmark 'vinogrond' \(did you mean vinoground\?\); available: .*vinoground",
          nothing_written),
    Fault("model misspelt", lambda t: run_args(t, "--model", "bag-of-frame"), 2,
          r"^Error: unknown model 'bag-of-frame' \(did you mean bag-of-frames\?\); available: ", nothing_written),
    Fault("protocol misspelt", lambda t: run_args(t, "--protocol", "choise"), 2,
          r"unknown protocol 'choise' \(did you mean choice\?\); available: similarity, ", nothing_written),
    Fault("model option misspelt", lambda t: run_args(t, "--model-arg", "sead=3"), 2,
          r"^Error: unknown model option 'sead' \(did you mean seed\?\); accepted: seed$", nothing_written),
    Fault("hf: folder that does not exist", lambda t: run_args(t, "--model", "hf:/nonexistent/qwen"), 2,
          r"^Error: hf:/nonexistent/qwen: no folder /nonexistent/qwen here, and '/nonexistent/qwen' is no hub id "
          r"\(owner/name, e\.g\. Qwen/Qwen2-VL-7B-Instruct\): is the path right\?$", nothing_written),
    Fault("hf: hub id offline, not cached", lambda t: run_args(t, "--model", "hf:acme/no-such-video-llm"), 2,
          r"^Error: hf:acme/no-such-video-llm: no folder acme/no-such-video-llm here, and the hub id "
          r"acme/no-such-video-llm is not in the local Hugging Face cache while HF_HUB_OFFLINE is set",
          nothing_written, env={"HF_HUB_OFFLINE": "1"}),
]


def pe_video_run(tmp_path, **processor) -> list[str]:
    """A run of a tiny PE-Video folder whose video processor configuration has ``processor``
    merged in. The subprocess has no timm (nor torchvision) and no stand-in for it."""
    from timefoil.testing import tiny_pe_video

    path = tiny_pe_video(tmp_path / "pe", ["a", "video"])
    with open(os.path.join(path, "video_preprocessor_config.json"), encoding="utf-8") as handle:
        config = json.load(handle)
    with open(os.path.join(path, "video_preprocessor_config.json"), "w", encoding="utf-8") as handle:
        json.dump({**config, **processor}, handle)
    return run_args(tmp_path, "--model", f"clip:{path}", "--protocol", "similarity")


FAULTS += [] if importlib.util.find_spec("transformers") is None else [  # the tiny model is built by transformers
    *([] if importlib.util.find_spec("timm") else [  # where timm imports, the frame encoder is built
        Fault("PE-Video whose timm frame encoder cannot be built", pe_video_run, 1,
              r"PE-Video's frame encoder cannot be built here \(.*timm.*\); it is a timm model: install timm, "
              r"which needs a torchvision built for your torch: pip install --no-deps torchvision==0\.\d+\.\d+ \(the "
              r"release built for the installed torch .*; --no-deps keeps that torch\), or leave torchvision out$",
              nothing_written)]),
    Fault("PE-Video processor size of no known shape", lambda t: pe_video_run(t, size={"longest_edge": 32}), 1,
          r"PE-Video's video processor size must be an integer, height and width, or shortest_edge; got "
          r"\{'longest_edge': 32\}$", nothing_written),
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


def test_ctrl_c_at_any_moment_of_a_command_exits_130_with_one_line():
    """SIGINT from outside, as a terminal sends it, at moments spread over an uninterrupted
    `timefoil list` (most of which is importing the commands). The first few hundredths of a
    second belong to the Python interpreter starting, before any of timefoil's code runs: the
    moments start after them."""
    command = [sys.executable, "-m", "timefoil.cli", "list"]
    environment = {**os.environ, "TIMEFOIL_THREADS": "1", "OMP_NUM_THREADS": "1"}
    started = time.monotonic()
    whole = subprocess.run(command, capture_output=True, text=True, env=environment, timeout=120)
    duration = time.monotonic() - started
    assert whole.returncode == 0, whole.stderr
    interrupted = []
    for share in (0.15, 0.3, 0.45, 0.6, 0.75, 0.9):
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment,
                                preexec_fn=default_ctrl_c)
        time.sleep(share * duration)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
        assert "Traceback" not in err, (share, err)
        if out == whole.stdout and not err.strip() and proc.returncode in (0, -signal.SIGINT):
            continue  # it had finished, or was ending its interpreter (a shell shows 130 for -SIGINT too)
        interrupted.append(share)
        assert proc.returncode == 130, (share, proc.returncode, err)
        assert len(err.strip().splitlines()) == 1 and re.search(INTERRUPTED, err), (share, err)
    assert len(interrupted) >= 4, interrupted  # most moments fall inside the command
