"""Gemini and Anthropic wire formats against local fake servers that check the documented
request shape: whole runs through the command line, the clip sent with video_input=file, and
the replies' documented corners."""
from __future__ import annotations

import base64
import io
import json
import math
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


def run_against(tmp_path: Path, provider: str, *args: str, model: str = "m", url=lambda address: address,
                **server_options):
    """A run of the synthetic suite against a fake ``provider`` server (its address through
    ``url``): (result, server), the server closed and the run checked to have exited 0."""
    server = ProviderServer(provider, KEY, model=model, **server_options)
    try:
        result = run_served(tmp_path, f"{provider}:{model}@{url(server.url)}", provider, *args)
    finally:
        server.close()
    assert result.returncode == 0, result.stderr[-2000:]
    return result, server


@pytest.mark.parametrize("provider", ["gemini", "anthropic"])
@pytest.mark.parametrize("protocol", ["entailment", "choice"])
def test_a_synthetic_run_has_no_error_and_the_key_is_nowhere(tmp_path, provider, protocol):
    result, server = run_against(tmp_path, provider, "--protocol", protocol)
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

    result, server = run_against(tmp_path, "gemini", "--protocol", "entailment", "--model-arg", "video_input=file")
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


def test_a_gemini_thinking_budget_is_sent_beside_the_answers_own_tokens_and_recorded(tmp_path):
    result, server = run_against(tmp_path, "gemini", "--protocol", "entailment", "--model-arg", "thinking_budget=64")
    assert server.violations == [] and server.bodies
    answer_tokens = {r["request"]["max_tokens"] for r in RunLog(str(tmp_path / "run")).read()}
    assert answer_tokens == {16}  # what the question asks; a served Yes/No answer is given at least 256
    for body in server.bodies:  # maxOutputTokens counts thinking too: the answer keeps its own budget
        assert body["generationConfig"]["thinkingConfig"] == {"thinkingBudget": 64}
        assert body["generationConfig"]["maxOutputTokens"] == 64 + 256
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["model_fingerprint"]["thinking_budget"] == 64


def test_a_gemini_base_url_without_a_version_gets_v1beta(tmp_path):
    from timefoil.models.served.gemini import Gemini, versioned

    # the server answers only under /v1beta
    result, server = run_against(tmp_path, "gemini", "--protocol", "entailment",
                                 url=lambda address: address.removesuffix("/v1beta"))
    assert server.violations == [] and server.calls > 0
    assert json.loads((tmp_path / "run" / "run.json").read_text())["model_fingerprint"]["base_url"] == server.url
    assert versioned("http://h:8") == "http://h:8/v1beta" and versioned("https://h/proxy/") == "https://h/proxy/v1beta"
    assert versioned("https://h/v1") == "https://h/v1" and versioned("https://h/v1alpha/") == "https://h/v1alpha/"
    model = Gemini("m", "http://127.0.0.1:9/?key=abcdefgh12345")  # the query (a key) stays on the endpoint only
    assert model.endpoint == "http://127.0.0.1:9/v1beta/models/m:generateContent?key=abcdefgh12345"
    assert model.base_url == "http://127.0.0.1:9/v1beta"
    with pytest.raises(ValueError, match=r"^model-arg thinking_budget must be a whole number of 0 or more, not -5$"):
        Gemini("m", "http://127.0.0.1:9", thinking_budget=-5)


@pytest.mark.parametrize("model, args, sent", [
    ("m", (), 0), ("m", ("--model-arg", "temperature=none"), None), ("m", ("--model-arg", "temperature=0.5"), 0.5),
    ("claude-opus-4-7", (), None),  # it answers 400 to any temperature (the fake refuses one too)
])
def test_anthropic_is_sent_a_temperature_only_where_the_model_takes_one(tmp_path, model, args, sent):
    result, server = run_against(tmp_path, "anthropic", "--protocol", "entailment", "--limit", "1", *args, model=model)
    assert server.violations == [] and server.bodies
    assert {body.get("temperature") for body in server.bodies} == {sent}
    assert all(("temperature" in body) == (sent is not None) for body in server.bodies)


