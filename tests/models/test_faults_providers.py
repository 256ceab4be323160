"""Fault rows for the native providers (``gemini:`` and ``anthropic:``), each against a local
fake server that checks the documented request shape and then misbehaves on purpose: a key
missing, 429 with Retry-After, a provider overloaded, more frames than the API takes, a
malformed reply, an error body echoing the key, a clip that cannot show what was asked. Every
row also checks that no piece of the key reaches a file of the run or the cache, or a line of
output."""
from __future__ import annotations

import hashlib
import json
import os
import time
from collections import defaultdict
from pathlib import Path
from typing import Callable

import pytest

pytest.importorskip("httpx")

from faults import Fault, cli, run_fault  # noqa: E402
from provider_fakes import ProviderServer  # noqa: E402

from timefoil.execution.store import RunLog  # noqa: E402
from timefoil.synth import generate  # noqa: E402

KEY = "pk-live-3Hs8Wd1Qy6Fn0Jc5Xv2Br9"
FRAGMENT = 8
FAST_RETRIES = ("--model-arg", "backoff=0.01", "--model-arg", "max_backoff=0.02")
KEYS = {"gemini": {"GEMINI_API_KEY": KEY, "GOOGLE_API_KEY": ""}, "anthropic": {"ANTHROPIC_API_KEY": KEY}}
NO_KEYS = {"GEMINI_API_KEY": "", "GOOGLE_API_KEY": "", "ANTHROPIC_API_KEY": ""}


def asked(body: dict) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


class Provided:
    """One row's fake server (none with ``serve=False``) and run of a one-group synthetic suite."""

    def __init__(self, provider: str, script: Callable | None = None, *, args: tuple[str, ...] = (),
                 check: Callable | None = None, serve: bool = True):
        self.provider, self.script, self.args, self.check, self.serve = provider, script, args, check, serve
        self.server: ProviderServer | None = None
        self.arrivals: dict[str, list[float]] = defaultdict(list)

    def prepare(self, tmp_path: Path) -> list[str]:
        suite = str(tmp_path / "suite")
        generate(suite, per_family=1, seed=4, families=("order",))
        spec = f"{self.provider}:m"
        if self.serve:
            def script(handler, body, call):
                self.arrivals[asked(body)].append(time.monotonic())
                return self.script(handler, body, call)
            self.server = ProviderServer(self.provider, KEY, script=script if self.script else None)
            spec += f"@{self.server.url}"
        return ["run", "synth", "--model", spec, "--data", suite, "--protocol", "entailment", "--frames", "1",
                "--limit", "1", "--out", str(tmp_path / "run"), "--no-progress", *self.args]

    def after(self, tmp_path: Path) -> None:
        if self.server is not None:
            assert self.server.violations == []
        if self.check:
            self.check(self, tmp_path)

    def close(self) -> None:
        if self.server is not None:
            self.server.close()


def errors(tmp_path: Path) -> list[str]:
    return [r["answer"]["error"] for r in RunLog(str(tmp_path / "run")).read()]


# -- what the fake server does ----------------------------------------------------------------------
def always(status: int, body: bytes, headers=()):
    def script(handler, sent, call):
        handler.send(status, body, headers=headers)
    return script


def overloaded_once():
    """529 (overloaded) at each body's first arrival, then the documented answer."""
    seen: set[str] = set()

    def script(handler, body, call):
        if asked(body) in seen:
            text = body["messages"][0]["content"][-1]["text"]
            return handler.send(200, json.dumps({"type": "message", "role": "assistant", "content": [
                {"type": "text", "text": "Yes" if "jumps" in text else "No"}], "stop_reason": "end_turn"}).encode())
        seen.add(asked(body))
        handler.send(529, b'{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}')
    return script


def echo_key(header: str):
    """An error body repeating the key the request carried, as a careless proxy would."""
    def script(handler, body, call):
        handler.send(401, json.dumps({"error": {"message": f"invalid key {handler.headers[header]}"}}).encode())
    return script


