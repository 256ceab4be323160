"""Failures are loud and nothing is lost: exit codes, validation, locks, redaction, integrity."""
import json
import os
import subprocess
import sys

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


def test_one_writer_per_run_directory_and_a_killed_writers_lock_is_taken_over(tmp_path):
    import signal
    import time

    from timefoil import RunConfig, RunError, run
    from timefoil.execution.store import RunLog
    from timefoil.synth import generate

    here = os.path.dirname(__file__)
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


def test_a_key_echoed_by_the_server_reaches_no_file_and_no_output(tmp_path):
    """The fake server echoes the Authorization header in its error bodies (400, then 500s)."""
    pytest.importorskip("httpx")
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from timefoil.synth import generate

    key = "sk-live-abcdef0123456789-never-stored"

    class Echo(BaseHTTPRequestHandler):
        count = 0

        def log_message(self, *args):
            pass

        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            Echo.count += 1
            body = json.dumps({"error": "denied", "you sent": {"Authorization": self.headers["Authorization"]}})
            self.send_response(400 if Echo.count % 2 else 500)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body.encode())

    server = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    suite = str(tmp_path / "suite")
    generate(suite, per_family=1, seed=1)
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    result = cli("run", "synth", "--model", f"openai:m@{url}", "--model-arg", "max_retries=1", "--model-arg",
                 "backoff=0.01", "--data", suite, "--protocol", "choice", "--limit", "2", "--out",
                 str(tmp_path / "run"), "--cache-dir", str(tmp_path / "cache"), "--no-progress",
                 env={**os.environ, "OPENAI_API_KEY": key})
    server.shutdown()
    assert result.returncode == 3 and Echo.count > 0
    assert "[redacted]" in open(tmp_path / "run" / "items.jsonl").read()
    assert key not in result.stdout + result.stderr and key[:16] not in result.stdout + result.stderr
    for folder in (tmp_path / "run", tmp_path / "cache"):
        for root, _, files in os.walk(folder):
            for name in files:
                assert key.encode() not in open(os.path.join(root, name), "rb").read(), name


