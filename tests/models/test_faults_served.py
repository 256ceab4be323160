"""Fault rows for the served-model adapter (``openai:<model>@<url>``), each against a local fake
server that misbehaves on purpose: a key echoed by the server or written in the URL, a body
dripped a byte at a time, Retry-After, NaN log-probabilities, a huge reply, and model-args
that must be refused before any request. Every row also checks that no piece of a key reaches
a file of the run or the cache, or a line of output, and that every stored JSON is strict."""
from __future__ import annotations

import hashlib
import json
import math
import os
import sqlite3
import time
from collections import defaultdict
from email.utils import formatdate
from pathlib import Path
from typing import Callable

import pytest

pytest.importorskip("httpx")

from faults import Fault, cli, run_fault  # noqa: E402
from provider_fakes import FakeServer  # noqa: E402

from timefoil.models.served.limits import retry_after_seconds  # noqa: E402
from timefoil.models.served.openai import OpenAICompatible  # noqa: E402
from timefoil.core.redaction import public_url, redact  # noqa: E402
from timefoil.execution.store import RunLog, strict_json  # noqa: E402
from timefoil.synth import generate  # noqa: E402

ENV_KEY = "sk-live-7Qz9Xw2Lm4Np6Rt8Vb0Kc3Hd5"  # in OPENAI_API_KEY
URL_KEY = "uk-9f8e7d6c5b4a3210ffeeddcc"  # written in the base URL only
FRAGMENT = 8  # no run of this many characters of a key may be stored or shown
FAST_RETRIES = ["--model-arg", "backoff=0.01", "--model-arg", "max_backoff=0.02"]


def key_pieces() -> set[str]:
    return {key[i:i + FRAGMENT] for key in (ENV_KEY, URL_KEY) for i in range(len(key) - FRAGMENT + 1)}


def strict_loads(text: str):
    """json.loads that refuses NaN and Infinity (what a browser's JSON.parse refuses)."""
    def refuse(constant):
        raise ValueError(f"{constant} is not JSON")
    return json.loads(text, parse_constant=refuse)


def asked(body: dict) -> str:
    """What a request asks (its frames and text): the same for each attempt at it."""
    return hashlib.sha256(json.dumps(body["messages"], sort_keys=True).encode()).hexdigest()


def reply(content: str, logprobs: str = "") -> bytes:
    """A chat-completions body written by hand (so it can hold what json.dumps would not)."""
    return (f'{{"choices": [{{"message": {{"role": "assistant", "content": {json.dumps(content)}}}, '
            f'"finish_reason": "stop"{logprobs}}}]}}').encode()


class Served:
    """One row's fake server and run: ``prepare`` renders a one-group synthetic suite, starts
    the server on loopback and returns the command; ``after`` checks the row's own facts;
    the row's test stops the server whatever happened."""

    def __init__(self, script: Callable | None = None, *, args: tuple[str, ...] = (), protocol: str = "entailment",
                 url: Callable[[str], str] = lambda url: url, check: Callable | None = None, shown: str = ""):
        self.script, self.args, self.protocol, self.url, self.check = script, args, protocol, url, check
        self.shown = shown  # what the output must hold, as the server sent it
        self.server: FakeServer | None = None
        self.arrivals: dict[str, list[float]] = defaultdict(list)  # per request, when each attempt came

    def prepare(self, tmp_path: Path) -> list[str]:
        suite = str(tmp_path / "suite")
        generate(suite, per_family=1, seed=4, families=("order",))
        self.server = FakeServer(failure_rate=0.0)
        if self.script:
            def script(handler, body, call):
                self.arrivals[asked(body)].append(time.monotonic())
                return self.script(handler, body, call)
            self.server.script = script
        return ["run", "synth", "--model", f"openai:m@{self.url(self.server.url)}", "--data", suite,
                "--protocol", self.protocol, "--frames", "1", "--limit", "1", "--out", str(tmp_path / "run"),
                "--no-progress", *self.args]

    def after(self, tmp_path: Path) -> None:
        if self.check:
            self.check(self, tmp_path)

    def gaps(self, attempts: int, least: float) -> list[float]:
        """Seconds between consecutive attempts at one request. Requests that differ only in
        what the server is not shown (an entailment caption asked for two items) send the same
        body, and on a loaded machine their attempts interleave: arrivals are chained, each to
        the earliest open chain it comes at least ``least`` after, else starting a chain of its
        own (a twin's attempt cut by its deadline before the server read it leaves a chain short)."""
        gaps = []
        for times in self.arrivals.values():
            chains: list[list[float]] = []
            for moment in sorted(times):
                chain = next((c for c in chains if len(c) < attempts and moment - c[-1] >= least), None)
                if chain is None:
                    chains.append([moment])
                else:
                    chain.append(moment)
            assert any(len(c) == attempts for c in chains), (sorted(times), attempts)
            gaps += [later - earlier for c in chains for earlier, later in zip(c, c[1:])]
        return gaps

    def close(self) -> None:
        if self.server is not None:
            self.server.close()


