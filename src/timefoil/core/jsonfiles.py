"""Reading back the JSON files timefoil keeps (a run's run.json and shard.json, a build's steps and
records, a recipe): a file that cannot be read or parsed, or holds the wrong kind of value, is
refused in one line that starts with its path, so the user knows which file to look at."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


class UnreadableFile(ValueError):
    """A file timefoil reads back that is not what it wrote; the message names the file."""


def _why(exc: Exception) -> str:
    if isinstance(exc, json.JSONDecodeError):
        if not exc.doc.strip():
            return "the file is empty"
        cut = " (cut short?)" if exc.pos >= len(exc.doc.rstrip()) else ""
        return f"{exc.msg} at line {exc.lineno} column {exc.colno}{cut}"
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8 text (byte {exc.start})"
    return getattr(exc, "strerror", None) or str(exc)


def parse_json(text: str, path: str, what: str, kind: type | None = dict) -> Any:
    """The JSON value of ``text`` read from ``path`` (a ``what``: "run configuration", ...)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UnreadableFile(f"{path}: not a readable {what} ({_why(exc)})") from None
    if kind is not None and not isinstance(value, kind):
        raise UnreadableFile(f"{path}: not a readable {what} (it holds {_kind(type(value))}, "
                             f"not {_kind(kind)})")
    return value


def _kind(kind: type) -> str:
    """A JSON value's kind in JSON's words."""
    return {dict: "an object", list: "an array", str: "a string", int: "a number", float: "a number",
            bool: "true or false"}.get(kind, "null")


def read_text(path: str, what: str) -> str:
    """The file's text. A missing file raises FileNotFoundError (callers say what it means);
    any other failure to read it is refused with the path."""
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except FileNotFoundError:
        raise
    except (OSError, UnicodeDecodeError) as exc:
        raise UnreadableFile(f"{path}: not a readable {what} ({_why(exc)})") from None


def read_json(path: str, what: str, kind: type | None = dict) -> Any:
    """The JSON value in ``path``; by default it must be an object."""
    return parse_json(read_text(path, what), path, what, kind)


def read_json_lines(path: str, what: str) -> list[Any]:
    """One JSON object per non-blank line; a line that is not one is refused with its number."""
    values = []
    for number, line in enumerate(read_text(path, what).splitlines(), 1):
        if line.strip():
            values.append(parse_json(line, f"{path} line {number}", what))
    return values


# -- the kinds of values a stored object holds ------------------------------------------------
# A kind is a Python type (str; int: a whole number; float: any number; bool; dict: any object;
# list: any array), None (null), a tuple (any one of them), or one of the classes below. true
# and false are never numbers, though Python counts them as such.


@dataclass(frozen=True)
class Fields:
    """An object whose named fields hold their kinds where present; ``required`` must be."""
    kinds: dict[str, Any]
    required: tuple[str, ...] = ()


@dataclass(frozen=True)
class ListOf:
    """An array whose every element is of ``kind``."""
    kind: Any


@dataclass(frozen=True)
class MapOf:
    """An object whose every value is of ``kind`` (whatever its keys)."""
    kind: Any


def _is(value: Any, kind: Any) -> bool:
    if kind is None:
        return value is None
    if isinstance(kind, tuple):
        return any(_is(value, k) for k in kind)
    if isinstance(kind, (Fields, MapOf)):
        return isinstance(value, dict)
    if isinstance(kind, ListOf):
        return isinstance(value, list)
    if kind in (int, float) and isinstance(value, bool):
        return False
    if kind is float:
        return isinstance(value, (int, float))
    return isinstance(value, kind)


def _kind_words(kind: Any) -> str:
    if isinstance(kind, tuple):
        return " or ".join(dict.fromkeys(_kind_words(k) for k in kind))
    if isinstance(kind, (Fields, MapOf)):
        return "an object"
    if isinstance(kind, ListOf):
        return "an array"
    return {int: "a whole number", float: "a number"}.get(kind) or _kind(kind)


def _value_words(value: Any) -> str:
    shown = json.dumps(value, ensure_ascii=False, default=str)
    if value is None or isinstance(value, bool):
        return shown
    return f"{_kind(type(value))} ({shown if len(shown) <= 40 else shown[:37] + '...'})"


def kind_fault(value: Any, kind: Any, name: str = "") -> str | None:
    """Where ``value`` (read back from a file) is not of ``kind``, in words that name the field
    ("answer.raw is a number (5), not a string or null"); None where it is."""
    if not _is(value, kind):
        return f"{name or 'the value'} is {_value_words(value)}, not {_kind_words(kind)}"
    for inner in kind if isinstance(kind, tuple) else (kind,):
        if not _is(value, inner):
            continue
        if isinstance(inner, Fields):
            for key in inner.required:
                if key not in value:
                    return f"{f'{name}.' if name else ''}{key} is missing"
            for key, sub in inner.kinds.items():
                if key in value:
                    fault = kind_fault(value[key], sub, f"{name}.{key}" if name else key)
                    if fault:
                        return fault
        elif isinstance(inner, ListOf):
            for index, element in enumerate(value):
                fault = kind_fault(element, inner.kind, f"{name}[{index}]")
                if fault:
                    return fault
        elif isinstance(inner, MapOf):
            for key, element in value.items():
                fault = kind_fault(element, inner.kind, f"{name}.{key}" if name else str(key))
                if fault:
                    return fault
        return None
    return None