def test_the_anthropic_version_is_a_model_arg_recorded_in_the_fingerprint(tmp_path):
    result, server = run_against(tmp_path, "anthropic", "--protocol", "entailment", "--limit", "1", "--model-arg",
                                 "api_version=2099-01-01", version="2099-01-01")
    assert server.violations == [] and server.calls > 0
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["model_fingerprint"]["api_version"] == "2099-01-01"
    from timefoil.models.served.anthropic import Anthropic

    assert Anthropic("m", "http://127.0.0.1:9").headers("")["anthropic-version"] == "2023-06-01"  # today's default


def test_yes_no_variants_summing_past_one_are_not_read_as_probabilities(tmp_path):
    """Yes 0.6 and " yes" 0.5 (1.1 together) with No's log-probability missing: not one
    distribution, so no probability is kept, the record says why, and the text decides."""
    def script(handler, body, call):
        top = [{"token": "Yes", "logProbability": math.log(0.6)}, {"token": " yes", "logProbability": math.log(0.5)},
               {"token": "No"}]
        handler.send(200, json.dumps({"candidates": [{"content": {"parts": [{"text": "Yes"}]}, "finishReason": "STOP",
                                                      "logprobsResult": {"topCandidates": [{"candidates": top}]}}]})
                     .encode())

    result, server = run_against(tmp_path, "gemini", "--protocol", "entailment", "--limit", "1", script=script)
    stored = RunLog(str(tmp_path / "run")).read()
    assert stored and server.violations == []
    for record in stored:
        assert record["answer"]["probs"] is None
        assert record["answer"]["meta"]["logprobs_dropped"] == "probabilities of yes, no sum to 1.1, above 1"
        assert (record["parsed"]["value"], record["parsed"]["read_from"]) == ("yes", "text")


@pytest.mark.parametrize("kind, alternatives, probs", [
    ("entailment", [("Yes", math.log(0.7)), (" yes", math.log(0.2)), ("No", math.log(0.1))], {"yes": 0.9, "no": 0.1}),
    ("entailment", [("Yes", None), ("No", math.log(0.25))], {"yes": 0.0, "no": 0.25}),  # missing: unknown, not 1
    # 1 + 0.0005 is rounding (under e^0.001): scaled back to a sum of 1
    ("entailment", [("Yes", 0.0), ("yes", math.log(0.0005))], {"yes": 1.0, "no": 0.0}),
    ("entailment", [("Yes", 0.0), ("YES", 0.0)], None),  # both certain: not one distribution
    ("entailment", [("Yes", math.log(0.5)), ("Yes", math.log(0.5)), ("No", math.log(0.3))], {"yes": 0.5, "no": 0.3}),
    ("choice", [("A", math.log(0.5)), ("(A", math.log(0.3)), ("B", math.log(0.4))], None),  # 1.2
    ("choice", [("A", math.log(0.5)), ("(A", math.log(0.3)), ("B", math.log(0.1))], {"A": 0.8, "B": 0.1}),
])
def test_first_token_probabilities_never_sum_past_one(kind, alternatives, probs):
    from timefoil.models.requests import Answer, Request
    from timefoil.models.served.reading import READERS, first_token_probs

    read, unreadable = first_token_probs(alternatives)
    assert unreadable is None
    answer = Answer(raw="x")
    READERS[kind](Request(kind, None, "q", labels=("A", "B") if kind == "choice" else ("Yes", "No")), read, answer)
    if probs is None:
        assert answer.probs is None and "above 1" in answer.meta["logprobs_dropped"]
    else:
        assert answer.probs == pytest.approx(probs) and sum(answer.probs.values()) <= 1.0
