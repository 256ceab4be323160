"""Which model a server answers with, and the errors no retry can pass, against the fake
chat-completions server: the served model (GET /v1/models, as llama-server lists it) keys the
cache and the run; another one at the same address is asked again, and a resume is refused
naming both; a key refused, images sent to a server without vision, or a server gone for
longer than ``connect_window`` stop the asking at the first, in one line."""
import json
import socket
import time

import pytest

pytest.importorskip("httpx")

from provider_fakes import FakeServer, error_body, llama_listing  # noqa: E402
from timefoil import RunConfig, run  # noqa: E402
from timefoil.execution.config import RunError  # noqa: E402
from timefoil.execution.store import RunLog  # noqa: E402
from timefoil.video import Sampling  # noqa: E402

pytestmark = pytest.mark.suite(per_family=1, seed=4, families=("order",))

FAST = {"backoff": "0.01", "max_backoff": "0.02", "concurrency": "1"}


@pytest.fixture
def server():
    fake = FakeServer(failure_rate=0.0)
    yield fake
    fake.close()


def config(server, suite, *, frames=1, protocol="entailment", **args):
    return RunConfig("synth", f"openai:smollm2@{server.url}", data_dir=suite, protocol=protocol,
                     sampling=Sampling(frames=frames), model_args={**FAST, **args})


def run_json(out) -> dict:
    return json.load(open(out / "run.json"))


def test_another_served_model_at_the_same_address_is_asked_again_and_a_resume_is_refused(server, suite, tmp_path):
    server.listing = llama_listing("/models/a.gguf")
    server.answers_as = "/models/a.gguf"
    cache = str(tmp_path / "cache")  # shared, as the default cache folder is
    first = run(config(server, suite), str(tmp_path / "a"), cache_dir=cache, progress=False)
    asked = server.calls
    assert first.errors == 0 and asked > 0
    stored = run_json(tmp_path / "a")
    assert stored["model_fingerprint"]["served"]["id"] == "/models/a.gguf"
    assert "created" not in stored["model_fingerprint"]["served"]  # the time of asking is no identity
    assert "n_ctx" not in stored["model_fingerprint"]["served"]["meta"]  # the slots' context changes no answer
    # the same model again, a new --out: every answer from the cache
    run(config(server, suite), str(tmp_path / "a2"), cache_dir=cache, progress=False)
    assert server.calls == asked
    # another file served behind the same URL and spec: asked again, nothing from the cache
    server.listing = llama_listing("/models/b.gguf", size=200_000_000)
    server.answers_as = "/models/b.gguf"
    run(config(server, suite), str(tmp_path / "b"), cache_dir=cache, progress=False)
    assert server.calls == 2 * asked
    # a requantised copy under the same path: told apart by its size
    server.listing = llama_listing("/models/a.gguf", size=90_000_000)
    server.answers_as = "/models/a.gguf"
    with pytest.raises(RunError) as refused:
        run(config(server, suite), str(tmp_path / "a"), cache_dir=cache, progress=False)
    said = str(refused.value)
    assert "\n" not in said and said.startswith(f"{tmp_path / 'a'} holds a run answered by '/models/a.gguf' "
                                                "(134,515,008 parameters, 100,000,000 bytes); ")
    assert f"{server.url} now serves '/models/a.gguf' (134,515,008 parameters, 90,000,000 bytes)" in said
    assert server.calls == 2 * asked


def test_llama_server_is_asked_without_its_prompt_cache_and_run_json_says_what_was_asked(server, suite, tmp_path):
    sent = []
    reply = server.reply
    server.reply = lambda body: sent.append(body) or reply(body)
    server.listing = llama_listing("/models/a.gguf")
    run(config(server, suite, protocol="choice"), str(tmp_path / "run"), cache_dir=str(tmp_path / "c"),
        progress=False)
    assert sent and all(body["cache_prompt"] is False for body in sent)
    stored = run_json(tmp_path / "run")
    assert stored["model_fingerprint"]["cache_prompt"] is False
    sampling = stored["model_notes"]["sampling"]["choice"]
    assert sampling == {k: sent[0].get(k) for k in ("temperature", "seed", "stop", "max_tokens", "cache_prompt")}
    # a letter is asked with no stop and room to reason (256 tokens): run.json says there was no stop
    assert sampling["temperature"] == 0 and sampling["cache_prompt"] is False
    assert sampling["stop"] is None and "stop" not in sent[0] and sampling["max_tokens"] == 256
    assert stored["model_notes"]["served_model"]["owned_by"] == "llamacpp"


