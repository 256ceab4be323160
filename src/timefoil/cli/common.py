"""What every command shares: option types, argument parsing and the one-line failure policy.

Exit codes: 0 done; 1 a run that could not start or a command that failed (one line says why);
2 a usage error (click's, an unknown name, a model spec that names nothing); 3 a run that finished
but with failed requests above --max-error-rate.
"""
from __future__ import annotations

import math

import click

from ..benchmarks import DataError
from ..core.environment import switch
from ..core.output import OutputWriteError
from ..core.outside import exception_text, terminal_line
from ..core.registry import UnknownName, did_you_mean
from ..core.redaction import redact
from ..execution.config import RunError
from ..execution.store import StoreWriteError
from ..models.hub import SpecError
from ..protocols import PROTOCOLS
from ..protocols.readings import MEANT, READINGS
from ..video.decode import VideoError
from .entry import Interrupted, caused_by_ctrl_c


reading_option = click.option(
    "--reading", type=click.Choice(READINGS), default=MEANT, show_default=True,
    help="how answers are read: meant (the papers' definitions) or released (each benchmark's released "
         "scorer, which made the published rows); the other number is shown beside where they differ")


class ProtocolChoice(click.Choice):
    """The registry's protocols at the time of the call, so a registered plugin is accepted."""

    def __init__(self):
        super().__init__(list(PROTOCOLS))

    def convert(self, value, param, ctx):
        self.choices = list(PROTOCOLS)
        if value not in self.choices:
            self.fail(f"unknown protocol {value!r}{did_you_mean(value, self.choices)}; available: "
                      f"{', '.join(self.choices)}", param, ctx)
        return super().convert(value, param, ctx)


class FiniteRange(click.FloatRange):
    """A float range that refuses nan and the infinities (click's comparisons let nan through:
    --max-error-rate nan would make every failure pass)."""

    def convert(self, value, param, ctx):
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


class Failure(click.ClickException):
    pass


class Misused(click.ClickException):
    """A usage error said in one line (an unknown name, a model spec naming nothing): exit 2."""

    exit_code = 2


def guard(fn):
    """Known failures become one clear line, never a traceback; an error a Ctrl-C caused (Python
    3.11 turns one raised in a class's __set_name__ into a RuntimeError) is the Ctrl-C."""
    def wrapped(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except click.ClickException:
            raise
        except Exception as exc:
            if caused_by_ctrl_c(exc):
                raise Interrupted() from None
            if isinstance(exc, (UnknownName, SpecError)):
                raise Misused(shown(str(exc))) from None
            if isinstance(exc, (RunError, StoreWriteError, OutputWriteError, DataError, VideoError, ValueError,
                                FileNotFoundError, ImportError)):
                raise Failure(shown(str(exc))) from None
            if debugging():
                raise
            raise Failure(shown(f"unexpected {exception_text(exc)} (set TIMEFOIL_DEBUG=1 for the traceback)")) \
                from None
    wrapped.__name__, wrapped.__doc__ = fn.__name__, fn.__doc__
    return wrapped


def shown(message: str) -> str:
    """A failure's line: keys cut out, then as the terminal may show it (a path or a record from
    the data may hold escape sequences or line breaks; a library's message may run to megabytes)."""
    return terminal_line(redact(message), ERROR_CHARS)


ERROR_CHARS = 2000  # the longest failure line shown; the ones timefoil writes stay well below


def debugging() -> bool:
    """TIMEFOIL_DEBUG on (1, true, yes, on); a value that is neither on nor off was said when the
    command started, so here it is off."""
    try:
        return switch("TIMEFOIL_DEBUG")
    except ValueError:
        return False


def frames_list(value: str | None) -> list[int]:
    if not value:
        return []
    try:
        counts = [int(v) for v in value.split(",") if v.strip()]
    except ValueError:
        raise click.BadParameter(f"expected a number or a list like 1,2,4,8, got {value!r}") from None
    if not counts or min(counts) < 1:
        raise click.BadParameter(f"frame counts are 1 or more, got {value!r}")
    return counts


def key_values(pairs: tuple[str, ...], option: str) -> dict:
    args = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise click.BadParameter(f"{option} takes key=value, got {pair!r}")
        args[key] = value
    return args