def rate_limited_for(delay: str):
    """429 with no Retry-After header, the wait said in the body's RetryInfo as Gemini does."""
    body = {"error": {"code": 429, "message": "Resource has been exhausted", "status": "RESOURCE_EXHAUSTED",
                      "details": [{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []},
                                  {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay}]}}
    return always(429, json.dumps(body).encode())


def gemini_finished(reason: str, parts: list[dict]):
    """A 200 whose one candidate ended for ``reason`` with ``parts`` (none: nothing written)."""
    candidate = {"content": {"parts": parts, "role": "model"}, "finishReason": reason, "index": 0}
    return always(200, json.dumps({"candidates": [candidate]}).encode())


def anthropic_refused(handler, body, call):
    handler.send(200, json.dumps({"type": "message", "role": "assistant", "content": [], "stop_reason": "refusal",
                                  "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 0}}).encode())


# -- what must hold afterwards ----------------------------------------------------------------------
def said_each(expected: str, calls: int | None = None):
    def check(row: Provided, tmp_path: Path) -> None:
        said = errors(tmp_path)
        assert said and all(e == expected for e in said), said
        if calls is not None:
            assert row.server.calls == calls
    return check


# the server's words kept after the status, cut where every stored error is
EXHAUSTED = ('api error after 2 attempts: TransientError: HTTP 429: {"error": {"code": 429, "message": "Resource has '
             'been exhausted", "status": "RESOURCE_EXHAUSTED", "details": [{"@type": "type.googleapis.com/google.rpc.'
             'QuotaFailure", "violations": []}, {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retry')


def retry_gaps(least: float, most: float, error: str, attempts: int = 2):
    """Requests that differ only in what the server is not shown (an entailment caption asked
    for two items) send the same body and start together: their attempts come in waves."""
    def check(row: Provided, tmp_path: Path) -> None:
        gaps = []
        for times in row.arrivals.values():
            assert len(times) % attempts == 0, (len(times), attempts)
            alike = len(times) // attempts
            gaps += [later - earlier for earlier, later in zip(times, times[alike:])]
        assert gaps and all(least <= gap <= most for gap in gaps), gaps
        said_each(error)(row, tmp_path)
    return check


def answered_after_one_retry(row: Provided, tmp_path: Path) -> None:
    """Each body was refused once (529) and then answered; a request whose body had been
    refused already was answered at its first attempt."""
    stored = RunLog(str(tmp_path / "run")).read()
    assert stored and not any(r["answer"]["error"] for r in stored)
    assert {r["answer"]["meta"]["attempts"] for r in stored} <= {1, 2} and \
        max(r["answer"]["meta"]["attempts"] for r in stored) == 2
    assert all(len(times) >= 2 for times in row.arrivals.values())  # refused, then asked again


def redacted(row: Provided, tmp_path: Path) -> None:
    said = errors(tmp_path)
    assert said and all(e == 'api error: HTTP 401: {"error": {"message": "invalid key [redacted]"}}' for e in said)


def asked_once_each(expected: str):
    """Every request's error is ``expected`` after one attempt (max_retries allows more)."""
    def check(row: Provided, tmp_path: Path) -> None:
        stored = RunLog(str(tmp_path / "run")).read()
        assert stored and all(r["answer"]["error"] == expected for r in stored), errors(tmp_path)
        assert row.server.calls == len({r["request"]["key"] for r in stored})
    return check


def counted_as_stopped(raw: str):
    """Every answer is ``raw`` and counted as stopped (refused, blocked or out of tokens), none
    as a parse failure, in ``score --json`` and in the report's counts."""
    def check(row: Provided, tmp_path: Path) -> None:
        stored = RunLog(str(tmp_path / "run")).read()
        assert stored and all(r["answer"]["raw"] == raw and not r["answer"]["error"] for r in stored)
        env = {"TIMEFOIL_CACHE": str(tmp_path / "cache")}
        scored = json.loads(cli("score", str(tmp_path / "run"), "--json", env=env, timeout=60).stdout)
        assert (scored["parse_failures"], scored.get("stopped")) == (0, len(stored))
        report = cli("report", str(tmp_path / "run"), "--html", str(tmp_path / "r.html"), "--json",
                     str(tmp_path / "r.json"), "--no-thumbnails", env=env, timeout=60)
        assert report.returncode == 0, report.stderr
        assert f"0 parse failures, {len(stored)} stopped" in (tmp_path / "r.html").read_text(encoding="utf-8")
        rows = [row for table in json.loads((tmp_path / "r.json").read_text()) for row in table["rows"]]
        assert rows and all((r["parse_failures"], r["stopped"]) == (0, len(stored)) for r in rows)
    return check


def nothing_written(row: Provided, tmp_path: Path) -> None:
    assert not (tmp_path / "run" / "items.jsonl").exists()


FAILED = r"items failed \(\d+ × {}[^)]*\); ask them again with: "
RETRY_AFTER = ("--model-arg", "max_retries=1", *FAST_RETRIES)
LIMIT = "model error: anthropic takes at most 100 images per request (max_images); this request shows 101 frames: " \
    "sample fewer (--frames, --max-frames)"
CLIP = "model error: video_input=file sends the clip as it plays; the shuffled frame-order ablation needs " \
    "video_input=frames"
# every answer stopped (refused, blocked, out of tokens): its numbers are unread, and the run's last line says so
ALL_STOPPED = (r"^answers that could not be read: synth · \w+: (\d+) of \1 \(0 parse failures, \1 stopped\); "
               r"their numbers are shown as unread, not as scores \(.*\)$")
ROWS = [
    ("gemini without GEMINI_API_KEY or GOOGLE_API_KEY", Provided("gemini", serve=False, check=nothing_written), 1,
     r"^Error: no API key for gemini:m@https://generativelanguage\.googleapis\.com/v1beta: "
     r"set GEMINI_API_KEY or GOOGLE_API_KEY$", NO_KEYS),
    ("anthropic without ANTHROPIC_API_KEY", Provided("anthropic", serve=False, check=nothing_written), 1,
     r"^Error: no API key for anthropic:m@https://api\.anthropic\.com: set ANTHROPIC_API_KEY$", NO_KEYS),
    ("gemini 429 with Retry-After 1 s",
     Provided("gemini", always(429, b'{"error": {"code": 429}}', [("Retry-After", "1")]), args=RETRY_AFTER,
              check=retry_gaps(0.95, 2.5, "api error after 2 attempts: TransientError: HTTP 429")),
     3, FAILED.format("api error"), KEYS["gemini"]),
    ("anthropic 429 with Retry-After 1 s",
     Provided("anthropic", always(429, b'{"type": "error"}', [("Retry-After", "1")]), args=RETRY_AFTER,
              check=retry_gaps(0.95, 2.5, "api error after 2 attempts: TransientError: HTTP 429")),
     3, FAILED.format("api error"), KEYS["anthropic"]),
    ("anthropic 529 overloaded, then the answer",
     Provided("anthropic", overloaded_once(), args=FAST_RETRIES, check=answered_after_one_retry), 0, r"^$",
     KEYS["anthropic"]),
    ("anthropic asked for 101 frames, beyond the API's 100 images per request",
     Provided("anthropic", args=("--frames", "101", "--max-frames", "101"), check=said_each(LIMIT, calls=0)),
     3, FAILED.format("model error"), KEYS["anthropic"]),
    ("anthropic max_images=0", Provided("anthropic", args=("--model-arg", "max_images=0"), check=nothing_written),
     1, r"^Error: model-arg max_images must be a whole number of 1 or more, not 0$", KEYS["anthropic"]),
    ("gemini malformed reply (candidates not a list)",
     Provided("gemini", always(200, b'{"candidates": "x"}'), args=("--model-arg", "max_retries=1", *FAST_RETRIES),
              check=said_each("api error after 2 attempts: malformed response (AttributeError)")),
     3, FAILED.format("api error"), KEYS["gemini"]),
    ("anthropic malformed reply (content not a list)",
     Provided("anthropic", always(200, b'{"type": "message", "content": "Yes"}'),
              args=("--model-arg", "max_retries=1", *FAST_RETRIES),
              check=said_each("api error after 2 attempts: malformed response (TypeError)")),
     3, FAILED.format("api error"), KEYS["anthropic"]),
    ("gemini error body echoing the key", Provided("gemini", echo_key("x-goog-api-key"), check=redacted),
     3, FAILED.format("api error"), KEYS["gemini"]),
    ("anthropic error body echoing the key", Provided("anthropic", echo_key("x-api-key"), check=redacted),
     3, FAILED.format("api error"), KEYS["anthropic"]),
    ("gemini video_input=file with shuffled frames",
     Provided("gemini", args=("--model-arg", "video_input=file", "--frame-order", "shuffled"),
              check=said_each(CLIP, calls=0)), 3, FAILED.format("model error"), KEYS["gemini"]),
    ("gemini 301 redirect", Provided("gemini", always(301, b"", [("Location", "https://elsewhere.example/v1beta/m")]),
                                     args=("--model-arg", "max_retries=2", *FAST_RETRIES),
                                     check=asked_once_each("api error: HTTP 301: a redirect, not followed (give the "
                                                           "address it names as the base URL): "
                                                           "https://elsewhere.example/v1beta/m")),
     3, FAILED.format("api error"), KEYS["gemini"]),
    ("gemini 429 whose RetryInfo asks 1.5s, no Retry-After",
     Provided("gemini", rate_limited_for("1.5s"), args=RETRY_AFTER,
              check=retry_gaps(1.45, 3.0, EXHAUSTED)),
     3, FAILED.format("api error"), KEYS["gemini"]),
    ("gemini 429 whose RetryInfo asks 3600s waits max_retry_after=0.5",
     Provided("gemini", rate_limited_for("3600s"), args=(*RETRY_AFTER, "--model-arg", "max_retry_after=0.5"),
              check=retry_gaps(0.45, 2.0, EXHAUSTED)),
     3, FAILED.format("api error"), KEYS["gemini"]),
    ("gemini reply blocked for SAFETY", Provided("gemini", gemini_finished("SAFETY", []), check=counted_as_stopped("")),
     0, ALL_STOPPED, KEYS["gemini"]),
    ("gemini thinking model out of tokens before its answer",
     Provided("gemini", gemini_finished("MAX_TOKENS", [{"text": "The man jumps, so", "thought": True}]),
              check=counted_as_stopped("")), 0, ALL_STOPPED, KEYS["gemini"]),
    ("anthropic refusal", Provided("anthropic", anthropic_refused, check=counted_as_stopped("")), 0, ALL_STOPPED,
     KEYS["anthropic"]),
    ("gemini video_input=film", Provided("gemini", args=("--model-arg", "video_input=film"), check=nothing_written),
     1, r"^Error: model-arg video_input must be frames or file, not 'film'$", KEYS["gemini"]),
]
FAULTS = [Fault(name, row.prepare, code, last, row.after, env=env, timeout=40) for name, row, code, last, env in ROWS]
PROVIDED = {name: row for name, row, *_ in ROWS}


def assert_key_nowhere(tmp_path: Path, result) -> None:
    pieces = {KEY[i:i + FRAGMENT] for i in range(len(KEY) - FRAGMENT + 1)}
    assert not [piece for piece in pieces if piece in result.stdout + result.stderr]
    for folder in ("run", "cache"):
        for dirpath, _, files in os.walk(tmp_path / folder):
            for name in files:
                data = (Path(dirpath) / name).read_bytes().decode("utf-8", "replace")
                assert not [piece for piece in pieces if piece in data], name


@pytest.mark.parametrize("fault", FAULTS, ids=str)
def test_fault(fault, tmp_path):
    try:
        result = run_fault(fault, tmp_path)
    finally:
        PROVIDED[fault.name].close()
    assert_key_nowhere(tmp_path, result)
