"""The OpenAI-compatible adapter against a local fake server that fails on purpose."""
import json
import os
import time

import pytest

pytest.importorskip("httpx")

from provider_fakes import FakeServer  # noqa: E402
from timefoil import RunConfig, run  # noqa: E402
from timefoil.execution.store import RunLog  # noqa: E402
from timefoil.synth import generate  # noqa: E402
from timefoil.video import Sampling  # noqa: E402

pytestmark = pytest.mark.suite(per_family=1, seed=4, families=("order", "direction", "speed"))

SECRET = "sk-test-0123456789-never-written"




def test_run_completes_through_injected_failures_and_the_key_is_never_written(suite, tmp_path, monkeypatch):
    server = FakeServer(failure_rate=0.3)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    try:
        config = RunConfig("synth", f"openai:fake-model@{server.url}", data_dir=suite, protocol="entailment",
                           sampling=Sampling(frames=2),
                           model_args={"timeout": "0.3", "backoff": "0.01", "max_backoff": "0.05",
                                       "max_retries": "8", "concurrency": "4"})
        report = run(config, str(tmp_path / "run"), cache_dir=str(tmp_path / "cache"), progress=False)
    finally:
        server.close()
    records = RunLog(str(tmp_path / "run")).read()
    ids = [r["id"] for r in records]
    assert len(ids) == len(set(ids)) and report.errors == 0
    assert report.items == len({r["item"]["id"] for r in records}) > 0
    unique = len({r["request"]["key"] for r in records})
    assert server.failures >= 0.2 * server.calls  # at least 20% of calls failed
    assert unique <= server.calls <= 9 * unique  # bounded retries: at most max_retries + 1 each
    # P(yes) read back is the one the server gave for that prompt: Yes is its only yes token
    given = {round(u, 9) for u in server.yes_probability.values()}
    read = {round(r["answer"]["probs"]["yes"], 9) for r in records}
    assert read == given  # every prompt asked (12, each with two videos) read back as answered
    assert server.auth == {f"Bearer {SECRET}"}
    for folder in (tmp_path / "run", tmp_path / "cache"):
        for dirpath, _, files in os.walk(folder):
            for name in files:
                assert SECRET.encode() not in open(os.path.join(dirpath, name), "rb").read(), name


def test_exhausted_retries_are_recorded_errors_and_greedy_answers_work_without_logprobs(suite, tmp_path,
                                                                                      monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    always_down = FakeServer(failure_rate=1.0)
    try:
        config = RunConfig("synth", f"openai:m@{always_down.url}", data_dir=suite, protocol="choice", limit=1,
                           sampling=Sampling(frames=1),
                           model_args={"timeout": "0.3", "backoff": "0.01", "max_retries": "2"})
        report = run(config, str(tmp_path / "down"), cache_dir=str(tmp_path / "c1"), progress=False)
        records = RunLog(str(tmp_path / "down")).read()
        attempts = 3 * len({r["request"]["key"] for r in records})
        # an attempt the client gave up on after its 0.3 s timeout may reach the server's handler
        # later on a loaded machine: wait for those before counting, never for more
        deadline = time.monotonic() + 10
        while always_down.calls < attempts and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.2)  # a fourth attempt, were there one, would be counted by now
    finally:
        always_down.close()
    assert report.errors == report.items and all("after 3 attempts" in r["answer"]["error"] for r in records)
    assert always_down.calls == attempts
    assert SECRET not in json.dumps(records)

    greedy = FakeServer(failure_rate=0.0, logprobs=False)
    try:
        config = RunConfig("synth", f"openai:m@{greedy.url}", data_dir=suite, protocol="entailment",
                           sampling=Sampling(frames=1), model_args={"logprobs": "false"})
        report = run(config, str(tmp_path / "greedy"), cache_dir=str(tmp_path / "c2"), progress=False)
    finally:
        greedy.close()
    records = RunLog(str(tmp_path / "greedy")).read()
    assert report.errors == 0 and all(r["answer"]["probs"] is None for r in records)
    assert report.get("overall/StrictVLE").n > 0  # e is 1 or 0 from the greedy Yes/No


def test_png_frames_decode_back():
    import numpy as np

    pytest.importorskip("PIL")
    from io import BytesIO

    from PIL import Image

    from timefoil.core.imaging import png

    frame = np.random.default_rng(0).integers(0, 255, (7, 9, 3), dtype=np.uint8)
    assert np.array_equal(np.asarray(Image.open(BytesIO(png(frame)))), frame)


