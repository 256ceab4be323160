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


def test_three_merges_into_one_folder_at_once_leave_one_whole_run_and_one_line_for_the_others(tmp_path):
    """A merge holds the output's run.lock as a run does: one writes, the others stop in one line
    (the folder is being written, or already holds the run), and nothing is written twice."""
    import re

    from timefoil.commands.checking import check_run
    from timefoil.synth import generate
    from helpers import cli

    suite = str(tmp_path / "suite")
    generate(suite, per_family=1, seed=1)
    shards = [str(tmp_path / f"s{i}") for i in (1, 2)]
    for i, shard in enumerate(shards, 1):
        done = cli("run", "synth", "--model", "random", "--data", suite, "--out", shard, "--shard", f"{i}/2",
                   "--cache-dir", str(tmp_path / "c"), "--no-progress")
        assert done.returncode == 0, done.stderr
    out = str(tmp_path / "all")
    # each merge takes a second to put its log in place, so the three overlap however they start
    (tmp_path / "slow").mkdir()
    (tmp_path / "slow" / "sitecustomize.py").write_text(
        "import os, time\n_replace = os.replace\n\n\n"
        "def replace(src, dst, *args, **kwargs):\n"
        "    if str(src).endswith('items.jsonl.tmp'):\n        time.sleep(1)\n"
        "    return _replace(src, dst, *args, **kwargs)\n\n\nos.replace = replace\n")
    env = {**os.environ, "TIMEFOIL_THREADS": "1", "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path / "slow"), os.environ.get("PYTHONPATH")]))}
    merges = [subprocess.Popen([sys.executable, "-m", "timefoil.cli", "merge", *shards, "--out", out], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(3)]
    ended = []
    for merge in merges:
        try:
            ended.append((merge.communicate(timeout=120)[1], merge.returncode))
        finally:
            merge.kill()
    assert sorted(code for _, code in ended) == [0, 1, 1], ended
    for stderr, code in ended:
        assert "Traceback" not in stderr and "Errno" not in stderr, stderr
        if code:
            said = stderr.strip().splitlines()
            assert len(said) == 1 and re.fullmatch(
                rf"Error: {re.escape(out)} (is being written by process \d+ \(run\.lock\); wait for it to finish or "
                r"stop it, then run again|already holds a run; merge into a new directory)", said[0]), stderr
    problems, counts = check_run(out)
    # the synthetic suite at one per family: 30 items asking 60 requests, each recorded once
    assert problems == [] and counts["records"] == counts["planned"] == 60, (problems, counts)


def test_a_finished_writer_leaves_no_lock_and_a_lock_on_a_removed_file_is_taken_again(tmp_path):
    """A run removes run.lock as it finishes, while still holding it. A writer that opened the file
    just before then would lock a removed file that guards nothing: it opens the path again."""
    import fcntl

    from timefoil.execution.store import LOCK, RunLock

    first = RunLock(str(tmp_path))
    with first:
        assert (tmp_path / LOCK).read_text() == str(os.getpid())
    assert not (tmp_path / LOCK).exists()
    late = RunLock(str(tmp_path))
    stale = late._open()  # opened before the finishing writer removed it
    os.unlink(tmp_path / LOCK)
    opened = []
    real_open = late._open
    late._open = lambda: opened.append(1) or (stale if len(opened) == 1 else real_open())
    with late:
        assert len(opened) == 2 and (tmp_path / LOCK).exists()  # the removed file left, the path locked
        with open(tmp_path / LOCK) as other, pytest.raises(OSError):
            fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
    assert not (tmp_path / LOCK).exists()
