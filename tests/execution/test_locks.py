"""One writer per run directory."""
import os
import subprocess
import sys
import pytest
from helpers import TESTS


def test_one_writer_per_run_directory_and_a_killed_writers_lock_is_taken_over(tmp_path):
    import signal
    import time

    from timefoil import RunConfig, RunError, run
    from timefoil.execution.store import RunLog
    from timefoil.synth import generate

    here = TESTS
    suite = str(tmp_path / "suite")
    generate(suite, per_family=2, seed=1)
    reference = str(tmp_path / "reference")
    subprocess.run([sys.executable, os.path.join(here, "slow_run.py"), suite, reference, str(tmp_path / "c1")],
                   check=True, timeout=300)
    out = str(tmp_path / "out")
    first = subprocess.Popen([sys.executable, os.path.join(here, "slow_run.py"), suite, out, str(tmp_path / "c2")])
    log = os.path.join(out, "items.jsonl")
    deadline = time.monotonic() + 60
    while not (os.path.exists(log) and os.path.getsize(log)) and time.monotonic() < deadline:
        time.sleep(0.01)
    with pytest.raises(RunError, match=rf"being written by process {first.pid} \(run.lock\)"):
        run(RunConfig("synth", "bag-of-frames", data_dir=suite), out, cache_dir=str(tmp_path / "c3"), progress=False)
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=60)
    done_before = len(RunLog(out).read())
    run(RunConfig("synth", "bag-of-frames", data_dir=suite), out, cache_dir=str(tmp_path / "c2"), progress=False)
    ids = [r["id"] for r in RunLog(out).read()]
    assert sorted(ids) == sorted(r["id"] for r in RunLog(reference).read()) and len(ids) == len(set(ids))
    assert 0 < done_before <= len(ids)  # the new run took the lock over and lost and repeated nothing
