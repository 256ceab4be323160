"""``--model-arg`` / ``--bench-arg`` ``key=value`` strings typed by the signature of what takes them."""
from __future__ import annotations

import inspect
import math
import types
import typing
from typing import Any, Callable

from .registry import UnknownName, did_you_mean

_TRUE, _FALSE = {"true", "yes", "1", "on"}, {"false", "no", "0", "off"}


def _accepted(annotation: Any) -> list[type]:
    """The plain types an annotation admits, in order (``int | None`` -> [int, NoneType])."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return [t for arg in typing.get_args(annotation) for t in _accepted(arg)]
    if typing.get_origin(annotation) is typing.Literal:
        return [type(v) for v in typing.get_args(annotation)]
    return [annotation] if isinstance(annotation, type) else []


def convert(value: Any, annotation: Any, where: str) -> Any:
    """A string as the annotated type; other values (from Python callers) pass unchanged."""
    if not isinstance(value, str):
        return value
    accepted = _accepted(annotation)
    if not accepted or str in accepted:
        if type(None) in accepted and value.lower() == "none":
            return None
        return value
    if type(None) in accepted and value.lower() == "none":
        return None
    for kind in accepted:
        if kind is bool:
            if value.lower() in _TRUE | _FALSE:
                return value.lower() in _TRUE
        elif kind in (int, float):
            try:
                return kind(value)
            except ValueError:
                continue
    names = " or ".join(t.__name__ for t in accepted if t is not type(None))
    raise ValueError(f"{where}: expected {names}, got {value!r}")


def typed_options(target: Callable, options: dict[str, Any], what: str = "model option") -> dict[str, Any]:
    """``options`` converted to the types of ``target``'s keyword parameters; a name the
    target does not take is an error that lists the ones it does."""
    signature = inspect.signature(target)
    try:
        hints = typing.get_type_hints(target.__init__ if inspect.isclass(target) else target)
    except Exception:  # a slot wrapper (no __init__ of its own) or an unresolvable name
        hints = {}
    parameters = {name: p for name, p in signature.parameters.items()
                  if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    takes_any = any(p.kind == p.VAR_KEYWORD for p in signature.parameters.values())
    typed = {}
    for key, value in options.items():
        if key not in parameters:
            if takes_any:
                typed[key] = value
                continue
            usable = sorted(n for n in parameters if n not in ("model", "processor", "path", "data_dir"))
            raise UnknownName(f"unknown {what} {key!r}{did_you_mean(key, usable)}; accepted: "
                              f"{', '.join(usable) or 'none'}")
        typed[key] = convert(value, hints.get(key, parameters[key].annotation), f"{what} {key}")
    return typed


def checked_number(name: str, value: Any, *, least: float, above: bool = False, whole: bool = False) -> Any:
    """A numeric model-arg, or a ValueError (one line) naming it and what it may be: a bad
    value is refused when the model loads, before any request (``concurrency=0`` would wait for
    ever, ``batch_size=0`` would fail every request, ``max_new_tokens=-5`` would answer nothing)."""
    try:
        number = math.nan if isinstance(value, bool) else float(value)
    except (TypeError, ValueError, OverflowError):
        number = math.nan
    fits = math.isfinite(number) and (number > least if above else number >= least)
    if not fits or (whole and not number.is_integer()):
        kind = "a whole number" if whole else "a finite number"
        bound = f"above {least:g}" if above else f"of {least:g} or more"
        raise ValueError(f"model-arg {name} must be {kind} {bound}, not {value!r}")
    return int(number) if whole else number


def checked_count(name: str, value: Any, *, least: int = 1, optional: bool = False) -> int | None:
    """A whole-number model-arg of ``least`` or more; with ``optional``, None stays None (the
    default it stands for), never 0 read as "unset"."""
    if optional and value is None:
        return None
    return checked_number(name, value, least=least, whole=True)