def records(tmp_path: Path) -> list[dict]:
    return RunLog(str(tmp_path / "run")).read()


def errors(tmp_path: Path) -> list[str]:
    return [r["answer"]["error"] for r in records(tmp_path)]


# -- what the fake server does ----------------------------------------------------------------------
def echo_key_across_the_cut(handler, body, call):
    """A 400 whose body repeats the key across 300 characters, where the stored error is cut:
    '{"error": "' is 11, the padding 253, ' key ' 5, so the key starts at the body's 269th
    character and, after 'api error: HTTP 400: ' (21), at the message's 290th."""
    handler.send(400, ('{"error": "' + "x" * 253 + " key " + ENV_KEY + ' is not allowed"}').encode())


def echo_key_across_a_small_cap(handler, body, call):
    """A 400 whose body holds the key from its 191st byte ('{"error": "' is 11, the padding 175,
    ' key ' 5), across a ``max_reply_bytes`` of 200: the key is whole only past the cap."""
    handler.send(400, ('{"error": "' + "x" * 175 + " key " + ENV_KEY + ' is not allowed"}').encode())


def redirected(handler, body, call):
    """A 307 to another host, whose address carries the URL's key in its query."""
    handler.send(307, b"", headers=[("Location", f"http://other.example/v1/chat/completions?key={URL_KEY}")])


def cut_by_the_token_limit(handler, body, call):
    """A reply that ran out of tokens before its answer (finish_reason "length")."""
    handler.send(200, b'{"choices": [{"message": {"role": "assistant", "content": "The video first shows"}, '
                      b'"finish_reason": "length"}]}')


def echo_path(handler, body, call):
    """A 400 that repeats the request's path and query (where the URL's key travels)."""
    handler.send(400, json.dumps({"error": f"no such route {handler.path}"}).encode())


def bracketed(handler, body, call):
    """A 400 whose words look like console markup (a closing tag with no opening one)."""
    handler.send(400, b'{"error": "[/bold] quota [b]exceeded"}')


def drip(handler, body, call):
    """A 200 whose 100-byte body comes one byte each 0.3 s (30 s in all): no read ever waits
    a second, so only a deadline on the whole request stops it."""
    try:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", "100")
        handler.end_headers()
        for _ in range(100):
            handler.wfile.write(b" ")
            handler.wfile.flush()
            time.sleep(0.3)
    except (BrokenPipeError, ConnectionResetError):
        pass


def first_refused_with_a_date():
    """Each request's first attempt (all arrive within 0.85 s of the first of them, however
    loaded the machine; a retry comes no sooner than 1 s, the date's own resolution): 503 with
    Retry-After as an HTTP date 2 s ahead; later attempts: the answer."""
    first: dict[str, float] = {}

    def script(handler, body, call):
        if time.monotonic() - first.setdefault(asked(body), time.monotonic()) > 0.85:
            return handler.send(200, reply("Yes"))
        handler.send(503, b'{"error": "busy"}', headers=[("Retry-After", formatdate(time.time() + 2, usegmt=True))])
    return script


def without_vision(handler, body, call):
    """llama-server without --mmproj, shown images."""
    handler.send(500, b'{"error": {"code": 500, "message": "image input is not supported - hint: if this is '
                      b'unexpected, you may need to provide the mmproj", "type": "server_error"}}')


def check_stopped_at_the_first(row: Served, tmp_path: Path) -> None:
    """One request reached the server; every record holds its error, the rest never sent."""
    stored = records(tmp_path)
    assert row.server.calls == 1 and stored and all("image input is not supported" in e for e in errors(tmp_path))
    assert sorted({r["answer"]["meta"]["attempts"] for r in stored}) == [0, 1]


