"""The Ray executor on a local two-CPU cluster: the same records and scores as one process,
nothing lost or recorded twice when a worker or the driver dies."""
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter

import pytest

ray = pytest.importorskip("ray")

import slow_run  # noqa: E402
from helpers import TESTS, run_ids, run_records, run_scores  # noqa: E402
from timefoil.execution.distributed import RayOptions  # noqa: E402
from timefoil import RunConfig  # noqa: E402
from timefoil.execution.runner import Runner  # noqa: E402

pytestmark = pytest.mark.suite(per_family=2, seed=6)



@pytest.fixture(scope="module")
def cluster():
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    context = ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.ERROR, log_to_driver=False)
    # the test's slow model travels to the workers by value (its module is not installed there)
    ray.cloudpickle.register_pickle_by_value(slow_run)
    yield context.address_info["gcs_address"]
    ray.shutdown()


def _config(suite, model="bag-of-frames"):
    return RunConfig("synth", model, data_dir=suite)


def test_two_ray_workers_record_what_one_process_records(suite, tmp_path):
    Runner(_config(suite), str(tmp_path / "one"), cache_dir=str(tmp_path / "c1"), progress=False).run()
    # the command as a user types it: its own local cluster, started and stopped by the run
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    result = subprocess.run([sys.executable, "-m", "timefoil.cli", "run", "synth", "--model", "bag-of-frames",
                             "--data", suite, "--out", str(tmp_path / "ray"), "--cache-dir", str(tmp_path / "c2"),
                             "--no-progress", "--executor", "ray", "--workers", "2"],
                            env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert run_ids(tmp_path / "ray") == run_ids(tmp_path / "one")
    assert run_scores(tmp_path / "ray") == run_scores(tmp_path / "one")
    answers = {r["id"]: r["answer"]["score"] for r in run_records(tmp_path / "one")}
    assert {r["id"]: r["answer"]["score"] for r in run_records(tmp_path / "ray")} == answers
    executor = json.load(open(tmp_path / "ray" / "run.json"))["executor"]
    counts = list(executor["workers"].values())
    distinct = len({r["request"]["key"] for r in run_records(tmp_path / "one")})
    assert len(counts) == 2 and min(counts) > 0 and sum(counts) == distinct  # both worked, each request once
    assert "worker 1 (pid" in result.stderr and "worker 2 (pid" in result.stderr


def test_a_tiny_clip_on_two_workers_equals_one_process(cluster, suite, tmp_path):
    pytest.importorskip("transformers")
    from timefoil.benchmarks import get_benchmark
    from timefoil.testing import tiny_clip

    texts = [t for item in get_benchmark("synth").load(suite) for t in item.texts]
    spec = f"clip:{tiny_clip(tmp_path / 'clip', texts)}"
    Runner(_config(suite, spec), str(tmp_path / "one"), cache_dir=str(tmp_path / "c1"), progress=False).run()
    Runner(_config(suite, spec), str(tmp_path / "ray"), cache_dir=str(tmp_path / "c2"), progress=False,
           ray=RayOptions(workers=2)).run()
    assert run_ids(tmp_path / "ray") == run_ids(tmp_path / "one")
    assert run_scores(tmp_path / "ray") == run_scores(tmp_path / "one")
    one = {r["id"]: r["answer"]["score"] for r in run_records(tmp_path / "one")}
    for record in run_records(tmp_path / "ray"):
        assert record["answer"]["score"] == pytest.approx(one[record["id"]], abs=1e-6)


def test_the_workers_batch_fallbacks_are_counted_in_run_json(cluster, suite, tmp_path):
    Runner(_config(suite), str(tmp_path / "one"), cache_dir=str(tmp_path / "c1"), progress=False).run()
    log = tmp_path / "failed.log"
    Runner(_config(suite), str(tmp_path / "ray"), cache_dir=str(tmp_path / "c2"), progress=False,
           model=slow_run.FailsInPairs(str(log)), ray=RayOptions(workers=2)).run()
    failed = [int(n) for n in log.read_text().split()]  # as the workers' models saw them
    assert failed and run_scores(tmp_path / "ray") == run_scores(tmp_path / "one")
    counted = json.load(open(tmp_path / "ray" / "run.json"))["batch_fallbacks"]
    assert counted == {"batches": len(failed), "requests": sum(failed), "exceptions": {"RuntimeError": len(failed)},
                       "messages": {"RuntimeError": "an illegal memory access was encountered"}}


def test_a_worker_killed_mid_run_loses_nothing_and_records_nothing_twice(cluster, suite, tmp_path):
    Runner(_config(suite), str(tmp_path / "one"), cache_dir=str(tmp_path / "c1"), progress=False).run()
    runner = Runner(_config(suite), str(tmp_path / "ray"), cache_dir=str(tmp_path / "c2"), progress=False,
                    model=slow_run.SlowBagOfFrames(), ray=RayOptions(workers=2))
    victim = runner.pool.pids[0]
    seen_at_kill = []

    def kill_after_ten_records():
        log = tmp_path / "ray" / "items.jsonl"
        while not log.exists() or len(log.read_text().splitlines()) < 10:
            time.sleep(0.01)
        seen_at_kill.append(len(log.read_text().splitlines()))
        os.kill(victim, signal.SIGKILL)

    killer = threading.Thread(target=kill_after_ten_records)
    killer.start()
    runner.run()
    killer.join()
    ids = [r["id"] for r in run_records(tmp_path / "ray")]
    assert seen_at_kill and seen_at_kill[0] < len(ids)  # the kill came mid-run
    assert sorted(ids) == run_ids(tmp_path / "one") and not [i for i, n in Counter(ids).items() if n > 1]
    assert run_scores(tmp_path / "ray") == run_scores(tmp_path / "one")
    summary = runner.pool.summary()
    [lost] = summary["lost"]
    assert f"pid {victim}" in lost and summary["requeued_batches"] >= 1
    distinct = len({r["request"]["key"] for r in run_records(tmp_path / "one")})
    assert sum(summary["workers"].values()) == distinct  # a re-queued batch counted once, by who answered it


DRIVER = """
import sys, ray
sys.path.insert(0, {tests!r})
import slow_run
from timefoil.execution.distributed import RayOptions
from timefoil import RunConfig
from timefoil.execution.runner import Runner

ray.init(address={address!r}, log_to_driver=False)
ray.cloudpickle.register_pickle_by_value(slow_run)
Runner(RunConfig("synth", "bag-of-frames", data_dir={suite!r}), {out!r}, cache_dir={cache!r}, progress=False,
       model=slow_run.SlowBagOfFrames(), ray=RayOptions(workers=2)).run()
"""


def test_the_driver_killed_mid_run_resumes_with_the_same_command(cluster, suite, tmp_path):
    Runner(_config(suite), str(tmp_path / "one"), cache_dir=str(tmp_path / "c1"), progress=False).run()
    script = tmp_path / "driver.py"
    script.write_text(DRIVER.format(tests=TESTS, address=cluster, suite=suite, out=str(tmp_path / "ray"),
                                    cache=str(tmp_path / "c2")))
    env = {**os.environ, "TIMEFOIL_THREADS": "1"}
    driver = subprocess.Popen([sys.executable, str(script)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    log = tmp_path / "ray" / "items.jsonl"
    deadline = time.time() + 120
    while (not log.exists() or len(log.read_text().splitlines()) < 10) and time.time() < deadline:
        assert driver.poll() is None, driver.stdout.read().decode()
        time.sleep(0.01)
    driver.send_signal(signal.SIGKILL)
    driver.wait(timeout=60)
    before = len(run_records(tmp_path / "ray"))
    assert 10 <= before < len(run_ids(tmp_path / "one"))
    # the killed driver's workers go with it: the cluster's CPUs come back for the resumed run
    while ray.available_resources().get("CPU", 0) < 2 and time.time() < deadline:
        time.sleep(0.1)
    again = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=180)
    assert again.returncode == 0, again.stderr[-2000:]
    ids = [r["id"] for r in run_records(tmp_path / "ray")]
    assert sorted(ids) == run_ids(tmp_path / "one") and len(ids) == len(set(ids))
    assert run_scores(tmp_path / "ray") == run_scores(tmp_path / "one")
