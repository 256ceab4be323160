"""Annotation files read strictly, every refusal placed: UTF-8 only (the bad byte's line named),
JSON without duplicate keys and nested at most ``MAX_DEPTH`` deep, and at least one record.

Each reader returns ``(where, record)`` pairs: ``where`` names the file and the line, record
or row, so that every field check after it can name its place too."""
from __future__ import annotations

import csv
import io
import json
import math
import re
from json import decoder, scanner

from .base import DataError

MAX_DEPTH = 32  # no benchmark nests records deeper than 4; the bound keeps the parser off the stack's edge
MAX_DIGITS = 1000  # beyond this a digit string is no number (and converting it would cost time)
MAX_INTEGER = 2**63  # no count, index or time in any record is larger


class _Refused(Exception):
    """A place inside the text (an offset, or None for "where the value began") and what is wrong there."""

    def __init__(self, offset: int | None, reason: str):
        super().__init__(reason)
        self.offset, self.reason = offset, reason


def _bounded_int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_DIGITS:
        raise _Refused(None, f"an integer of {len(digits)} digits")
    return int(digits)


class _StrictDecoder(json.JSONDecoder):
    """JSON that refuses duplicate keys and deep nesting, with the offset of each refusal.
    The pure-Python scanner is used because it lets objects and arrays be watched as they open."""

    def __init__(self) -> None:
        super().__init__(parse_int=_bounded_int)
        self.depth = 0
        self.parse_object, self.parse_array = self._object, self._array
        self.scan_once = scanner.py_make_scanner(self)

    def _enter(self, offset: int) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise _Refused(offset, f"nested deeper than {MAX_DEPTH} levels")

    @staticmethod
    def _placed(scan_once):
        """``scan_once`` that gives a refusal without a place the offset of its value."""
        def scan(text: str, offset: int):
            try:
                return scan_once(text, offset)
            except _Refused as refused:
                if refused.offset is None:
                    refused.offset = offset
                raise
        return scan

    def _object(self, text_and_end, strict, scan_once, object_hook, object_pairs_hook, memo=None):
        opened = text_and_end[1] - 1
        self._enter(opened)
        try:
            pairs, end = decoder.JSONObject(text_and_end, strict, self._placed(scan_once), None, list, memo)
        finally:
            self.depth -= 1
        record: dict = {}
        for key, value in pairs:
            if key in record:
                raise _Refused(opened, f"key {key!r} appears twice in one object")
            record[key] = value
        return record, end

    def _array(self, text_and_end, scan_once):
        self._enter(text_and_end[1] - 1)
        try:
            return decoder.JSONArray(text_and_end, self._placed(scan_once))
        finally:
            self.depth -= 1