def always(status: int, header: str):
    def script(handler, body, call):
        handler.send(status, b'{"error": "slow down"}', headers=[("Retry-After", header)])
    return script


def non_finite_logprobs(handler, body, call):
    """Yes, with the first token's log-probabilities NaN (odd calls) or Infinity (even calls):
    Python's json reads both, and json.dumps would write them back as bare NaN / Infinity."""
    bad = "NaN" if call % 2 else "Infinity"
    logprobs = (f', "logprobs": {{"content": [{{"token": "Yes", "logprob": {bad}, "top_logprobs": '
                f'[{{"token": "Yes", "logprob": {bad}}}, {{"token": "No", "logprob": -2.0}}]}}]}}')
    handler.send(200, reply("Yes", logprobs))


def huge(handler, body, call):
    """A 6 MB answer (beyond the 4 MiB default cap)."""
    handler.send(200, reply("Y" * (6 * 1024**2)))


# -- what must hold afterwards ----------------------------------------------------------------------
def check_cut_error(row: Served, tmp_path: Path) -> None:
    said = errors(tmp_path)
    assert said and all(e.startswith("api error: HTTP 400: ") and "[redacted]" in e and len(e) <= 300 for e in said)
    report = cli("report", str(tmp_path / "run"), "--html", str(tmp_path / "report.html"), "--no-thumbnails",
                 env={"TIMEFOIL_CACHE": str(tmp_path / "cache")}, timeout=60)
    assert report.returncode == 0, report.stderr
    shown = report.stdout + report.stderr + (tmp_path / "report.html").read_text(encoding="utf-8")
    assert not [piece for piece in key_pieces() if piece in shown]


def check_key_cut_out_before_the_cap(row: Served, tmp_path: Path) -> None:
    said = errors(tmp_path)
    assert said and all(e == 'api error: HTTP 400: {"error": "' + "x" * 175 + ' key [redacted] is not allowed"}'
                        for e in said), said


def check_redirect_not_followed(row: Served, tmp_path: Path) -> None:
    """One attempt per request (max_retries=2 allows three), the target named without its query."""
    said = errors(tmp_path)
    assert said and all(e == "api error: HTTP 307: a redirect, not followed (give the address it names as the base "
                             "URL): http://other.example/v1/chat/completions" for e in said), said
    assert row.server.calls == len({r["request"]["key"] for r in records(tmp_path)})  # each asked once


def scored(tmp_path: Path) -> dict:
    result = cli("score", str(tmp_path / "run"), "--json", env={"TIMEFOIL_CACHE": str(tmp_path / "cache")}, timeout=60)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def check_counted_as_stopped(row: Served, tmp_path: Path) -> None:
    """Every answer ran out of tokens: counted as stopped, none as a parse failure, in the score
    and in the terminal summary."""
    stored = records(tmp_path)
    report = scored(tmp_path)
    assert stored and (report["parse_failures"], report.get("stopped")) == (0, len(stored))
    said = cli("score", str(tmp_path / "run"), env={"TIMEFOIL_CACHE": str(tmp_path / "cache")}, timeout=60).stdout
    assert f"0 parse failures · {len(stored)} stopped (refused, blocked or out of tokens)" in said


def check_public_url(row: Served, tmp_path: Path) -> None:
    meta = strict_loads((tmp_path / "run" / "run.json").read_text(encoding="utf-8"))
    assert meta["config"]["model"] == f"openai:m@{row.server.url}"
    assert meta["model_fingerprint"]["base_url"] == row.server.url
    assert row.server.paths and set(row.server.paths) == {f"/v1/chat/completions?key={URL_KEY}"}  # still sent
    assert all(e.startswith("api error: HTTP 400:") and "/v1/chat/completions" in e for e in errors(tmp_path))


def check_shown_as_sent(row: Served, tmp_path: Path) -> None:
    said = errors(tmp_path)
    assert said and all(e == 'api error: HTTP 400: {"error": "[/bold] quota [b]exceeded"}' for e in said)


def check_deadline(deadline: float):
    def check(row: Served, tmp_path: Path) -> None:
        said = errors(tmp_path)
        assert said and all(e == f"api error after 2 attempts: no whole reply within the deadline of {deadline:g} s"
                            for e in said)
        # The server sees an attempt once its upload is in, which on a busy machine can lag the
        # client's clock by a few tenths of a second: the bounds leave room for that, and
        # without a deadline the first attempt alone would last 30 s.
        gaps = row.gaps(attempts=2, least=deadline / 2)
        assert gaps and all(deadline / 2 <= gap <= deadline + 1.5 for gap in gaps), gaps
    return check


