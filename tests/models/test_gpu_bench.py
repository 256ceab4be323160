"""bench/gpu.py on its tiny shape: every workload runs on the CPU, each against its per-question
loop, and prints the JSON line docs/performance.md describes, with the answers equal."""
import json
import math
import os
import subprocess
import sys

import pytest

pytest.importorskip("transformers")

BENCH = os.path.join(os.path.dirname(__file__), "..", "..", "bench", "gpu.py")
KEYS = {"workload", "timefoil_ms_per_question", "naive_ms_per_question", "equal", "mfu"}


def test_the_gpu_bench_runs_every_workload_on_the_cpu_with_equal_answers():
    result = subprocess.run([sys.executable, BENCH, "--shape", "tiny", "--threads", "1"], capture_output=True,
                            text=True, timeout=300, env={**os.environ, "TIMEFOIL_THREADS": "1"})
    assert result.returncode == 0, result.stderr[-3000:]
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    head, workloads = lines[0], {line["workload"]: line for line in lines[1:]}
    assert head["device"] == "cpu" and head["dtype"] == "float32" and head["ran_on"]["device"] == "cpu"
    assert list(workloads) == ["entail", "entail_b64", "entail_32f", "choice", "decode", "runner", "runner_b64", "e2e"]
    for name, line in workloads.items():
        assert KEYS <= set(line), (name, line)
        same, compared = line["equal"]
        assert compared > 0 and same == compared, (name, line)
        assert line["mfu"] is None and line["timefoil_ms_per_question"] > 0  # no GPU, no share of its peak
    # 3 videos x 5 captions; 2 x 8; 2 x 4; choice 2 x 4; decode 4 x 2; VELOCITI rows x 2 captions
    assert [workloads[n]["questions"] for n in ("entail", "entail_b64", "entail_32f", "choice", "decode")] == \
        [15, 16, 8, 8, 8]
    assert workloads["e2e"]["captions"] == 12 and workloads["e2e"]["errors"] == 0
    assert workloads["entail"]["gpu_busy"] is None and workloads["entail"]["htod_share"] is None
    # a video's work once, through the model and through the runner at both batch sizes
    for name in ("entail", "runner", "runner_b64"):
        line = workloads[name]
        assert line["prefix_forwards_per_video"] == line["pixel_builds_per_video"] == 1.0, (name, line)
        assert line["reads_per_video"] == 1.0 and line["cache_copies"] == 0, (name, line)
        assert 0 < line["host_ms_beyond_pixels"] < line["host_ms_per_video"], (name, line)
    assert workloads["runner"]["questions"] == 10 and workloads["runner"]["errors"] == 0
    assert workloads["entail"]["max_dp"] <= 1e-4


def test_the_peak_is_the_boards_own():
    """An H100 NVL or PCIe board's name holds "H100" too: each is looked up before the SXM's."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("gpu_bench", BENCH)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    names = {"NVIDIA H100 80GB HBM3": 989e12, "NVIDIA H100 NVL": 835e12, "NVIDIA H100 PCIe": 756e12,
             "NVIDIA H200": 989e12, "NVIDIA H200 NVL": 835e12, "NVIDIA A100-SXM4-80GB": 312e12, "Tesla T4": None}
    assert {name: bench.peak_of(name) for name in names} == names


def number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def test_the_quick_device_check_runs_at_the_tiny_shape_on_the_cpu():
    """``--quick``: entail, runner, choice and ``timefoil run velociti`` through the CLI, each line's
    per-video figures real numbers, compiled forwards (none on the CPU by default) equal to eager."""
    result = subprocess.run([sys.executable, BENCH, "--shape", "tiny", "--quick", "--threads", "1"],
                            capture_output=True, text=True, timeout=400, env={**os.environ, "TIMEFOIL_THREADS": "1"})
    assert result.returncode == 0, result.stderr[-3000:]
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    workloads = {line["workload"]: line for line in lines[1:]}
    assert list(workloads) == ["entail", "cli", "runner", "choice"]
    per_video = ("ms_per_video", "kernels_per_video", "syncs_per_video", "suffix_forwards_per_video")
    for name in ("entail", "runner", "choice"):
        line = workloads[name]
        assert all(number(line[key]) for key in per_video + ("eager_ms_per_video", "warmup_s")), (name, line)
        assert line["kernels_per_video"] > 100 and line["kernels_counted"] == "aten ops (cpu)"
        assert line["launches_per_video"] is None and line["forward"] == "eager"  # compile=auto: off on the CPU
        # both videos' suffixes in one forward at the tiny shape (5 captions or 3 questions a video:
        # the rows of both fit the memory budget, so their prefix caches are joined)
        assert line["suffix_forwards_per_video"] == 0.5, (name, line)
    assert workloads["entail"]["equal"] == [10, 10] and workloads["entail"]["max_dp_vs_eager"] <= 1e-4
    assert workloads["choice"]["equal"] == [6, 6] and workloads["runner"]["errors"] == 0
    cli = workloads["cli"]
    assert cli["returncode"] == 0 and cli["clips"] == 4 and cli["answered"] == cli["captions"] == 14
    for key in ("wall_s", "load_s", "first_answer_after_load_s", "ms_per_video", "run_videos_per_s",
                "decode_videos_per_s"):
        assert number(cli[key]) and cli[key] > 0, (key, cli)
    assert cli["first_answer_after_load_s"] < cli["wall_s"] - cli["load_s"] + 0.5
