"""Fault rows for what a model's own reply holds: a served reply or error body repeating a piece
of the API key (its first 20 characters; its last 12 and 10 from its middle), which must be cut
out of every file of the run and the cache, the report and the output, the words around it kept;
and a local text model (a tiny Llama, ``hf:`` and ``--blind``) whose every answer runs to its
token budget without parsing, which must be counted as stopped (out of tokens), as a served
reply cut by its length already is, not as a parse failure."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Callable

import pytest

pytest.importorskip("httpx")

from faults import Fault, cli, run_fault  # noqa: E402
from provider_fakes import FakeServer  # noqa: E402

from timefoil.execution.store import RunLog  # noqa: E402
from timefoil.synth import generate  # noqa: E402

KEY = "sk-live-Jd4Wq8Zt2Nc6Rv0Xm5Lb9Hp3"  # in OPENAI_API_KEY; 31 characters
FRAGMENT = 8  # no run of this many characters of the key may be stored or shown
FAILED = r"items failed \(\d+ × api error[^)]*\); ask them again with: "
ENV = {"OPENAI_API_KEY": KEY}


def key_pieces() -> set[str]:
    return {KEY[i:i + FRAGMENT] for i in range(len(KEY) - FRAGMENT + 1)}


def records(tmp_path: Path) -> list[dict]:
    return RunLog(str(tmp_path / "run")).read()


def shown(tmp_path: Path) -> str:
    """What the score, the report and its HTML page show of the run."""
    env = {"TIMEFOIL_CACHE": str(tmp_path / "cache")}
    score = cli("score", str(tmp_path / "run"), env=env, timeout=60)
    report = cli("report", str(tmp_path / "run"), "--html", str(tmp_path / "report.html"), "--no-thumbnails",
                 env=env, timeout=60)
    assert score.returncode == 0 and report.returncode == 0, score.stderr + report.stderr
    return score.stdout + score.stderr + report.stdout + report.stderr + \
        (tmp_path / "report.html").read_text(encoding="utf-8")


def nothing_of_the_key(tmp_path: Path, said: str) -> None:
    """No run of 8 of the key's characters in ``said`` or in any file of the run or the cache."""
    assert not [piece for piece in key_pieces() if piece in said]
    for folder in ("run", "cache"):
        for dirpath, _, files in os.walk(tmp_path / folder):
            for name in files:
                data = open(os.path.join(dirpath, name), "rb").read().decode("utf-8", "replace")
                assert not [piece for piece in key_pieces() if piece in data], name


class Served:
    """One row's fake server (chat completions on loopback, answering as ``script``) and run
    of one synthetic group, blind; the row's test stops the server whatever happened."""

    def __init__(self, script: Callable, check: Callable[[Path], None]):
        self.script, self.check = script, check
        self.server: FakeServer | None = None

    def prepare(self, tmp_path: Path) -> list[str]:
        suite = str(tmp_path / "suite")
        generate(suite, per_family=1, seed=4, families=("order",))
        self.server = FakeServer(failure_rate=0.0)
        self.server.script = self.script
        return ["run", "synth", "--model", f"openai:m@{self.server.url}", "--data", suite, "--protocol",
                "entailment", "--blind", "--limit", "1", "--out", str(tmp_path / "run"), "--no-progress",
                "--model-arg", "max_retries=0"]

    def after(self, tmp_path: Path) -> None:
        self.check(tmp_path)
        nothing_of_the_key(tmp_path, shown(tmp_path))

    def close(self) -> None:
        if self.server is not None:
            self.server.close()


# -- what the fake server does ----------------------------------------------------------------------
PREFIX_SAID = f"Yes. Your key starts {KEY[:20]} and the man opens the door."


def says_the_key_prefix(handler, body, call):
    """Yes, and the key's first 20 characters, in the reply's text."""
    handler.send(200, json.dumps({"choices": [{"message": {"role": "assistant", "content": PREFIX_SAID},
                                               "finish_reason": "stop"}]}).encode())


