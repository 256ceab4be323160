"""A model that takes a fixed number of frames (X-CLIP: one learnt embedding per frame position,
its vision config's num_frames) is given that many. A tiny X-CLIP made for 4 frames, on the
synthetic suite (whose own sampling is 8 frames): without the fit, every request fails in the
forward ("The size of tensor a (8) must match the size of tensor b (4)")."""
from __future__ import annotations

import json
import os
import re

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("PIL")

from helpers import cli, run_records  # noqa: E402

from timefoil import RunConfig, run  # noqa: E402
from timefoil.benchmarks import get_benchmark  # noqa: E402
from timefoil.execution.config import RunError  # noqa: E402
from timefoil.execution.runner import Runner  # noqa: E402
from timefoil.models import declared_frames, load_model  # noqa: E402
from timefoil.testing import tiny_xclip  # noqa: E402
from timefoil.video import Sampling  # noqa: E402

pytestmark = pytest.mark.suite(per_family=1, seed=3, families=("order",))


def xclip(suite, tmp_path, frames=4) -> str:
    texts = [t for item in get_benchmark("synth").load(suite) for t in item.texts]
    return tiny_xclip(tmp_path / "xclip", texts, frames=frames)


def argv(suite, tmp_path, path, *extra) -> list[str]:
    return ["run", "synth", "--model", f"clip:{path}", "--data", suite, "--out", str(tmp_path / "run"),
            "--cache-dir", str(tmp_path / "cache"), "--no-progress", *extra]


def test_the_count_is_read_from_config_json_before_the_model_loads(suite, tmp_path):
    path = xclip(suite, tmp_path, frames=4)
    assert declared_frames(f"clip:{path}") == (4, "its vision config's num_frames")
    config = json.loads((tmp_path / "xclip" / "config.json").read_text())
    del config["vision_config"]["num_frames"]  # left out: X-CLIP's own default, 8
    (tmp_path / "xclip" / "config.json").write_text(json.dumps(config))
    assert declared_frames(f"clip:{path}") == (8, "its vision config's num_frames")
    assert declared_frames("clip:/no/such/folder") is None and declared_frames("random") is None