def check_gaps(least: float, most: float, attempts: int, error: str | None):
    def check(row: Served, tmp_path: Path) -> None:
        gaps = row.gaps(attempts, least)
        assert gaps and all(least <= gap <= most for gap in gaps), gaps
        said = errors(tmp_path)
        assert all(e == error for e in said) if error else not any(said)
    return check


def check_logprobs_dropped(row: Served, tmp_path: Path) -> None:
    stored = records(tmp_path)
    assert stored and all(r["answer"]["probs"] is None and r["parsed"]["value"] == "yes"
                          and r["parsed"]["status"] == "ok" and r["parsed"]["read_from"] == "text"
                          for r in stored)
    dropped = {r["answer"]["meta"]["logprobs_dropped"] for r in stored}
    assert {"log-probability nan of token 'Yes' is not a finite number <= 0",
            "log-probability inf of token 'Yes' is not a finite number <= 0"} == dropped


def check_capped(row: Served, tmp_path: Path) -> None:
    said = errors(tmp_path)
    assert said and all(e == "api error: reply larger than 4194304 bytes (max_reply_bytes)" for e in said)
    stored = sum(os.path.getsize(os.path.join(d, f)) for folder in ("run", "cache")
                 for d, _, files in os.walk(tmp_path / folder) for f in files)
    assert stored < 1024**2, stored


def check_nothing_asked(row: Served, tmp_path: Path) -> None:
    assert row.server.calls == 0 and not (tmp_path / "run" / "items.jsonl").exists()


def key_in_url(url: str) -> str:
    return url.replace("http://", f"http://user:{URL_KEY}@") + f"?key={URL_KEY}"


HEADER_REFUSED = (r"^Error: the key in OPENAI_API_KEY holds a character an HTTP header cannot carry \(beyond ASCII, "
                  r"or a control character such as a newline\): set OPENAI_API_KEY to the key alone$")
FAILED = r"items failed \(\d+ × api error[^)]*\); ask them again with: "
ENV = {"OPENAI_API_KEY": ENV_KEY}
# a run whose every answer was stopped: its numbers are unread, and its last line says so
ALL_STOPPED = (r"^answers that could not be read: synth · \w+: (\d+) of \1 \(0 parse failures, \1 stopped\); "
               r"their numbers are shown as unread, not as scores \(.*\)$")