def test_a_server_that_names_no_model_keeps_the_key_it_had_and_run_json_says_so(server, suite, tmp_path):
    from timefoil.models import fingerprint_of, load_model
    from timefoil.models.served.openai import OpenAICompatible

    sent = []
    reply = server.reply
    server.reply = lambda body: sent.append(body) or reply(body)
    run(config(server, suite), str(tmp_path / "run"), cache_dir=str(tmp_path / "c"), progress=False)
    stored = run_json(tmp_path / "run")
    plain = OpenAICompatible("smollm2", server.url, **FAST)  # made as before any server was asked
    assert stored["model_fingerprint"] == fingerprint_of(plain)
    assert stored["model_notes"]["served_model"] == \
        f"not named (GET {server.url}/models answered HTTP 404: answers are keyed by the spec alone)"
    assert sent and not any("cache_prompt" in body for body in sent)  # a field another server may refuse
    assert server.listings == 1  # read once, when the model loaded
    assert "served" not in fingerprint_of(load_model(f"openai:smollm2@{server.url}"))


def test_a_reply_named_by_another_model_mid_run_stops_the_asking(server, suite, tmp_path, capfd):
    server.listing = llama_listing("/models/a.gguf")

    def swapped(handler, body, call):  # restarted with another file after two replies
        answer = server.reply(body)
        answer["model"] = "/models/a.gguf" if call <= 2 else "/models/b.gguf"
        handler.send(200, json.dumps(answer).encode())

    server.script = swapped
    report = run(config(server, suite), str(tmp_path / "run"), cache_dir=str(tmp_path / "c"), progress=False)
    records = RunLog(str(tmp_path / "run")).read()
    errors = [r["answer"]["error"] for r in records if r["answer"]["error"]]
    assert server.calls == 3 and report.errors > 0
    answered = {r["request"]["key"] for r in records if not r["answer"]["error"]}
    assert len(answered) == 2  # the two answers of the model the run is keyed by
    assert set(errors) == {f"api error: the server at {server.url} now answers as '/models/b.gguf', not "
                           "'/models/a.gguf' which this run is keyed by (another model was started there); serve "
                           "that model again, or start a new --out"}
    lines = [line for line in capfd.readouterr().err.splitlines() if "now answers as" in line]
    assert len(lines) == 1


def test_images_sent_to_a_server_without_vision_stop_at_the_first_reply(server, suite, tmp_path, capfd):
    def blind(handler, body, call):
        handler.send(500, error_body(500, "image input is not supported - hint: if this is unexpected, you may "
                                          "need to provide the mmproj", "server_error"))

    server.script = blind
    started = time.monotonic()
    report = run(config(server, suite, frames=2, concurrency="4", max_retries="5", backoff="1"),
                 str(tmp_path / "run"), cache_dir=str(tmp_path / "c"), progress=False)
    elapsed = time.monotonic() - started
    records = RunLog(str(tmp_path / "run")).read()
    assert server.calls <= 4 and report.errors == report.items  # at most the first one in flight each
    assert len(records) > 4 and all(r["answer"]["error"] for r in records)
    assert elapsed < 5, elapsed  # no retry waited for: 1 + 2 + 4 s of backoff had it been retried
    assert {tuple(r["answer"]["error"].split(": ")[:2]) for r in records} == {("api error", "HTTP 500")}
    attempts = {r["request"]["key"]: r["answer"]["meta"].get("attempts") for r in records}
    assert sum(n == 0 for n in attempts.values()) >= len(attempts) - 4 > 0  # never sent
    lines = [line for line in capfd.readouterr().err.splitlines() if line.startswith("timefoil: ")]
    assert len(lines) == 1 and "cannot see images" in lines[0] and "--mmproj" in lines[0]


