"""Frames through a real vision server: a tiny random SmolVLM (SmolLM2's real tokenizer), converted
by llama.cpp's own converter into a text GGUF and a vision projector and served by llama-server
with ``--mmproj``. A random model rarely lists Yes, No or a letter among its likeliest tokens, so
these tests check that every request is answered and that the frames reach the model, not what
it answers."""
import base64
import json
import urllib.request

import pytest

pytest.importorskip("httpx")
pytest.importorskip("transformers")

import real_server  # noqa: E402
from helpers import resumes_as_uninterrupted, run_protocol  # noqa: E402
from served_vision import smolvlm_gguf  # noqa: E402

pytestmark = pytest.mark.suite(per_family=1, seed=3, families=("order", "direction"))


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    real_server.ready(converter_too=True)
    text, projector = smolvlm_gguf(str(tmp_path_factory.mktemp("smolvlm")))
    with real_server.serving(text, "--mmproj", projector) as base:
        yield base


def prompt_tokens(base: str, images: int) -> int:
    from timefoil.core.imaging import png
    from timefoil.testing import pattern_frames

    urls = ["data:image/png;base64," + base64.b64encode(png(frame)).decode()
            for frame in pattern_frames(images, 64, 64)]
    shown = [{"type": "image_url", "image_url": {"url": url}} for url in urls]
    body = {"model": "v", "temperature": 0, "max_tokens": 1,
            "messages": [{"role": "user", "content": [*shown, {"type": "text", "text": "What happens?"}]}]}
    request = urllib.request.Request(base + "/v1/chat/completions", json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as reply:
        return json.load(reply)["usage"]["prompt_tokens"]


def test_each_frame_reaches_the_model_as_the_same_count_of_prompt_tokens(server):
    counts = [prompt_tokens(server, n) for n in (0, 1, 2, 4)]
    step = counts[1] - counts[0]
    assert step > 4 and counts == [counts[0] + n * step for n in (0, 1, 2, 4)], counts  # 4 image tokens + markers


@pytest.mark.parametrize("protocol", ["entailment", "choice"])
def test_every_request_with_frames_is_answered(server, suite, tmp_path, protocol):
    records, _ = run_protocol(f"openai:tiny-smolvlm@{server}/v1", suite, tmp_path, protocol, None, frames=2)
    assert all(r["answer"]["raw"] is not None and r["answer"]["meta"]["finish_reason"] in ("stop", "length")
               for r in records)
    assert all(r["frames"]["n"] == 2 for r in records)


def test_free_generation_is_answered(server, suite, tmp_path):
    """The choice answers a random model writes do not parse, so each goes to the judge, which
    is the same served model asked for free generation."""
    from timefoil import RunConfig, run
    from timefoil.execution.store import RunLog
    from timefoil.video import Sampling

    spec = f"openai:tiny-smolvlm@{server}/v1"
    config = RunConfig("synth", spec, data_dir=suite, protocol="choice", judge=spec, sampling=Sampling(frames=2))
    report = run(config, str(tmp_path / "run"), cache_dir=str(tmp_path / "cache"), progress=False)
    records = RunLog(str(tmp_path / "run")).read()
    judged = [r for r in records if r.get("judge")]
    assert report.errors == 0 and judged, [r.get("judge") for r in records][:2]
    assert all(not r["judge"].get("error") and r["judge"].get("raw") is not None for r in judged)


def test_an_interrupted_run_resumes_as_an_uninterrupted_one(server, suite, tmp_path, monkeypatch):
    """A finished run rerun asks nothing; cut after half its records (what a kill leaves: a
    prefix of lines, the last one partial) and rerun, it asks the server only for the rest and
    ends with the uninterrupted run's records and numbers. Each rerun has a cache of its own, so
    only the run directory can spare it a question; what reaches the wire is counted."""
    from timefoil.models.served.openai import OpenAICompatible

    sent = []
    post = OpenAICompatible._post

    async def counted(self, client, payload, *shows):
        sent.append(payload)
        return await post(self, client, payload, *shows)

    monkeypatch.setattr(OpenAICompatible, "_post", counted)
    resumes_as_uninterrupted(f"openai:tiny-smolvlm@{server}/v1", suite, tmp_path, monkeypatch, asked=sent)


def test_ctrl_c_mid_run_then_rerun_ends_as_the_uninterrupted_run(server, suite, tmp_path):
    """``timefoil run`` against the server, interrupted (SIGINT) once records are being written,
    then rerun: every record once, and the same numbers as a run never interrupted."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from helpers import default_ctrl_c, run_scores
    from timefoil.execution.store import RunLog

    def command(out: str, cache: str) -> list[str]:
        return [sys.executable, "-m", "timefoil.cli", "run", "synth", "--model", f"openai:tiny-smolvlm@{server}/v1",
                "--model-arg", "concurrency=1", "--protocol", "choice", "--order", "both", "--frames", "8",
                "--data", suite, "--out", out, "--cache-dir", cache, "--no-progress"]

    env = {**os.environ, "TIMEFOIL_THREADS": "1"}
    reference, out = str(tmp_path / "reference"), str(tmp_path / "run")
    subprocess.run(command(reference, str(tmp_path / "c0")), check=True, capture_output=True, timeout=300, env=env)
    total = len(RunLog(reference).read())
    log = os.path.join(out, "items.jsonl")
    proc = subprocess.Popen(command(out, str(tmp_path / "c1")), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=env, preexec_fn=default_ctrl_c)
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        if os.path.exists(log) and open(log, "rb").read().count(b"\n") >= 2:
            break
        time.sleep(0.002)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=60) != 0
    cut = len(RunLog(out).read())
    assert 0 < cut < total, f"the Ctrl-C did not land mid-run: {cut} of {total} records"
    subprocess.run(command(out, str(tmp_path / "c2")), check=True, capture_output=True, timeout=300, env=env)
    ids = [r["id"] for r in RunLog(out).read()]
    assert len(ids) == len(set(ids)) == total and set(ids) == {r["id"] for r in RunLog(reference).read()}
    assert run_scores(out) == run_scores(reference)