ROWS = [
    ("server echoes the key across the 300-character cut", Served(echo_key_across_the_cut, check=check_cut_error),
     3, FAILED, ENV),
    ("key in the base URL's userinfo and query", Served(echo_path, url=key_in_url, check=check_public_url),
     3, FAILED + r"timefoil run synth --model '?openai:m@http://127\.0\.0\.1:\d+/v1'? ", {}),
    ("key in the base URL of a model refused for the protocol", Served(url=key_in_url, protocol="similarity"),
     1, r"^Error: model 'openai:m@http://127\.0\.0\.1:\d+/v1' cannot answer similarity requests", {}),
    ("server words that look like console markup",
     Served(bracketed, check=check_shown_as_sent, shown='HTTP 400: {"error": "[/bold] quota [b]exceeded"}'),
     3, FAILED, ENV),
    ("body dripped a byte each 0.3 s, deadline=1 with timeout=10",
     Served(drip, args=("--model-arg", "timeout=10", "--model-arg", "deadline=1", "--model-arg", "max_retries=1",
                        *FAST_RETRIES), check=check_deadline(1.0)), 3, FAILED, ENV),
    ("429 with Retry-After 1 s", Served(always(429, "1"), args=("--model-arg", "max_retries=1", *FAST_RETRIES),
                                        check=check_gaps(0.95, 2.5, 2, "api error after 2 attempts: "
                                                                       "TransientError: HTTP 429")), 3, FAILED, ENV),
    ("503 with Retry-After as an HTTP date 2 s ahead, then the answer",
     Served(first_refused_with_a_date(), args=("--model-arg", "max_retries=2", *FAST_RETRIES),
            check=check_gaps(0.9, 3.0, 2, None)), 0, r"^$", ENV),
    ("429 with Retry-After 3600 s waits max_retry_after=0.5",
     Served(always(429, "3600"), args=("--model-arg", "max_retries=1", "--model-arg", "max_retry_after=0.5",
                                       *FAST_RETRIES),
            check=check_gaps(0.45, 2.0, 2, "api error after 2 attempts: TransientError: HTTP 429")), 3, FAILED, ENV),
    ("NaN and Infinity log-probabilities", Served(non_finite_logprobs, check=check_logprobs_dropped), 0, r"^$", ENV),
    ("a 6 MB reply", Served(huge, check=check_capped), 3, FAILED, ENV),
    ("server echoes the key across max_reply_bytes=200",
     Served(echo_key_across_a_small_cap, args=("--model-arg", "max_reply_bytes=200"),
            check=check_key_cut_out_before_the_cap), 3, FAILED, ENV),
    ("a key of 2 characters", Served(check=check_nothing_asked), 1,
     r"^Error: the key in OPENAI_API_KEY is 2 characters long; a key shorter than 8 cannot be told apart from "
     r"answer text: unset OPENAI_API_KEY for a server that takes no key$", {"OPENAI_API_KEY": "es"}),
    ("the key itself given as api_key_env", Served(args=("--model-arg", f"api_key_env={ENV_KEY}"),
                                                   check=check_nothing_asked), 1,
     r"^Error: api_key_env must be the name of an environment variable that holds the key \(capitals, digits and _, "
     r"as OPENAI_API_KEY\), not the key itself; the value given is not shown here$", {}),
    ("api_key_env naming a variable that is not set",
     Served(args=("--model-arg", "api_key_env=TIMEFOIL_NO_SUCH_KEY"), check=check_nothing_asked), 1,
     r"^Error: api_key_env names TIMEFOIL_NO_SUCH_KEY, which is not set: export TIMEFOIL_NO_SUCH_KEY=<key> first$",
     {"TIMEFOIL_NO_SUCH_KEY": ""}),
    ("a key with a letter beyond ASCII", Served(check=check_nothing_asked), 1, HEADER_REFUSED,
     {"OPENAI_API_KEY": ENV_KEY[:14] + "é" + ENV_KEY[14:]}),
    ("a key with a newline at its end", Served(check=check_nothing_asked), 1, HEADER_REFUSED,
     {"OPENAI_API_KEY": ENV_KEY + "\n"}),
    ("307 redirect to another host", Served(redirected, args=("--model-arg", "max_retries=2", *FAST_RETRIES),
                                            check=check_redirect_not_followed), 3, FAILED, ENV),
    ("reply out of tokens (finish_reason length)", Served(cut_by_the_token_limit, check=check_counted_as_stopped),
     0, ALL_STOPPED, ENV),
    ("frames to a server without vision", Served(without_vision, args=("--model-arg", "concurrency=1"),
                                                 check=check_stopped_at_the_first),
     3, FAILED, ENV),
    ("a dead proxy set for a server on 127.0.0.1", Served(check=check_nothing_asked,
                                                          args=("--model-arg", "connect_window=0.2")), 1,
     r"^Error: no connection to http://127\.0\.0\.1:\d+/v1 for [\d.]+ s \(ConnectError: .*\) through the proxy "
     r"http://127\.0\.0\.1:9 \(HTTP_PROXY\): is the proxy up\? \(add the host to NO_PROXY to reach it directly\)$",
     {**ENV, "HTTP_PROXY": "http://127.0.0.1:9", "http_proxy": "", "NO_PROXY": "", "no_proxy": ""}),
    ("concurrency=0", Served(huge, args=("--model-arg", "concurrency=0"), check=check_nothing_asked), 1,
     r"^Error: model-arg concurrency must be a whole number of 1 or more, not 0$", ENV),
    ("timeout=nan", Served(huge, args=("--model-arg", "timeout=nan"), check=check_nothing_asked), 1,
     r"^Error: model-arg timeout must be a finite number above 0, not nan$", ENV),
    ("max_retries=-1", Served(huge, args=("--model-arg", "max_retries=-1"), check=check_nothing_asked), 1,
     r"^Error: model-arg max_retries must be a whole number of 0 or more, not -1$", ENV),
]
FAULTS = [Fault(name, served.prepare, code, last, served.after, env=env, timeout=40)
          for name, served, code, last, env in ROWS]
SERVED = {name: served for name, served, *_ in ROWS}