@pytest.mark.parametrize("status, words, stops", [
    (401, "invalid api key", True), (404, "model not found", True), (422, "unknown field logprobs", True),
    (400, "the request exceeds the available context size", False), (413, "payload too large", False)])
def test_refusals_that_no_retry_passes_stop_the_asking_and_a_size_refusal_is_the_requests_own(
        server, suite, tmp_path, capfd, status, words, stops):
    server.script = lambda handler, body, call: handler.send(status, error_body(status, words, "error"))
    report = run(config(server, suite), str(tmp_path / "run"), cache_dir=str(tmp_path / "c"), progress=False)
    records = RunLog(str(tmp_path / "run")).read()
    distinct = len({r["request"]["key"] for r in records})
    assert report.errors == report.items and all(r["answer"]["error"] for r in records) and distinct > 2
    assert server.calls == (1 if stops else distinct)  # each request sent once: never retried
    said = [line for line in capfd.readouterr().err.splitlines() if line.startswith("timefoil: ")]
    assert len(said) == (1 if stops else 0) and all(words in line for line in said)


def test_503_loading_model_is_waited_for_and_its_words_kept(server, suite, tmp_path):
    server.script = lambda handler, body, call: handler.send(503, error_body(503, "Loading model",
                                                                             "unavailable_error"))
    run(config(server, suite, max_retries="2"), str(tmp_path / "run"), cache_dir=str(tmp_path / "c"),
        progress=False)
    errors = {r["answer"]["error"] for r in RunLog(str(tmp_path / "run")).read()}
    assert errors == {'api error after 3 attempts: TransientError: HTTP 503: {"error": {"code": 503, "message": '
                      '"Loading model", "type": "unavailable_error"}}'}


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # closed when the block ends: connections to it are refused


def test_a_server_gone_for_longer_than_the_window_stops_the_asking(server, suite, tmp_path, capfd):
    from timefoil.models import load_model

    model = load_model(f"openai:m@{server.url}", {**FAST, "connect_window": "0.5", "max_retries": "50"})
    model.endpoint = model.endpoint.replace(str(server.server.server_address[1]), str(closed_port()))
    started = time.monotonic()
    report = run(config(server, suite), str(tmp_path / "run"), cache_dir=str(tmp_path / "c"), progress=False,
                 model=model)
    assert time.monotonic() - started < 5  # 50 retries of a refused connection would be many more
    errors = [r["answer"]["error"] for r in RunLog(str(tmp_path / "run")).read()]
    assert report.errors == report.items and len(errors) > 2 and len(set(errors)) == 1
    assert errors[0].startswith(f"api error: no connection to {server.url} for ") and \
        errors[0].endswith(": start the server, or check the base URL")
    assert len([line for line in capfd.readouterr().err.splitlines() if "no connection to" in line]) == 1


def test_no_server_at_load_is_one_line_after_the_window(suite, tmp_path):
    from timefoil.models import load_model

    url = f"http://127.0.0.1:{closed_port()}/v1"
    with pytest.raises(ValueError) as refused:
        load_model(f"openai:m@{url}", {**FAST, "connect_window": "0.2", "max_retries": "40"})
    said = str(refused.value)
    assert said.startswith(f"no connection to {url} for ") and said.endswith("start the server, or check the base URL")


def test_a_dead_proxy_is_named_and_no_proxy_reaches_a_local_server_directly(server, suite, tmp_path, monkeypatch):
    from timefoil.models import load_model

    dead = f"http://127.0.0.1:{closed_port()}"
    monkeypatch.setenv("HTTP_PROXY", dead)
    for name in ("http_proxy", "NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ValueError) as refused:
        load_model(f"openai:m@{server.url}", {**FAST, "connect_window": "0.2", "max_retries": "40"})
    assert str(refused.value).endswith(f"through the proxy {dead} (HTTP_PROXY): is the proxy up? (add the host to "
                                       "NO_PROXY to reach it directly)")
    monkeypatch.setenv("NO_PROXY", "localhost,127.0.0.1")
    report = run(config(server, suite), str(tmp_path / "run"), cache_dir=str(tmp_path / "c"), progress=False)
    assert report.errors == 0 and server.calls > 0
