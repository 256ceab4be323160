"""Fault rows: every environment variable timefoil reads, set to a value it cannot use. Each is
one line naming the variable and what it takes, said before the command runs (exit 1: the
command cannot start), and nothing is written: no run folder, no cache."""
from __future__ import annotations

import os

import pytest

from faults import Fault, run_fault
from helpers import suite_on_disk

from timefoil.core.environment import CHECKS, EnvironmentValueError
from timefoil.core.threads import resolve_threads


def run_args(tmp_path) -> list[str]:
    return ["run", "synth", "--model", "random", "--data", suite_on_disk(), "--out", str(tmp_path / "run"),
            "--no-progress"]


def nothing_written(tmp_path) -> None:
    assert not os.path.exists(tmp_path / "run") and not os.path.exists(tmp_path / "cache")


WHOLE = "expected a whole number, 1 or more \\(or unset it\\)$"
SWITCH = "expected 1 or 0 \\(true/false, yes/no, on/off\\)$"
ROWS = [  # (variable, value, what the last line says after "Error: ")
    ("TIMEFOIL_THREADS", "abc", "TIMEFOIL_THREADS=abc: " + WHOLE),
    ("TIMEFOIL_THREADS", "0", "TIMEFOIL_THREADS=0: " + WHOLE),
    ("TIMEFOIL_THREADS", "2.5", "TIMEFOIL_THREADS=2.5: " + WHOLE),
    ("TIMEFOIL_PROGRESS_SECONDS", "soon", "TIMEFOIL_PROGRESS_SECONDS=soon: expected a number of seconds, 0 or more"),
    ("TIMEFOIL_PROGRESS_SECONDS", "inf", "TIMEFOIL_PROGRESS_SECONDS=inf: expected a number of seconds, 0 or more"),
    ("TIMEFOIL_PROGRESS_SECONDS", "-1", "TIMEFOIL_PROGRESS_SECONDS=-1: expected a number of seconds, 0 or more"),
    ("TIMEFOIL_DEBUG", "maybe", "TIMEFOIL_DEBUG=maybe: " + SWITCH),
    ("HF_HUB_OFFLINE", "2", "HF_HUB_OFFLINE=2: " + SWITCH),
    ("HF_ENDPOINT", "huggingface.co", "HF_ENDPOINT=huggingface.co: expected an http\\(s\\) URL"),
    ("COLUMNS", "wide", "COLUMNS=wide: " + WHOLE),
    ("TIMEFOIL_CACHE_MAX", "lots", "TIMEFOIL_CACHE_MAX: expected a size like 500M or 2G, got 'lots'$"),
    ("TIMEFOIL_MAX_FRAME_PIXELS", "big", "TIMEFOIL_MAX_FRAME_PIXELS: expected a pixel count \\(33177600\\) or a "
     "size \\(7680x4320\\), got 'big'$"),
    ("TIMEFOIL_THREADS", "\x1b]0;pwned\x07", "TIMEFOIL_THREADS='\\\\x1b\\]0;pwned\\\\x07': " + WHOLE),
]
FAULTS = [Fault(f"{name}={value!r}", run_args, 1, "^Error: " + said, nothing_written, env={name: value})
          for name, value, said in ROWS]


def test_every_variable_checked_has_a_row():
    assert set(CHECKS) <= {name for name, _, _ in ROWS}


@pytest.mark.parametrize("fault", FAULTS, ids=str)
def test_environment_fault(fault, tmp_path):
    run_fault(fault, tmp_path)


def test_the_library_names_the_variable_too(monkeypatch):
    """Called from Python (no command line checking first), the reader itself says it."""
    monkeypatch.setenv("TIMEFOIL_THREADS", "abc")
    with pytest.raises(EnvironmentValueError, match="^TIMEFOIL_THREADS=abc: expected a whole number"):
        resolve_threads()
    monkeypatch.setenv("TIMEFOIL_THREADS", "3")
    assert resolve_threads() == 3 and resolve_threads(2) == 2