def test_score_and_check_report_corrupt_lines_and_double_answers(tmp_path):
    from timefoil.synth import generate

    suite = str(tmp_path / "suite")
    generate(suite, per_family=1, seed=1)
    run_dir = tmp_path / "run"
    assert cli("run", "synth", "--model", "random", "--data", suite, "--out", str(run_dir), "--cache-dir",
               str(tmp_path / "c"), "--no-progress").returncode == 0
    ok = cli("check", str(run_dir))
    assert ok.returncode == 0 and "whole" in ok.stdout and "planned" in ok.stdout
    log = run_dir / "items.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    log.write_text("".join(lines[:3] + ["garbage {\n"] + lines[3:] + [lines[5]]))  # line 4 corrupt, one answered twice
    scored = json.loads(cli("score", str(run_dir), "--json").stdout)
    assert scored["corrupt_lines"] == [4]
    assert "corrupt lines in items.jsonl skipped: 4" in cli("score", str(run_dir)).stdout
    bad = cli("check", str(run_dir))
    assert bad.returncode == 1 and "items.jsonl line 4 is not a record" in bad.stdout
    assert f"{json.loads(lines[5])['id']} answered 2 times" in bad.stdout and "Traceback" not in bad.stderr


def test_a_4k_clips_frames_are_compressed_and_the_cache_stays_within_its_budget(tmp_path, monkeypatch):
    import numpy as np

    from timefoil.core.items import VideoRef
    from timefoil.video import FrameStore, Sampling, write_video
    from timefoil.video.diskcache import FrameDiskCache

    height, width = 2160, 3840
    ramp = np.linspace(0, 255, width, dtype=np.float32)[None, :, None]
    frames = [np.broadcast_to((ramp + 8 * t) % 256, (height, width, 3)).astype(np.uint8) for t in range(8)]
    path = str(tmp_path / "4k.mp4")
    write_video(path, frames, fps=4)
    cache = str(tmp_path / "cache")
    one = FrameStore(cache_dir=cache).get(VideoRef.file(path), Sampling(frames=8))
    raw = one.array.nbytes
    size, count = FrameDiskCache(cache).usage()
    assert raw == 8 * height * width * 3 and count == 1 and size < raw / 20  # 199 MB raw, stored compressed
    assert np.array_equal(FrameStore(cache_dir=cache).get(VideoRef.file(path), Sampling(frames=8)).array,
                          one.array)  # lossless, read back from disk
    first = FrameDiskCache(cache).entries()[0][2]
    budget = int(size * 2.5)  # the 8-, 7-, 6- and 5-frame entries together need about 3.25 times one
    monkeypatch.setenv("TIMEFOIL_CACHE_MAX", str(budget))
    store = FrameStore(cache_dir=cache)
    for n in (7, 6, 5):
        store.get(VideoRef.file(path), Sampling(frames=n))
        assert FrameDiskCache(cache).usage()[0] <= budget
    assert not os.path.exists(first) and len(FrameDiskCache(cache).entries()) == 3  # the least recent went


def test_the_cache_command_and_a_corrupt_response_cache(tmp_path):
    from timefoil.synth import generate

    suite, cache = str(tmp_path / "suite"), tmp_path / "cache"
    generate(suite, per_family=1, seed=1)
    os.makedirs(cache)
    (cache / "responses.sqlite").write_bytes(b"this is not a database at all" * 100)
    result = cli("run", "synth", "--model", "random", "--data", suite, "--out", str(tmp_path / "r"), "--cache-dir",
                 str(cache), "--no-progress")
    assert result.returncode == 0, result.stderr
    assert f"the response cache {cache / 'responses.sqlite'} could not be read" in result.stderr
    assert any(name.startswith("responses.sqlite.corrupt-") for name in os.listdir(cache))
    shown = cli("cache", "--cache-dir", str(cache))
    assert shown.returncode == 0 and "frames" in shown.stdout and "entries" in shown.stdout
    cleared = cli("cache", "--cache-dir", str(cache), "--clear", "frames")
    assert "frames 0.0 MB in 0 entries" in cleared.stdout


def test_variable_frame_rate_video_decodes_by_timestamp_and_a_raw_stream_is_flagged(tmp_path):
    """Frame k (value 20k) shown at the times below (ms). Index i means the frame on screen at
    i / average rate; worked out by hand from the timestamps."""
    import fractions

    import av
    import numpy as np

    from timefoil.core.items import VideoRef
    from timefoil.video import FrameStore, Sampling
    from timefoil.video.decode import decode_indices, probe

    stamps = [0, 33, 66, 200, 233, 500, 533, 566, 900, 1000]
    path = str(tmp_path / "vfr.mp4")
    with av.open(path, "w") as container:
        stream = container.add_stream("libx264rgb", rate=30)
        stream.width, stream.height, stream.pix_fmt, stream.options = 32, 16, "rgb24", {"qp": "0"}
        stream.codec_context.time_base = fractions.Fraction(1, 1000)
        for k, stamp in enumerate(stamps):
            frame = av.VideoFrame.from_ndarray(np.full((16, 32, 3), 20 * k, np.uint8), format="rgb24")
            frame.pts, frame.time_base = stamp, fractions.Fraction(1, 1000)
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    info = probe(path)
    shown = decode_indices(path, list(range(info.n_frames)))[:, 0, 0, 0]
    on_screen = [max(k for k, s in enumerate(stamps) if s <= 1000 * i / info.fps) for i in range(info.n_frames)]
    assert list(shown) == [20 * k for k in on_screen] and not info.rate_guessed
    # a raw H.264 stream has no timestamps: decoded, and flagged in the record
    raw = str(tmp_path / "clip.h264")
    with av.open(raw, "w", format="h264") as container:
        stream = container.add_stream("libx264", rate=25)
        stream.width, stream.height, stream.pix_fmt = 32, 16, "yuv420p"
        for k in range(10):
            for packet in stream.encode(av.VideoFrame.from_ndarray(np.full((16, 32, 3), 20 * k, np.uint8),
                                                                   format="rgb24")):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    assert probe(raw).rate_guessed
    frames = FrameStore(cache_dir=str(tmp_path / "c")).get(VideoRef.file(raw), Sampling(frames=4))
    assert frames.rate_guessed and frames.array.shape[0] == 4
    again = FrameStore(cache_dir=str(tmp_path / "c")).get(VideoRef.file(raw), Sampling(frames=4))
    assert again.rate_guessed  # kept in the disk cache too


VILMA_RECORD = {"dataset": "QUVA", "video_file": "clip", "start_time": 1.0, "end_time": 3.0, "time_unit": "sec",
                "caption": "he jumps three times", "foils": ["he jumps five times"], "mturk": {"caption": 3},
                "proficiency": {"caption": "he jumps", "foils": ["he sits"], "human": {"caption": 1}}}


@pytest.mark.parametrize("benchmark, field, value, says", [
    ("vilma", "foils", "a string", "field 'foils' must be a non-empty list of non-empty strings"),
    ("vilma", "start_time", "abc", "field 'start_time' must be a finite number"),
    ("vilma", "start_time", float("nan"), "field 'start_time' must be a finite number"),
    ("vilma", "end_time", float("inf"), "field 'end_time' must be a finite number"),
    ("vilma", "end_time", 0.5, "start_time (1.0) must come before end_time (0.5)"),
    ("vilma", "caption", "", "field 'caption' must be a non-empty string"),
    ("vitatecs", "caption", 42, "field 'caption' must be a non-empty string, found int 42"),
    ("velociti", "pos", ["a"], "field 'pos' must be a non-empty string"),
])
def test_bad_annotations_end_in_one_line_naming_file_record_and_field(tmp_path, benchmark, field, value, says):
    data = tmp_path / "data"  # the run goes beside the data, never into it
    data.mkdir()
    if benchmark == "vilma":
        path = data / "relations.json"
        path.write_text(json.dumps({"k1": {**VILMA_RECORD, field: value}}))
    elif benchmark == "vitatecs":
        row = {"src_dataset": "MSRVTT", "video_name": "v.mp4", "caption": "a", "counterfactual": "b"}
        for aspect in ("Direction", "Intensity", "Sequence", "Localization", "Compositionality", "Type"):
            (data / f"{aspect}.jsonl").write_text(json.dumps({**row, field: value}) + "\n")
        path = data / "Direction.jsonl"
    else:
        path = data / "velociti.jsonl"
        path.write_text(json.dumps({"test_name": "chrono", "video_id": "v", "pos": "a", "neg": "b", field: value})
                        + "\n")
    for command in (["inspect", benchmark, "--data", str(data)],
                    ["run", benchmark, "--model", "random", "--data", str(data), "--out", str(tmp_path / "r")]):
        result = cli(*command)
        lines = result.stderr.strip().splitlines()
        assert result.returncode == 1 and len(lines) == 1 and "Traceback" not in result.stderr
        assert str(path) in lines[0] and says in lines[0], lines[0]
    assert not os.path.exists(tmp_path / "r" / "items.jsonl")  # refused before any model ran


def test_a_remote_server_without_a_key_is_warned_about_once(capsys, monkeypatch):
    pytest.importorskip("httpx")
    from timefoil.models.openai_api import OpenAICompatible
    from timefoil.models.requests import Request

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    model = OpenAICompatible("m", "http://192.0.2.1:9/v1", max_retries=0, timeout=0.2)  # TEST-NET: never answers
    answers = model.answer([Request("generation", None, "hi"), Request("generation", None, "ho")], None)
    assert all(a.error for a in answers)
    model.answer([Request("generation", None, "again")], None)
    warned = capsys.readouterr().err
    assert warned.count("no API key in OPENAI_API_KEY for http://192.0.2.1:9/v1") == 1
    local = OpenAICompatible("m", "http://127.0.0.1:9/v1", max_retries=0, timeout=0.2)
    local.answer([Request("generation", None, "hi")], None)
    assert "no API key" not in capsys.readouterr().err
