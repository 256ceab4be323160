"""Exit codes and refusals before anything runs."""
import os
import pytest
from benchmark_files import velociti_fixture
from helpers import cli


def test_a_run_with_failed_requests_exits_3_and_says_how_to_re_ask_them(tmp_path):
    records = [{"test_name": "chrono", "video_id": f"v{k}", "pos": "a", "neg": "b"} for k in range(3)]
    root = velociti_fixture(tmp_path / "data", records)
    args = ["run", "velociti", "--model", "random", "--data", root, "--out", str(tmp_path / "r"), "--cache-dir",
            str(tmp_path / "c"), "--no-progress"]
    first = cli(*args)
    assert first.returncode == 3
    last = first.stderr.strip().splitlines()[-1]
    assert last.startswith("3 of 3 items failed (3 × missing video); ask them again with: timefoil run velociti")
    assert last.endswith("--retry-errors")
    again = cli(*args)
    assert again.returncode == 3 and "keeping 6 errors recorded by an earlier run" in again.stderr
    tolerant = cli(*args, "--max-error-rate", "1")
    assert tolerant.returncode == 0 and "3 of 3 items failed" in tolerant.stderr
    usage = cli("run", "velociti", "--model", "random", "--out", str(tmp_path / "u"), "--fps", "0")
    assert usage.returncode == 2  # a usage error is not a failed run


@pytest.mark.parametrize("args, says", [
    (["--fps", "0"], "0<x<=1000"), (["--fps", "inf"], "0<x<=1000"),
    (["--fps", "nan"], "is not a finite number"),
    (["--frames", "0"], "frame counts are 1 or more"), (["--frames", "-2"], "frame counts are 1 or more"),
    (["--max-frames", "0"], "x>=1"), (["--limit", "-2"], "x>=1"), (["--sample", "0"], "x>=1"),
    (["--frames", "100"], "100 frames is more than max_frames (64)"),
])
def test_bad_sampling_and_limits_are_refused_before_anything_runs(tmp_path, args, says):
    result = cli("run", "synth", "--model", "random", "--data", str(tmp_path / "suite"), "--out", str(tmp_path / "r"),
                 *args)
    assert result.returncode in (1, 2) and says in result.stderr and "Traceback" not in result.stderr
    assert not os.path.exists(tmp_path / "r")


def test_no_sampling_can_ask_for_unbounded_frames():
    from timefoil.video.sampling import PartInfo, Sampling, plan_frames

    with pytest.raises(ValueError, match="fps must be a positive number up to 1000"):
        Sampling(frames=None, fps=float("inf"))
    plan = plan_frames([PartInfo(fps=30.0, first=0, stop=30 * 3600)], Sampling(frames=None, fps=1000, max_frames=16))
    assert len(plan.entries) == 16  # an hour at 1000 fps, capped
