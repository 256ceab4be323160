"""Gemini and Anthropic wire formats against local fake servers that check the documented
request shape: whole runs through the command line, the clip sent with video_input=file, and
the replies' documented corners."""
from __future__ import annotations

import base64
import io
import json
import os
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("httpx")

from faults import cli  # noqa: E402
from provider_fakes import ProviderServer, answer_for  # noqa: E402

from timefoil.core.items import VideoRef  # noqa: E402
from timefoil.execution.store import RunLog  # noqa: E402
from timefoil.synth import generate  # noqa: E402

KEY = "gk-test-5Vb8Nq2Lx7Rw4Tz9Mc1Pd6"
KEY_ENV = {"gemini": "GEMINI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
FRAGMENT = 8


def assert_key_nowhere(tmp_path: Path, *outputs: str) -> None:
    pieces = {KEY[i:i + FRAGMENT] for i in range(len(KEY) - FRAGMENT + 1)}
    assert not [p for p in pieces if any(p in text for text in outputs)]
    for folder in ("run", "cache"):
        for dirpath, _, files in os.walk(tmp_path / folder):
            for name in files:
                data = (Path(dirpath) / name).read_bytes().decode("utf-8", "replace")
                assert not [p for p in pieces if p in data], name


def run_served(tmp_path: Path, spec: str, provider: str, *args: str):
    suite = tmp_path / "suite"
    if not suite.exists():
        generate(str(suite), per_family=1, seed=4, families=("order", "direction"))
    env = {KEY_ENV[provider]: KEY, "TIMEFOIL_CACHE": str(tmp_path / "cache")}
    return cli("run", "synth", "--model", spec, "--data", str(suite), "--frames", "2", "--out", str(tmp_path / "run"),
               "--no-progress", *args, env=env, timeout=120)


@pytest.mark.parametrize("provider", ["gemini", "anthropic"])
@pytest.mark.parametrize("protocol", ["entailment", "choice"])
def test_a_synthetic_run_has_no_error_and_the_key_is_nowhere(tmp_path, provider, protocol):
    server = ProviderServer(provider, KEY)
    try:
        result = run_served(tmp_path, f"{provider}:m@{server.url}", provider, "--protocol", protocol)
    finally:
        server.close()
    assert result.returncode == 0, result.stderr[-2000:]
    assert server.violations == [] and server.calls > 0
    records = RunLog(str(tmp_path / "run")).read()
    assert records and not [r["answer"]["error"] for r in records if r["answer"]["error"]]
    assert all(r["parsed"]["status"] == "ok" for r in records)
    for record in records:
        said, u = answer_for(record["request"]["text"])
        assert record["answer"]["raw"] == said
        if provider == "anthropic":  # no log-probabilities: read from the text
            assert record["answer"]["probs"] is None
        elif protocol == "entailment":  # the fake gives Yes exp(log u) and " no" exp(log(1 - u))
            assert record["answer"]["probs"]["yes"] == pytest.approx(u) and \
                record["answer"]["probs"]["no"] == pytest.approx(1 - u)
        else:
            assert record["answer"]["probs"]["A"] == pytest.approx(u)
    images = [len(b["contents"][0]["parts"]) - 1 if provider == "gemini" else len(b["messages"][0]["content"]) - 1
              for b in server.bodies]
    assert set(images) == {2}  # --frames 2, as images
    assert_key_nowhere(tmp_path, result.stdout, result.stderr)


def test_gemini_is_sent_the_whole_clip_with_video_input_file(tmp_path):
    import av

    server = ProviderServer("gemini", KEY)
    try:
        result = run_served(tmp_path, f"gemini:m@{server.url}", "gemini", "--protocol", "entailment",
                            "--model-arg", "video_input=file")
    finally:
        server.close()
    assert result.returncode == 0, result.stderr[-2000:]
    assert server.violations == []
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["model_fingerprint"]["video_input"] == "file" and "image_format" not in meta["model_fingerprint"]
    for body in server.bodies:
        media = [p["inlineData"] for p in body["contents"][0]["parts"][:-1]]
        assert [m["mimeType"] for m in media] == ["video/mp4"]
        with av.open(io.BytesIO(base64.b64decode(media[0]["data"]))) as clip:
            sent = sum(1 for _ in clip.decode(video=0))
        with av.open(str(tmp_path / "suite" / "videos" / "order-000-a.mp4")) as source:
            whole = sum(1 for _ in source.decode(video=0))
        assert sent == whole  # synth items have no window: the whole video, every frame
    assert_key_nowhere(tmp_path, result.stdout, result.stderr)


def test_the_clip_is_exactly_the_items_window(tmp_path):
    """30 frames at 10 fps, each one flat grey level 8 * i; the window [1.0, 2.0) s holds frames
    10 to 19, so the clip has 10 frames of levels 80 to 152, at 10 fps."""
    import av

    from timefoil.models.served.clips import window_clip
    from timefoil.video.decode import write_video

    frames = [np.full((48, 64, 3), 8 * i, dtype=np.uint8) for i in range(30)]
    write_video(str(tmp_path / "v.mp4"), frames, fps=10)
    clip = window_clip(VideoRef.file(str(tmp_path / "v.mp4"), 1.0, 2.0), None)
    with av.open(io.BytesIO(clip)) as container:
        rate = container.streams.video[0].average_rate
        levels = [float(f.to_ndarray(format="rgb24").mean()) for f in container.decode(video=0)]
    assert rate == 10 and len(levels) == 10
    assert np.allclose(levels, [8 * i for i in range(10, 20)], atol=3)


def test_gemini_replies_read_as_documented():
    from timefoil.models.served.gemini import Gemini

    model = Gemini("m", "http://127.0.0.1:9/v1beta")
    # a candidate without logProbability is unknown, never certain; a thought part is not the answer
    read = model.reply({"candidates": [{"content": {"parts": [{"text": "No, wait", "thought": True}, {"text": "Ye"},
                                                              {"text": "s"}]}, "finishReason": "STOP",
                                        "logprobsResult": {"topCandidates": [{"candidates": [{"token": "Yes"}]}]}}]})
    assert (read.text, read.finish_reason, read.alternatives) == ("Yes", "STOP", [("Yes", None)])
    blocked = model.reply({"promptFeedback": {"blockReason": "SAFETY"}})  # an answer (empty), not a retry
    assert (blocked.text, blocked.finish_reason) == ("", "blocked: SAFETY")
    for malformed in ({}, {"candidates": []}, {"candidates": "x"}):
        with pytest.raises((KeyError, IndexError, TypeError, AttributeError)):
            model.reply(malformed)


def test_a_clip_made_for_natural_order_is_not_reused_for_a_shuffled_request(tmp_path):
    """One model serves every condition of an ablation: the clip encoded for the natural order
    must not stand in for the shuffled one, which a clip cannot show."""
    from timefoil.models.served.frames import NotSendable
    from timefoil.models.served.gemini import Gemini
    from timefoil.models.requests import Request
    from timefoil.video import Sampling
    from timefoil.video.decode import write_video

    write_video(str(tmp_path / "v.mp4"), [np.full((32, 32, 3), 20 * i, dtype=np.uint8) for i in range(8)], fps=4)
    model = Gemini("m", "http://127.0.0.1:9/v1beta", video_input="file")
    video = VideoRef.file(str(tmp_path / "v.mp4"))
    natural = model.shown(Request("entailment", video, "q", Sampling(frames=4)), None)
    assert [m.mime for m in natural] == ["video/mp4"] and model.encoded.encodes == 1
    with pytest.raises(NotSendable, match="the shuffled frame-order ablation needs video_input=frames"):
        model.shown(Request("entailment", video, "q", Sampling(frames=4, order="shuffled")), None)