def _line_column(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


class _Repeated(Exception):
    """A key twice in one object, seen by the fast parse (the strict one says where)."""


def _unique(pairs: list) -> dict:
    record = dict(pairs)
    if len(record) != len(pairs):
        raise _Repeated
    return record


# The C parser, with the same integer bound and no repeated key: a record it reads whole (and
# that cannot nest too deep) is the strict parser's value, read many times faster. Anything it
# refuses is parsed again strictly, which places the refusal.
_FAST = json.JSONDecoder(object_pairs_hook=_unique, parse_int=_bounded_int)


def _fast(text: str):
    """The value, or None where only the strict parser can tell (a refusal, or deep nesting)."""
    if text.count("{") + text.count("[") > MAX_DEPTH:
        return None
    try:
        return (_FAST.decode(text),)
    except (ValueError, _Refused, _Repeated, RecursionError):
        return None


def parse_json(text: str, where: str, first_line: int = 1):
    """One JSON value; a refusal names ``where``, the line (counted from ``first_line``) and column."""
    fast = _fast(text)
    if fast is not None:
        return fast[0]
    try:
        value, end = _StrictDecoder().raw_decode(text, decoder.WHITESPACE.match(text, 0).end())
        end = decoder.WHITESPACE.match(text, end).end()
        if end != len(text):
            raise _Refused(end, "extra data after the value")
        return value
    except json.JSONDecodeError as exc:
        offset, reason = exc.pos, exc.msg
    except _Refused as refused:
        offset, reason = refused.offset or 0, refused.reason
    line, column = _line_column(text, offset)
    raise DataError(f"{where}: line {first_line + line - 1}: not valid JSON ({reason} at column {column})")


def read_text(path: str) -> str:
    """The file decoded as UTF-8 (a leading byte-order mark dropped); a byte that is not UTF-8
    is refused with its line and column."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        raise DataError(f"{path}: file not found") from None
    except IsADirectoryError:
        raise DataError(f"{path}: a directory, not a file") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise DataError(f"{path}: line {line}: byte 0x{data[exc.start]:02x} at column {column} is not UTF-8 "
                        "(save the file as UTF-8)") from None


def read_json(path: str):
    """A whole JSON file."""
    return parse_json(read_text(path), path)


def read_jsonl(path: str) -> list[tuple[str, object]]:
    """``(where, record)`` for each non-blank line of a JSON-lines file; at least one."""
    records = []
    # split at newlines only: splitlines would also break at U+0085 or U+2028, which JSON strings may hold
    for number, line in enumerate(read_text(path).split("\n"), 1):
        if line.strip():
            where = f"{path}: line {number}"
            records.append((where, clean(parse_json(line, path, number), where)))
    return nonempty(records, path)


def json_records(data, path: str, what: str = "records") -> list[tuple[str, object]]:
    """``(where, record)`` for each entry of a JSON file's list (record 1, 2, ...) or object
    (record 'key'); at least one."""
    if isinstance(data, list):
        entries = [(f"{path}: record {n}", record) for n, record in enumerate(data, 1)]
    elif isinstance(data, dict):
        entries = [(f"{path}: record {key!r}", record) for key, record in data.items()]
    else:
        raise DataError(f"{path}: expected a list or an object of {what}, found {type(data).__name__}")
    return nonempty([(where, clean(record, where)) for where, record in entries], path)


_SURROGATE = re.compile("[\ud800-\udfff]")


def clean(value, where: str, field: str = ""):
    """``value`` if every string in it (keys too) is text a file can hold, without a lone
    surrogate such as JSON's "\\ud800", every float is finite and every integer fits in 64 bits;
    else the field is named."""
    if isinstance(value, str):
        found = _SURROGATE.search(value)
        if found:
            raise DataError(f"{where}: field {field or 'value'!r} holds a lone surrogate "
                            f"({found.group()!a} at character {found.start() + 1}), which is not text")
    elif isinstance(value, float) and not math.isfinite(value):
        raise DataError(f"{where}: field {field or 'value'!r} must be a finite number, found float {value}")
    elif isinstance(value, int) and not -MAX_INTEGER < value < MAX_INTEGER:
        raise DataError(f"{where}: field {field or 'value'!r} holds an integer of {len(str(abs(value)))} digits, "
                        "larger than any count, index or time")
    elif isinstance(value, dict):
        for key, inner in value.items():
            name = f"{field}.{key}" if field else str(key)
            clean(key, where, name)
            clean(inner, where, name)
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            clean(inner, where, f"{field}[{index}]")
    return value


def read_csv(path: str) -> list[tuple[str, dict]]:
    """``(where, row)`` for each row under the header; a row with more or fewer cells than the
    header is refused (its cells would land under the wrong names)."""
    reader = csv.reader(io.StringIO(read_text(path), newline=""))
    rows = []
    try:
        header = next(reader, None) or []
        doubled = sorted({name for name in header if header.count(name) > 1})
        if doubled:
            raise DataError(f"{path}: row 1: column {doubled[0]!r} appears twice in the header")
        for cells in reader:
            where = f"{path}: row {reader.line_num}"
            if not any(cell.strip() for cell in cells):
                continue
            if len(cells) != len(header):
                raise DataError(f"{where}: {len(cells)} cells under a header of {len(header)} columns")
            rows.append((where, clean(dict(zip(header, cells)), where)))
    except csv.Error as exc:
        raise DataError(f"{path}: row {reader.line_num}: not valid CSV ({exc})") from None
    return nonempty(rows, path)


def nonempty(records: list, path: str) -> list:
    """A file with no records is refused: a run over it would answer nothing and call it done."""
    if not records:
        raise DataError(f"{path}: no records (the file is empty)")
    return records
