"""Text from outside timefoil as the terminal shows it (``terminal_line``), and exceptions as
one message (``exception_text``): each expected value worked out by hand."""
from __future__ import annotations

import asyncio

import pytest

from timefoil.core.outside import exception_text, terminal_line
from timefoil.core.registry import said


@pytest.mark.parametrize("given, shown", [
    ("\x1b]0;pwned\x07done", "done"),  # an OSC title, ended by BEL: gone with its text
    ("\x1b]0;pwned\x1b\\done", "done"),  # the same ended by ESC \
    ("\x1b[31mred\x1b[0m", "red"),  # colour sequences
    ("\x1b[2J\x1b[Hclean", "clean"),  # clear the screen, cursor home
    ("a\nb\r\nc\td", "a b c d"),  # breaks and tabs are spaces: one line
    ("over\rwrite", "over write"),  # a carriage return would draw over the line
    ("bell\x07 and\x00 nul\x7f", "bell and nul"),  # C0 and DEL
    ("\x9b31mC1", "31mC1"),  # the 8-bit CSI is dropped; what followed it is plain text
    ("left\u202eright", "leftright"),  # a bidirectional override would reverse what follows
    ("line\u2028sep", "line sep"),
    ("  spaced   out  ", "spaced out"),
    ("caf\u00e9 \u65e5\u672c", "caf\u00e9 \u65e5\u672c"),  # printable text of any script is kept
    ("\x1b]0;never ended", ""),  # an OSC never ended takes the rest with it
])
def test_terminal_line_drops_what_a_terminal_would_obey(given, shown):
    assert terminal_line(given) == shown


def test_terminal_line_caps_the_length_and_says_how_long_the_text_was():
    assert terminal_line("x" * 10, limit=10) == "x" * 10
    assert terminal_line("x" * 11, limit=10) == "x" * 10 + "… (11 characters)"
    assert terminal_line("ab " * 400) == ("ab " * 100).rstrip() + "… (1,199 characters)"  # 400 × 3 less one space


class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("no")


class Stopped(BaseException):
    pass


def test_exception_text_never_raises_and_names_the_type():
    assert exception_text(ValueError("bad value")) == "ValueError: bad value"
    assert exception_text(ValueError()) == "ValueError"
    assert exception_text(asyncio.CancelledError()) == "CancelledError"
    assert exception_text(Stopped("own")) == "Stopped: own"
    assert exception_text(Unprintable("x")) == "Unprintable (its message cannot be printed)"
    assert said(Unprintable("x")) == "Unprintable (its message cannot be printed)"
    assert said(SystemExit(3)) == "SystemExit: 3"


def test_a_failure_naming_a_path_with_escapes_is_one_clean_line(tmp_path):
    """The path given as --data holds an OSC title sequence and a newline: the Error line shows
    the path without them (one line), and nothing retitles the terminal."""
    from helpers import cli

    folder = tmp_path / "data\x1b]0;pwned\x07\nhere"
    result = cli("run", "synth", "--model", "random", "--data", str(folder), "--out", str(tmp_path / "run"),
                 "--no-progress", timeout=60)
    assert result.returncode != 0
    assert "\x1b" not in result.stderr and "\x07" not in result.stderr and "pwned" not in result.stderr
    error = [line for line in result.stderr.splitlines() if line.startswith("Error: ")]
    assert len(error) == 1 and f"{tmp_path}/data here" in error[0], result.stderr
