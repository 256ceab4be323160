"""Reading back the JSON files timefoil keeps (a run's run.json and shard.json, a build's steps and
records, a recipe): a file that cannot be read or parsed, or holds the wrong kind of value, is
refused in one line that starts with its path, so the user knows which file to look at."""
from __future__ import annotations

import json
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
