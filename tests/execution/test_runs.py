"""Runs: resume after SIGKILL, recorded errors, caches, rescoring, CLI and demo."""
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

import pytest

from timefoil.models import MODELS, Model, ModelLoader
from timefoil.models.reference import BagOfFramesModel, RandomModel
from timefoil.models.requests import Answer
from timefoil import RunConfig, RunError, run, score_run
from timefoil.execution.store import RunLog
from helpers import TESTS, cli

pytestmark = pytest.mark.suite(per_family=2, seed=1)



def ids_of(run_dir):
    return [r["id"] for r in RunLog(run_dir).read()]


def test_sigkill_at_random_moments_then_resume_matches_uninterrupted(suite, tmp_path):
    reference = str(tmp_path / "reference")
    subprocess.run([sys.executable, os.path.join(TESTS, "slow_run.py"), suite, reference, str(tmp_path / "c1")],
                   check=True, timeout=300)
    total = len(ids_of(reference))
    interrupted, cache = str(tmp_path / "interrupted"), str(tmp_path / "c2")
    log = os.path.join(interrupted, "items.jsonl")
    rng = random.Random(42)
    counts = []
    for _ in range(30):  # bounded: never loops forever
        if len(counts) >= 6:
            break
        before = counts[-1] if counts else 0
        target = before + rng.randint(1, max(1, (total - before) // 4))
        proc = subprocess.Popen([sys.executable, os.path.join(TESTS, "slow_run.py"), suite, interrupted, cache])
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline:
            lines = open(log, "rb").read().count(b"\n") if os.path.exists(log) else 0
            if lines >= target:
                time.sleep(rng.uniform(0, 0.05))  # kill somewhere inside the next write or batch
                break
            time.sleep(0.005)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        done = len(ids_of(interrupted)) if os.path.exists(log) else 0
        if done >= total:
            break
        if done > before:
            counts.append(done)  # a kill point that interrupted real progress
    assert len(counts) >= 5, f"only {len(counts)} kill points interrupted the run: {counts}"
    subprocess.run([sys.executable, os.path.join(TESTS, "slow_run.py"), suite, interrupted, cache], check=True,
                   timeout=300)
    got = ids_of(interrupted)
    assert len(got) == len(set(got)) == total
    assert set(got) == set(ids_of(reference))
    assert score_run(interrupted).to_json() == score_run(reference).to_json()
    out_a = cli("score", interrupted, "--json").stdout
    out_b = cli("score", reference, "--json").stdout
    assert json.loads(out_a) == json.loads(out_b)


def test_partial_last_line_is_cut_before_resuming(suite, tmp_path):
    run_dir = str(tmp_path / "run")
    config = RunConfig("synth", "random", data_dir=suite, limit=3)
    full = run(config, run_dir, cache_dir=str(tmp_path / "c"), progress=False)
    lines = open(os.path.join(run_dir, "items.jsonl")).read().splitlines(keepends=True)
    with open(os.path.join(run_dir, "items.jsonl"), "w") as handle:  # lose two records, half-write a third
        handle.write("".join(lines[:-3]) + lines[-3][: len(lines[-3]) // 2])
    resumed = run(config, run_dir, cache_dir=str(tmp_path / "c2"), progress=False)
    assert sorted(ids_of(run_dir)) == sorted(r["id"] for r in map(json.loads, lines))
    assert resumed.to_json() == full.to_json()


def test_missing_empty_and_truncated_videos_are_recorded_errors(suite, tmp_path):
    data = str(tmp_path / "data")
    shutil.copytree(suite, data)
    os.remove(os.path.join(data, "videos/speed-000-a.mp4"))
    open(os.path.join(data, "videos/speed-000-b.mp4"), "w").close()
    path = os.path.join(data, "videos/direction-000-a.mp4")
    blob = open(path, "rb").read()
    open(path, "wb").write(blob[: len(blob) // 2])
    report = run(RunConfig("synth", "bag-of-frames", data_dir=data), str(tmp_path / "run"),
                 cache_dir=str(tmp_path / "cache"), progress=False)
    failures = dict(report.failures)
    assert failures["speed-000-a-main0"].startswith("missing video")
    assert failures["speed-000-b-main0"].startswith("empty video")
    assert failures["direction-000-a-main0"].startswith("undecodable video")
    assert report.errors == 6  # main + proficiency item of each broken video
    assert report.items == len({r["item"]["id"] for r in RunLog(str(tmp_path / "run")).read()})
    shown = cli("report", str(tmp_path / "run")).stdout
    for name in ("speed-000-a-main0", "speed-000-b-main0", "direction-000-a-main0"):
        assert name in shown


class CountingModel(RandomModel):
    def __init__(self):
        super().__init__(seed=0)
        self.asked = 0

    def answer(self, requests, frames):
        self.asked += len(requests)
        return super().answer(requests, frames)


def test_response_cache_is_reused_across_runs(suite, tmp_path):
    cache = str(tmp_path / "cache")
    first, second = CountingModel(), CountingModel()
    a = run(RunConfig("synth", "random", data_dir=suite), str(tmp_path / "a"), cache_dir=cache, model=first,
            progress=False)
    b = run(RunConfig("synth", "random", data_dir=suite), str(tmp_path / "b"), cache_dir=cache, model=second,
            progress=False)
    assert first.asked > 0 and second.asked == 0
    assert a.to_json() == b.to_json()


def test_requests_shared_by_items_are_asked_once(suite, tmp_path):
    """Order groups reuse (video, caption) pairs between text and video questions."""
    model = CountingModel()
    run(RunConfig("synth", "random", data_dir=suite), str(tmp_path / "run"), cache_dir=str(tmp_path / "c"),
        model=model, progress=False)
    records = RunLog(str(tmp_path / "run")).read()
    assert model.asked == len({r["request"]["key"] for r in records}) < len(records)


class FlakyModel(BagOfFramesModel):
    """Fails on any request that mentions a square."""

    def answer(self, requests, frames):
        if any("square" in r.text for r in requests):
            raise RuntimeError("device lost")
        return super().answer(requests, frames)


def test_a_failing_request_is_isolated_and_recorded(suite, tmp_path):
    report = run(RunConfig("synth", "bag-of-frames", data_dir=suite), str(tmp_path / "run"),
                 cache_dir=str(tmp_path / "c"), model=FlakyModel(), progress=False)
    records = RunLog(str(tmp_path / "run")).read()
    failed = [r for r in records if r["answer"]["error"]]
    assert failed and all("square" in r["request"]["text"] for r in failed)
    assert all("model error: RuntimeError: device lost" == r["answer"]["error"] for r in failed)
    assert any(r["answer"]["score"] is not None for r in records)
    assert report.errors == len({r["item"]["id"] for r in failed})


def test_a_run_dir_refuses_another_configuration(suite, tmp_path):
    run(RunConfig("synth", "random", data_dir=suite, limit=1), str(tmp_path / "run"), cache_dir=str(tmp_path),
        progress=False)
    with pytest.raises(RunError, match="another configuration"):
        run(RunConfig("synth", "constant", data_dir=suite, limit=1), str(tmp_path / "run"),
            cache_dir=str(tmp_path), progress=False)


def test_protocol_the_model_cannot_answer_is_refused(suite, tmp_path):
    with pytest.raises(RunError, match="cannot answer entailment"):
        run(RunConfig("synth", "bag-of-frames", data_dir=suite, protocol="entailment"), str(tmp_path / "r"),
            progress=False)


class Chatty(Model):
    name = "chatty"
    kinds = frozenset({"choice"})

    def answer(self, requests, frames):
        return [Answer(raw="I would go with the one that looks right.") for _ in requests]


class Judge(Model):
    name = "judge"
    kinds = frozenset({"generation"})

    def answer(self, requests, frames):
        assert all(r.video is None and "====I would go with the one that looks right.====" in r.text for r in requests)
        return [Answer(raw="A") for _ in requests]


def test_judge_maps_free_text_to_an_option(suite, tmp_path, monkeypatch):
    monkeypatch.setitem(MODELS, "judge", ModelLoader("judge", lambda arg, options, cache_dir: Judge(), "test judge"))
    config = RunConfig("synth", "chatty", data_dir=suite, protocol="choice", order_policy="both", limit=2)
    plain = run(config, str(tmp_path / "plain"), cache_dir=str(tmp_path / "c"), model=Chatty(), progress=False)
    assert plain.parse_failures == len(RunLog(str(tmp_path / "plain")).read())  # every answer unparseable
    assert plain.get("overall/accuracy").value == 0.0
    judged = run(RunConfig(**{**config.__dict__, "judge": "judge"}), str(tmp_path / "judged"),
                 cache_dir=str(tmp_path / "c2"), model=Chatty(), progress=False)
    assert judged.parse_failures == 0
    assert judged.get("overall/acc_A").value == 100.0 and judged.get("overall/acc_B").value == 0.0


def test_score_cli_reproduces_the_run_and_has_the_documented_shape(suite, tmp_path):
    run_dir = str(tmp_path / "run")
    result = cli("run", "synth", "--model", "random", "--data", suite, "--protocol", "entailment", "--out", run_dir,
                 "--cache-dir", str(tmp_path / "c"))
    assert result.returncode == 0, result.stderr
    assert "StrictVLE" in result.stdout
    scored = json.loads(cli("score", run_dir, "--json").stdout)
    assert {"benchmark", "model", "protocol", "items", "errors", "parse_failures", "metrics"} <= set(scored)
    strict = next(m for m in scored["metrics"] if m["name"] == "overall/StrictVLE")
    assert {"name", "value", "n", "chance", "ci95", "p_value"} <= set(strict) and strict["chance"] == 25.0
    direct = score_run(run_dir).to_json()
    assert scored == json.loads(json.dumps(direct))
    # the printed table shows the same numbers
    assert f"{strict['value']:.1f}" in result.stdout


def test_cli_frames_sweep_and_ablation_flags(suite, tmp_path):
    out = str(tmp_path / "sweep")
    result = cli("run", "synth", "--model", "bag-of-frames", "--data", suite, "--frames", "1,4", "--out", out,
                 "--frame-order", "reversed", "--cache-dir", str(tmp_path / "c"), "--limit", "2")
    assert result.returncode == 0, result.stderr
    assert sorted(os.listdir(out)) == ["1f-reversed", "4f-reversed"]
    assert "side by side" in result.stdout
    meta = json.load(open(os.path.join(out, "4f-reversed", "run.json")))
    assert meta["config"]["sampling"]["order"] == "reversed" and meta["config"]["sampling"]["frames"] == 4


def test_cli_errors_are_one_clear_line(tmp_path):
    result = cli("run", "synth", "--model", "random", "--data", str(tmp_path / "nowhere"), "--out",
                 str(tmp_path / "r"))
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "timefoil generate synth" in result.stderr
    result = cli("run", "synth", "--model", "gpt-9", "--data", str(tmp_path / "suite"), "--out", str(tmp_path / "r"))
    assert "unknown model" in result.stderr and "Traceback" not in result.stderr


def test_list_json():
    data = json.loads(cli("list", "--json").stdout)
    assert "synth" in data["benchmarks"] and "bag-of-frames" in data["models"] and "StrictVLE" in data["metrics"]


def test_demo_end_to_end(tmp_path):
    result = cli("demo", "--out", str(tmp_path / "demo"), "--per-family", "1")
    assert result.returncode == 0, result.stderr
    assert "what each model shows" in result.stdout and "bag-of-frames" in result.stdout
    # piped, as a log gets it: a line as each of the seven runs ends, never silent for minutes
    ended = [line for line in result.stdout.splitlines() if line.startswith("[") and " items in " in line]
    assert [line.split("]")[0] for line in ended] == [f"[{n}/7" for n in range(1, 8)], ended
    summary = result.stdout.split("full tables:")[0].splitlines()  # the paths after it are the user's
    assert max(len(line.rstrip()) for line in summary) <= 100  # fits a 100-column terminal
    assert os.path.exists(tmp_path / "demo" / "runs" / "bag-of-frames-similarity" / "items.jsonl")
    assert "side by side" in open(tmp_path / "demo" / "tables.txt").read()  # the full tables, written beside
    assert os.path.exists(tmp_path / "demo" / "report.html")


class BreakingStream(RandomModel):
    """Streams its answers three at a time, in reverse order, then breaks after nine."""

    def __init__(self):
        super().__init__()
        self.streamed, self.batched = 0, 0

    def stream_answers(self, requests, frames):
        order = list(range(len(requests)))[::-1]
        for start in range(0, len(order), 3):
            if self.streamed >= 9:
                raise ConnectionError("server went away")
            chunk = order[start:start + 3]
            self.streamed += len(chunk)
            yield list(zip(chunk, self.answer_similarity([requests[i] for i in chunk], frames)))

    def answer(self, requests, frames):
        self.batched += len(requests)
        return super().answer(requests, frames)


def test_a_broken_stream_hands_the_rest_to_the_batch_path_and_scores_equal_the_plain_model(suite, tmp_path, capfd):
    config = RunConfig("synth", "random", data_dir=suite, limit=6)
    model = BreakingStream()
    streamed = run(config, str(tmp_path / "s"), cache_dir=str(tmp_path / "c1"), model=model, progress=False)
    plain = run(config, str(tmp_path / "p"), cache_dir=str(tmp_path / "c2"), model=RandomModel(), progress=False)
    ids = ids_of(str(tmp_path / "s"))
    asked = len({r["request"]["key"] for r in RunLog(str(tmp_path / "s")).read()})
    assert model.streamed == 9 and model.batched == asked - 9 > 0
    assert len(ids) == len(set(ids)) and sorted(ids) == sorted(ids_of(str(tmp_path / "p")))
    assert streamed.to_json() == plain.to_json()
    assert "stopped streaming (ConnectionError: server went away)" in capfd.readouterr().err


def test_decoding_ahead_answers_exactly_as_decoding_in_turn(suite, tmp_path, monkeypatch):
    """A model on a GPU has the next batch's videos decoded on the host while it answers this
    one: the same records, each video still decoded once, some of them by the thread ahead."""
    import threading

    from timefoil.execution.runner import Runner
    from timefoil.video.frames import FrameStore

    threads = []
    decode = FrameStore._decode
    monkeypatch.setattr(FrameStore, "_decode", lambda self, ref, sampling: threads.append(
        threading.current_thread().name) or decode(self, ref, sampling))
    runs = {}
    for ahead in (False, True):
        model = BagOfFramesModel()
        model.batch_size, model.decodes_ahead = 3, ahead
        threads.clear()
        runner = Runner(RunConfig("synth", "bag-of-frames", data_dir=suite), str(tmp_path / f"run{ahead}"),
                        cache_dir=str(tmp_path / f"cache{ahead}"), model=model, progress=False)
        runner.run()
        records = RunLog(str(tmp_path / f"run{ahead}")).read()
        runs[ahead] = sorted((r["id"], json.dumps(r["answer"]["score"]), r["frames"]["n"]) for r in records)
        videos = {json.dumps(r["request"]["video"], sort_keys=True) for r in records}
        assert runner.frames.stats.decodes == len(threads) == len(videos)
        ahead_count = sum(name.startswith("timefoil-decode-ahead") for name in threads)
        assert (ahead_count > 0) == ahead, threads
    assert runs[True] == runs[False]


def test_piped_output_gets_progress_lines_and_a_resumed_run_says_what_it_kept(suite, tmp_path):
    """Not on a terminal (a log, CI), progress is a line every TIMEFOIL_PROGRESS_SECONDS and a last
    one; a rerun after a cut says how many answers it kept and how many it asks."""
    args = ["run", "synth", "--model", "random", "--data", suite, "--out", str(tmp_path / "run"), "--limit", "3",
            "--cache-dir", str(tmp_path / "cache")]
    done = cli(*args, env={"TIMEFOIL_PROGRESS_SECONDS": "0"})
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("synth · similarity: ")]
    total = len(ids_of(str(tmp_path / "run")))
    assert len(lines) >= 2 and lines[-1].startswith(f"synth · similarity: {total} / {total} (100%) · ")
    assert lines[-1].split(" · ")[-1].startswith("done in ") and " req/s" in lines[-1]
    assert done.stderr.splitlines()[0] == "loading random"  # the model's load, said before and after
    assert done.stderr.splitlines()[1].startswith("loaded random in ")
    log = tmp_path / "run" / "items.jsonl"
    kept = log.read_text().splitlines(keepends=True)[:-3]
    log.write_text("".join(kept))
    again = cli(*args, "--cache-dir", str(tmp_path / "other"))
    assert again.returncode == 0, again.stderr
    assert f"synth · similarity: resuming, {len(kept)} answers kept, 3 to ask" in again.stderr.splitlines()