@pytest.mark.parametrize("image_format", [None, "png", "webp"])
def test_each_sample_is_encoded_once_whatever_asks_for_it(suite, tmp_path, image_format):
    """Both option orders show the same frames: each (video, sampling) is encoded once. JPEG is
    the default (what hosted APIs take, and a third the size of PNG); PNG and WebP on request."""
    from timefoil.models import load_model

    server = FakeServer(failure_rate=0.0)
    args = {"image_format": image_format} if image_format else {}
    model = load_model(f"openai:m@{server.url}", args)
    try:
        config = RunConfig("synth", f"openai:m@{server.url}", data_dir=suite, protocol="choice",
                           order_policy="both", sampling=Sampling(frames=2), model_args=args)
        report = run(config, str(tmp_path / "run"), cache_dir=str(tmp_path / "c"), model=model, progress=False)
    finally:
        server.close()
    records = RunLog(str(tmp_path / "run")).read()
    shown = {json.dumps(r["request"]["video"], sort_keys=True) for r in records}
    assert report.errors == 0 and len(records) == server.calls > len(shown)
    assert model.encoded.encodes == len(shown)  # once per sample, not once per request
    assert server.formats == {f"data:image/{image_format or 'jpeg'}"}
    assert model.fingerprint()["image_format"] == (image_format or "jpeg")


def test_requests_leave_while_frames_are_still_being_encoded_and_never_beyond_the_limit(tmp_path):
    """Payloads are sent as each is ready: the first request reaches the server before the last
    sample is encoded, and no more than `concurrency` are ever in flight."""
    from timefoil.models import load_model

    suite = str(tmp_path / "suite")
    generate(suite, per_family=2, seed=4, families=("order", "direction", "speed"))
    server = FakeServer(failure_rate=0.0)
    server.latency = 0.05
    args = {"image_format": "png", "concurrency": "3"}
    model = load_model(f"openai:m@{server.url}", args)
    try:
        config = RunConfig("synth", f"openai:m@{server.url}", data_dir=suite, protocol="entailment",
                           sampling=Sampling(frames=8), model_args=args)
        report = run(config, str(tmp_path / "run"), cache_dir=str(tmp_path / "c"), model=model, progress=False)
    finally:
        server.close()
    assert report.errors == 0 and model.encoded.encodes > 3
    assert min(server.arrivals) < model.encoded.last_encoded  # sending began before encoding ended
    assert server.most_in_flight <= 3


def test_a_missing_video_on_the_served_path_is_that_videos_error(suite, tmp_path):
    """The served path decodes as it prepares requests; a missing file is still recorded as a
    missing video for its requests, and the others are answered."""
    import glob

    server = FakeServer(failure_rate=0.0)
    gone = sorted(glob.glob(os.path.join(suite, "videos", "*.mp4")))[0]
    os.remove(gone)
    try:
        config = RunConfig("synth", f"openai:m@{server.url}", data_dir=suite, protocol="entailment",
                           sampling=Sampling(frames=2))
        report = run(config, str(tmp_path / "run"), cache_dir=str(tmp_path / "c"), progress=False)
    finally:
        server.close()
    records = RunLog(str(tmp_path / "run")).read()
    failed = [r for r in records if r["answer"]["error"]]
    assert failed and all(r["answer"]["error"].startswith("missing video: ") and gone in r["answer"]["error"]
                          for r in failed)
    assert len(failed) < len(records) and report.errors == len({r["item"]["id"] for r in failed})
    assert server.calls == len({r["request"]["key"] for r in records if not r["answer"]["error"]})


def test_answers_are_recorded_as_they_arrive_not_at_the_end_of_a_batch(tmp_path):
    """All the suite's requests fit one batch of 64; still, when the last request reaches the
    server, the answers to earlier ones are already in items.jsonl."""
    suite = str(tmp_path / "suite")
    generate(suite, per_family=2, seed=4, families=("order", "direction", "speed"))
    run_dir = str(tmp_path / "run")
    log = os.path.join(run_dir, "items.jsonl")
    server = FakeServer(failure_rate=0.0)
    server.latency = 0.05
    lines_at_arrival = []
    reply = server.reply

    def counting_reply(body):
        lines_at_arrival.append(open(log, "rb").read().count(b"\n") if os.path.exists(log) else 0)
        return reply(body)

    server.reply = counting_reply
    try:
        config = RunConfig("synth", f"openai:m@{server.url}", data_dir=suite, protocol="entailment",
                           sampling=Sampling(frames=2), model_args={"concurrency": "2"})
        report = run(config, run_dir, cache_dir=str(tmp_path / "c"), progress=False)
    finally:
        server.close()
    records = RunLog(run_dir).read()
    assert report.errors == 0 and len(lines_at_arrival) == len({r["request"]["key"] for r in records}) < 64
    assert lines_at_arrival[-1] >= len(lines_at_arrival) // 2  # half were recorded before the last left


