"""The environment variables timefoil reads, each read through one of these functions, so that a
value it cannot use is one line naming the variable and what it takes (``TIMEFOIL_THREADS=abc``
said as Python's ``int()`` message alone named nothing). ``check_environment`` reads them all at
once: the command line calls it before any command runs.

Read elsewhere, each with its own one-line check: TIMEFOIL_CACHE (``paths.cache_root``),
TIMEFOIL_CACHE_MAX (``video.diskcache``), TIMEFOIL_MAX_FRAME_PIXELS (``video.decode``), a
provider's key variable (``models.served.model``, when that provider is asked)."""
from __future__ import annotations

import math
import os
from urllib.parse import urlsplit

from .outside import terminal_line

TRUE, FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off", "")


class EnvironmentValueError(ValueError):
    """A variable set to a value timefoil cannot use; the message names it."""


def _shown(text: str) -> str:
    return terminal_line(text, 60) or repr(text)


def _value(name: str) -> str:
    return os.environ.get(name, "").strip()


def whole_number(name: str, least: int = 1) -> int | None:
    """``name`` as a whole number of at least ``least``; None where it is unset or empty."""
    text = _value(name)
    if not text:
        return None
    try:
        number = int(text)
    except ValueError:
        number = None
    if number is None or number < least:
        raise EnvironmentValueError(f"{name}={_shown(text)}: expected a whole number, {least} or more (or unset it)")
    return number


def seconds(name: str) -> float | None:
    """``name`` as a finite number of seconds, 0 or more; None where it is unset or empty."""
    text = _value(name)
    if not text:
        return None
    try:
        number = float(text)
    except ValueError:
        number = math.nan
    if not (math.isfinite(number) and number >= 0):
        raise EnvironmentValueError(f"{name}={_shown(text)}: expected a number of seconds, 0 or more (or unset it)")
    return number


def switch(name: str) -> bool:
    """``name`` as on (1, true, yes, on) or off (0, false, no, off, unset), in any case."""
    text = _value(name).lower()
    if text in TRUE:
        return True
    if text in FALSE:
        return False
    raise EnvironmentValueError(f"{name}={_shown(_value(name))}: expected 1 or 0 (true/false, yes/no, on/off)")


def http_url(name: str) -> str | None:
    """``name`` as an http(s) URL with a host; None where it is unset or empty."""
    text = _value(name)
    if not text:
        return None
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise EnvironmentValueError(f"{name}={_shown(text)}: expected an http(s) URL such as https://huggingface.co")
    return text


# each variable the project reads with what it takes (a provider's key is checked when asked)
CHECKS = {"TIMEFOIL_THREADS": whole_number, "TIMEFOIL_PROGRESS_SECONDS": seconds, "TIMEFOIL_DEBUG": switch,
          "HF_HUB_OFFLINE": switch, "HF_ENDPOINT": http_url, "COLUMNS": whole_number}


def check_environment(*budgets) -> None:
    """Every variable timefoil reads, checked; the first it cannot use raises
    ``EnvironmentValueError`` (one line naming it). ``budgets``: the video layer's readers of its
    own variables (called here; a ValueError of theirs names its variable)."""
    for name, check in CHECKS.items():
        check(name)
    for budget in budgets:
        try:
            budget()
        except ValueError as exc:
            raise EnvironmentValueError(str(exc)) from None


__all__ = ["EnvironmentValueError", "check_environment", "http_url", "seconds", "switch", "whole_number"]
