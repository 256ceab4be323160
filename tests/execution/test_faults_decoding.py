"""Ctrl-C while a model decodes the next batch's videos ahead (every local model on a GPU does):
the run ends at once with exit 130 and one line, whatever the decode-ahead thread is doing, and
leaves nothing half written. The model, the Ctrl-C's moment and a stuck thread are made inside
the timefoil process by ``tests/decode_ahead/sitecustomize.py``."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from faults import Fault, run_fault
from helpers import TESTS, default_ctrl_c

HOOK_PATH = os.pathsep.join(filter(None, [os.path.join(TESTS, "decode_ahead"), os.environ.get("PYTHONPATH")]))
CTRL_C = r"^timefoil: interrupted \(Ctrl-C\); a run keeps every answer it recorded and resumes from there"
SECONDS = 20  # a run stopped by Ctrl-C ends well within this; a stuck thread joined would take 120 s


def synth_suite(tmp_path: Path) -> str:
    from timefoil.synth import generate

    root = tmp_path / "suite"
    if not root.exists():
        generate(str(root), per_family=1, seed=0, families=("order", "speed", "direction"))
    return str(root)


def run_args(tmp_path: Path, out: Path | None = None) -> list[str]:
    return ["run", "synth", "--model", "decoding-ahead", "--data", synth_suite(tmp_path), "--out",
            str(out or tmp_path / "run"), "--no-progress"]


def whole(run_dir: Path) -> int:
    """Every file of the run whole: run.json one JSON object, items.jsonl whole records (each
    line ends with its newline). Returns the records' count."""
    if (run_dir / "run.json").exists():
        assert isinstance(json.loads((run_dir / "run.json").read_text()), dict)
    log = run_dir / "items.jsonl"
    text = log.read_text() if log.exists() else ""
    assert not text or text.endswith("\n"), text[-200:]
    return len([json.loads(line) for line in text.splitlines()])


def stuck(how: str) -> dict[str, str]:
    return {"PYTHONPATH": HOOK_PATH, "DECODE_AHEAD_SIGINT": "0.3", "DECODE_AHEAD_STUCK": how}


FAULTS = [
    Fault("Ctrl-C while the decode-ahead thread is stuck decoding", run_args, 130, CTRL_C,
          lambda t: whole(t / "run"), env=stuck("decode"), timeout=SECONDS),
    # the main thread imports the decoder before that thread starts: it never waits on the import's lock
    Fault("Ctrl-C while the decode-ahead thread is stuck importing the decoder", run_args, 130, CTRL_C,
          lambda t: whole(t / "run"), env=stuck("import"), timeout=SECONDS),
]


@pytest.mark.parametrize("fault", FAULTS, ids=str)
def test_fault(fault, tmp_path):
    run_fault(fault, tmp_path)


def test_ctrl_c_at_32_moments_around_the_first_decodes_ends_every_run_at_once(tmp_path):
    """From the start of answering (the decoder's imports, the first video decoded by both
    threads, the first answers) every 10 ms over 0.31 s: each run ends with 130 and one line
    within seconds, its files whole, and a run resumed from the last one finishes."""
    delays = [n / 100 for n in range(32)]
    env = {**os.environ, "TIMEFOIL_THREADS": "1", "OMP_NUM_THREADS": "1", "PYTHONPATH": HOOK_PATH}
    outcomes: dict[float, tuple[int, str]] = {}
    waiting: list[tuple[float, subprocess.Popen]] = []

    def start(delay: float) -> None:
        out = tmp_path / f"at-{delay}"
        child = subprocess.Popen([sys.executable, "-m", "timefoil.cli", *run_args(tmp_path, out / "run")],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                 preexec_fn=default_ctrl_c,
                                 env={**env, "DECODE_AHEAD_SIGINT": str(delay), "TIMEFOIL_CACHE": str(out / "cache")})
        waiting.append((delay, child))

    pending = list(delays)
    while pending or waiting:
        while pending and len(waiting) < 3:  # three at a time: the suite's share of a small machine
            start(pending.pop(0))
        delay, child = waiting.pop(0)
        try:
            _, stderr = child.communicate(timeout=SECONDS)
        finally:
            child.kill()
        outcomes[delay] = (child.returncode, stderr)
    for delay, (code, stderr) in outcomes.items():
        said = [line for line in stderr.splitlines() if line.strip()]
        assert code == 130 and len(said) == 1 and re.search(CTRL_C, said[0]), (delay, code, stderr[-2000:])
        whole(tmp_path / f"at-{delay}" / "run")
    counts = {delay: whole(tmp_path / f"at-{delay}" / "run") for delay in delays}
    assert counts[0.0] == 0, counts  # at once: before the decoder has loaded
    last = tmp_path / f"at-{delays[-1]}"
    resumed = subprocess.run([sys.executable, "-m", "timefoil.cli", *run_args(tmp_path, last / "run")],
                             capture_output=True, text=True, timeout=120, preexec_fn=default_ctrl_c,
                             env={**env, "DECODE_AHEAD_SIGINT": "", "TIMEFOIL_CACHE": str(last / "cache")})
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert whole(last / "run") > counts[delays[-1]]