def errs_with_the_key_end_and_middle(handler, body, call):
    """A 400 whose body holds the key's last 12 characters and 10 from its middle (10 to 19)."""
    handler.send(400, json.dumps({"error": f"key ...{KEY[-12:]} revoked (id {KEY[10:20]})"}).encode())


# -- what must hold afterwards ----------------------------------------------------------------------
def check_prefix_cut(tmp_path: Path) -> None:
    """The piece is cut, the words around it kept, and the answer read as yes."""
    stored = records(tmp_path)
    assert stored and all(r["answer"]["raw"] == "Yes. Your key starts [redacted] and the man opens the door."
                          and r["parsed"]["value"] == "yes" for r in stored), [r["answer"] for r in stored]


def check_end_and_middle_cut(tmp_path: Path) -> None:
    stored = records(tmp_path)
    assert stored and all(r["answer"]["error"] == 'api error: HTTP 400: {"error": "key ...[redacted] revoked '
                                                  '(id [redacted])"}' for r in stored), [r["answer"] for r in stored]


# -- a local text model out of its token budget -------------------------------------------------------
def local_out_of_tokens(tmp_path: Path) -> list[str]:
    """A tiny random Llama (seed 0) asked to choose, blind, with a budget of 5 tokens: greedy, it
    says "the the the the the" to every question, an answer that names no option."""
    from timefoil.testing import tiny_llama

    folder = tiny_llama(tmp_path / "model", ["the red square jumps over a blue circle"])
    suite = str(tmp_path / "suite")
    generate(suite, per_family=1, seed=4, families=("order",))
    return ["run", "synth", "--model", f"hf:{folder}", "--data", suite, "--protocol", "choice", "--blind",
            "--max-tokens", "5", "--out", str(tmp_path / "run"), "--no-progress"]


def check_counted_as_stopped(tmp_path: Path) -> None:
    """Six items, each answered "the the the the the" at its budget of 5 tokens: 6 stopped and
    0 parse failures, in the score's JSON and in its terminal summary."""
    stored = records(tmp_path)
    assert len(stored) == 6 and all(r["answer"]["raw"] == "the the the the the" and r["parsed"]["status"] != "ok"
                                    and (r["answer"]["meta"]["stopped"], r["answer"]["meta"]["new_tokens"])
                                    == ("max_tokens", 5) for r in stored), [r["answer"] for r in stored]
    env = {"TIMEFOIL_CACHE": str(tmp_path / "cache")}
    scored = cli("score", str(tmp_path / "run"), "--json", env=env, timeout=60)
    assert scored.returncode == 0, scored.stderr
    report = json.loads(scored.stdout)
    assert (report["items"], report["parse_failures"], report["stopped"]) == (6, 0, 6)
    said = cli("score", str(tmp_path / "run"), env=env, timeout=60).stdout
    assert "6 items · 0 with errors · 0 parse failures · 6 stopped (refused, blocked or out of tokens)" in said


SERVED = {
    "served reply holds the key's first 20 characters": (Served(says_the_key_prefix, check_prefix_cut), 0, r"^$"),
    "served error body holds the key's last 12 characters and a middle piece":
        (Served(errs_with_the_key_end_and_middle, check_end_and_middle_cut), 3, FAILED),
}
FAULTS = [Fault(name, served.prepare, code, last, served.after, env=ENV, timeout=40)
          for name, (served, code, last) in SERVED.items()]
# every answer stopped: its numbers are shown as unread, and the run's last line says so
ALL_STOPPED = (r"^answers that could not be read: synth · \w+: (\d+) of \1 \(0 parse failures, \1 stopped\); "
               r"their numbers are shown as unread, not as scores \(.*\)$")
FAULTS.append(Fault("local text model answers off format at its token budget", local_out_of_tokens, 0, ALL_STOPPED,
                    check_counted_as_stopped, timeout=120))


@pytest.mark.parametrize("fault", FAULTS, ids=str)
def test_fault(fault, tmp_path):
    if fault.name not in SERVED:
        pytest.importorskip("torch")
        pytest.importorskip("transformers")
    try:
        run_fault(fault, tmp_path)
    finally:
        if fault.name in SERVED:
            SERVED[fault.name][0].close()
