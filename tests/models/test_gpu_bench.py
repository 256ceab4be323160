"""bench/gpu.py on its tiny shape: every workload runs on the CPU, each against its per-question
loop, and prints the JSON line docs/performance.md describes, with the answers equal."""
import json
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