def check_stored_and_shown(tmp_path: Path, result) -> None:
    """No piece of a key in any file of the run or the cache or in any output line; every
    stored JSON strict (the report's browser parses it)."""
    pieces = key_pieces()
    shown = [piece for piece in pieces if piece in result.stdout + result.stderr]
    assert not shown, shown
    for folder in ("run", "cache"):
        for dirpath, _, files in os.walk(tmp_path / folder):
            for name in files:
                data = open(os.path.join(dirpath, name), "rb").read().decode("utf-8", "replace")
                assert not [piece for piece in pieces if piece in data], name
                if name.endswith(".json"):
                    strict_loads(data)
                if name.endswith(".jsonl"):
                    for line in data.splitlines():
                        strict_loads(line)
    database = tmp_path / "cache" / "responses.sqlite"
    if database.exists():
        with sqlite3.connect(database) as db:
            for (value,) in db.execute("SELECT value FROM responses"):
                strict_loads(value)


@pytest.mark.parametrize("fault", FAULTS, ids=str)
def test_fault(fault, tmp_path):
    try:
        result = run_fault(fault, tmp_path)
    finally:
        SERVED[fault.name].close()
    check_stored_and_shown(tmp_path, result)
    assert SERVED[fault.name].shown in result.stdout


# -- what the rows cannot reach from the command line --------------------------------------------------
@pytest.mark.parametrize("name, value, allowed", [
    ("concurrency", -2, "a whole number of 1 or more"), ("concurrency", "abc", "a whole number of 1 or more"),
    ("concurrency", 1.5, "a whole number of 1 or more"), ("concurrency", True, "a whole number of 1 or more"),
    ("timeout", 0, "a finite number above 0"), ("timeout", float("inf"), "a finite number above 0"),
    ("timeout", "soon", "a finite number above 0"), ("max_retries", "many", "a whole number of 0 or more"),
    ("deadline", -1.0, "a finite number above 0"), ("max_reply_bytes", 0, "a whole number of 1 or more"),
    ("max_retry_after", math.nan, "a finite number of 0 or more"),
])
def test_a_bad_number_is_refused_by_name(name, value, allowed):
    with pytest.raises(ValueError) as refused:
        OpenAICompatible("m", "http://127.0.0.1:9/v1", **{name: value})
    assert str(refused.value) == f"model-arg {name} must be {allowed}, not {value!r}"


def test_the_deadline_defaults_to_the_timeout_and_the_url_keeps_its_query_for_requests_only():
    model = OpenAICompatible("m", f"https://user:{URL_KEY}@api.example.com/v1/?key={URL_KEY}&v=2", timeout=7)
    assert model.deadline == 7.0
    assert model.endpoint == f"https://user:{URL_KEY}@api.example.com/v1/chat/completions?key={URL_KEY}&v=2"
    assert model.name == "openai:m@https://api.example.com/v1"
    assert URL_KEY not in json.dumps(model.fingerprint())


def test_a_key_is_redacted_before_a_text_is_cut_and_urls_lose_userinfo_and_query():
    text = "x" * 295 + ENV_KEY
    assert redact(text, ENV_KEY)[:300] == "x" * 295 + "[reda"
    assert public_url(f'see "https://a:{URL_KEY}@h.io/v1?key={URL_KEY}#f" and ftp://h/x?y=1 here') == \
        'see "https://h.io/v1" and ftp://h/x here'


def test_retry_after_reads_seconds_and_http_dates():
    assert retry_after_seconds("3") == 3.0 and retry_after_seconds(None) == 0.0
    assert retry_after_seconds("soon") == 0.0 and retry_after_seconds("-5") == 0.0
    assert 8.0 <= retry_after_seconds(formatdate(time.time() + 10, usegmt=True)) <= 10.0
    assert retry_after_seconds(formatdate(time.time() - 60, usegmt=True)) == 0.0


def test_non_finite_numbers_are_stored_as_null_and_noted():
    """Any model's NaN (not only a served one) is written as null, and the record says where."""
    line = strict_json({"answer": {"probs": {"yes": math.nan, "no": 0.25}, "score": -math.inf}, "id": "r"})
    assert strict_loads(line) == {"answer": {"probs": {"yes": None, "no": 0.25}, "score": None}, "id": "r",
                                  "non_finite": ["answer.probs.yes", "answer.score"]}
    assert strict_json({"a": 1.5}) == '{"a": 1.5}'