def test_the_benchmarks_sampling_is_fitted_said_in_one_line_and_in_run_json(suite, tmp_path):
    """synth samples 8 frames; the model takes 4: every request answered on 4 frames, no error."""
    path = xclip(suite, tmp_path)
    result = cli(*argv(suite, tmp_path, path), timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    line = (f"timefoil: synth: clip:{path} takes exactly 4 frames (its vision config's num_frames): sampling 4 "
            "uniform frames, not the benchmark's 8 frames (run.json: frames_fitted)")
    assert result.stderr.splitlines().count(line) == 1, result.stderr
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["config"]["sampling"]["frames"] == 4
    assert meta["frames_fitted"] == {"model_takes": 4, "benchmark_samples": "8 frames"}
    records = run_records(tmp_path / "run")
    assert records and all(r["answer"].get("error") is None and r["frames"]["n"] == 4 for r in records)


def test_a_frame_count_the_model_cannot_take_is_refused_before_any_video_is_decoded(suite, tmp_path):
    path = xclip(suite, tmp_path)
    result = cli(*argv(suite, tmp_path, path, "--frames", "6"), timeout=120)
    assert result.returncode == 1, result.stderr[-2000:]
    assert result.stderr.strip().splitlines()[-1] == (
        f"Error: clip:{path} takes exactly 4 frames (its vision config's num_frames), not 6 frames; use --frames 4")
    assert not (tmp_path / "run").exists()
    decoded = [f for _, _, files in os.walk(tmp_path / "cache") for f in files if f.endswith(".frames")]
    assert decoded == []
    swept = cli(*argv(suite, tmp_path, path, "--frames", "4,6"), timeout=120)  # a sweep: refused whole
    assert swept.returncode == 1 and "not 6 frames; use --frames 4" in swept.stderr and not (tmp_path / "run").exists()


def test_run_all_runs_every_benchmark_with_the_models_count(suite, tmp_path):
    """The five papers' benchmarks, small: Vinoground samples 32 frames and VELOCITI 1 fps, the
    other three 8; the model takes 8, as X-CLIP base does. Each benchmark runs on 8 frames
    without an error, and only Vinoground and VELOCITI are fitted, each said once (before,
    they failed whole)."""
    from benchmark_files import five_benchmarks

    path = xclip(suite, tmp_path, frames=8)
    five_benchmarks(tmp_path / "data")
    result = cli("run", "all", "--model", f"clip:{path}", "--data-root", str(tmp_path / "data"), "--out",
                 str(tmp_path / "suite-runs"), "--cache-dir", str(tmp_path / "cache"), "--no-progress", timeout=300)
    fitted = re.findall(r"^timefoil: (\w+): clip:\S+ takes exactly 8 frames \(its vision config's num_frames\): "
                        r"sampling 8 uniform frames, not the benchmark's (.+) \(run.json: frames_fitted\)$",
                        result.stderr, re.M)
    assert sorted(fitted) == [("velociti", "1 fps"), ("vinoground", "32 frames")], result.stderr[-3000:]
    runs = sorted(d for d in os.listdir(tmp_path / "suite-runs") if os.path.isdir(tmp_path / "suite-runs" / d))
    assert any(d.startswith("vinoground-") for d in runs) and any(d.startswith("velociti-") for d in runs), runs
    for folder in runs:
        records = run_records(tmp_path / "suite-runs" / folder)
        assert records and all(r["answer"].get("error") is None and r["frames"]["n"] == 8 for r in records), folder
    assert result.returncode in (0, 1), result.stderr[-3000:]  # 1: a benchmark no matching model answers


def test_from_python_a_given_model_is_fitted_or_refused(suite, tmp_path):
    path = xclip(suite, tmp_path)
    model = load_model(f"clip:{path}")
    assert model.fixed_frames == 4
    with pytest.raises(RunError, match=r"takes exactly 4 frames, not 6 frames; use --frames 4$"):
        Runner(RunConfig("synth", f"clip:{path}", data_dir=suite, sampling=Sampling(frames=6)),
               str(tmp_path / "refused"), cache_dir=str(tmp_path / "cache"), model=model, progress=False)
    assert not (tmp_path / "refused").exists()
    report = run(RunConfig("synth", f"clip:{path}", data_dir=suite), str(tmp_path / "fitted"),
                 cache_dir=str(tmp_path / "cache"), model=model, progress=False)
    assert report.errors == 0 and report.items > 0


def test_the_single_frame_ablation_is_refused_before_decoding_and_left_out_of_an_ablation(suite, tmp_path, capsys):
    """One frame shown to a model that takes 4 would fail every request: ``run --single-frame`` is
    refused in one line before any video is decoded; ``ablate`` leaves that condition out, saying
    so, and runs the other four (full, shuffled, reversed, blind) on 4 frames."""
    from timefoil.commands.ablation import ablate

    path = xclip(suite, tmp_path)
    result = cli(*argv(suite, tmp_path, path, "--single-frame"), timeout=120)
    assert result.returncode != 0 and not (tmp_path / "run").exists()
    assert result.stderr.strip().splitlines()[-1] == (
        f"Error: clip:{path} takes exactly 4 frames (its vision config's num_frames): the single-frame ablation, "
        "which shows one, cannot be run with it")
    config = RunConfig(benchmark="synth", model=f"clip:{path}", data_dir=suite,
                       sampling=Sampling(frames=4)).resolved()
    done = ablate(config, str(tmp_path / "ablation"), cache_dir=str(tmp_path / "cache"))
    assert [name for name, _ in done.runs] == ["full", "shuffled", "reversed", "blind"]
    assert "timefoil: single frame left out: " in capsys.readouterr().err
    assert not (tmp_path / "ablation" / "single-frame").exists()