def test_sigkill_mid_run_on_the_served_path_then_resume_loses_and_duplicates_nothing(tmp_path):
    import signal
    import subprocess
    import sys

    suite = str(tmp_path / "suite")
    generate(suite, per_family=2, seed=4, families=("order", "direction", "speed"))
    server = FakeServer(failure_rate=0.0)
    server.latency = 0.05
    out, log = str(tmp_path / "run"), os.path.join(str(tmp_path / "run"), "items.jsonl")
    command = [sys.executable, "-m", "timefoil.cli", "run", "synth", "--model", f"openai:m@{server.url}",
               "--model-arg", "concurrency=2", "--protocol", "entailment", "--frames", "2", "--data", suite,
               "--out", out, "--cache-dir", str(tmp_path / "c"), "--no-progress"]
    reference = str(tmp_path / "reference")
    try:
        subprocess.run([*command[:-5], "--out", reference, "--cache-dir", str(tmp_path / "c0"), "--no-progress"],
                       check=True, capture_output=True, timeout=300)
        total = len(RunLog(reference).read())
        kills = []
        for target in (3, total // 3, 2 * total // 3):
            proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            deadline = time.monotonic() + 120
            while proc.poll() is None and time.monotonic() < deadline:
                if os.path.exists(log) and open(log, "rb").read().count(b"\n") >= target:
                    break
                time.sleep(0.002)
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=60)
            kills.append(len(RunLog(out).read()))
        assert kills[0] < total and kills[-1] < total, f"the run finished before a kill: {kills}"
        subprocess.run(command, check=True, capture_output=True, timeout=300)
    finally:
        server.close()
    got = [r["id"] for r in RunLog(out).read()]
    assert len(got) == len(set(got)) == total
    assert set(got) == {r["id"] for r in RunLog(reference).read()}
    score = [sys.executable, "-m", "timefoil.cli", "score", "--json"]
    assert json.loads(subprocess.run([*score, out], capture_output=True, text=True, timeout=120).stdout) == \
        json.loads(subprocess.run([*score, reference], capture_output=True, text=True, timeout=120).stdout)


def test_letter_and_yes_no_answers_are_asked_with_no_stop_and_room_to_reason_before_answering():
    """By default no stop string (a line break or a full stop would cut off a changed mind:
    "Yes.\nCorrection: no.") and a token limit of at least 256 for a letter or a Yes/No answer,
    whose request asks 16; free generation keeps its own budget; a model's ``max_tokens`` sets the
    limit outright. ``stop_when_decided=true`` sends the earlier releases' stops (a choice at its
    first line break, Yes/No also at its first full stop), and the answer records them."""
    from timefoil.models.requests import Request
    from timefoil.models.served.openai import OpenAICompatible

    asks = {kind: Request(kind, None, "q", labels=("A", "B") if kind == "choice" else (), max_tokens=16)
            for kind in ("choice", "entailment", "generation")}
    # made, not loaded: no server is asked which model it is
    model = OpenAICompatible("m", "http://127.0.0.1:9/v1")
    bodies = {kind: model.body(request, [], logprobs=True) for kind, request in asks.items()}
    assert all("stop" not in body for body in bodies.values())
    assert {kind: body["max_tokens"] for kind, body in bodies.items()} == \
        {"choice": 256, "entailment": 256, "generation": 16}
    assert model.body(Request("choice", None, "q", max_tokens=1024), [], True)["max_tokens"] == 1024
    capped = OpenAICompatible("m", "http://127.0.0.1:9/v1", max_tokens=16)
    assert capped.body(asks["choice"], [], logprobs=True)["max_tokens"] == 16
    stopping = OpenAICompatible("m", "http://127.0.0.1:9/v1", stop_when_decided=True)
    stops = {kind: stopping.body(request, [], logprobs=True).get("stop") for kind, request in asks.items()}
    assert stops == {"choice": ["\n"], "entailment": ["\n", "."], "generation": None}
    assert model.fingerprint()["stop_when_decided"] is False and stopping.fingerprint()["stop_when_decided"] is True
    from timefoil.models.served.reading import Reply

    said = stopping._read(asks["entailment"], Reply("No", "stop"), None)
    assert said.meta["stop"] == ["\n", "."] and "stop" not in model._read(asks["entailment"], Reply("No", "stop"),
                                                                           None).meta
