"""The fault-injection table's row format and its one runner.

Each ``test_faults_*.py`` module holds rows of one class of fault (bad videos, bad annotation
files, commands that would write into their input, caches, served models, CLI values, ...).
A row says what input or fault it makes, the exit code and the last line the user must see,
and what must hold of the run and the cache afterwards. Every command runs in a subprocess
with a timeout, so a hang fails the row instead of stalling the suite."""
from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from helpers import cli

TIMEOUT_S = 120


@dataclass(frozen=True)
class Fault:
    name: str  # the input or fault, in a few words (the row's id)
    prepare: Callable[[Path], list[str]]  # makes the input or fault under the folder; returns timefoil's argv
    exit_code: int
    last_line: str  # a regular expression the last non-empty line of stderr must match (re.search)
    after: Callable[[Path], None] | None = None  # asserts the state of the run and the cache afterwards
    env: dict[str, str] = field(default_factory=dict)
    timeout: float = TIMEOUT_S

    def __str__(self) -> str:  # pytest shows the name as the row's id
        return self.name



def last_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


def run_fault(fault: Fault, tmp_path: Path) -> subprocess.CompletedProcess:
    """Make the fault, run the command, and check exit code, last line, no traceback, and the
    state afterwards. The cache is the row's own (``tmp_path/cache``) unless the row sets one."""
    args = fault.prepare(tmp_path)
    env = {"TIMEFOIL_CACHE": str(tmp_path / "cache"), **fault.env}
    result = cli(*args, timeout=fault.timeout, env=env)
    said = last_line(result.stderr)
    context = f"exit {result.returncode}\nstdout:\n{result.stdout[-2000:]}\nstderr:\n{result.stderr[-3000:]}"
    assert "Traceback" not in result.stderr + result.stdout, context
    assert result.returncode == fault.exit_code, context
    assert re.search(fault.last_line, said), f"last line {said!r} does not match {fault.last_line!r}\n{context}"
    if fault.after is not None:
        fault.after(tmp_path)
    return result
