"""The answer file a person saves from the annotation page, read and checked answer by answer.

The page writes, per item id, ``{"choice": K}`` (task ``choice``) or ``{"valid": true|false,
"aspect": NAME}`` (task ``validate``), plus timing fields. What an answer may be:

- ``choice``: the index of an option of that item in its file order (an integer from 0 to the
  number of options less one; not a boolean, not a float, not a letter), or ``null`` for
  "none of them" (the page's key 0). An item without ``choice`` is not answered.
- ``valid``: ``true`` or ``false``; with ``true``, ``aspect`` is the name of the aspect the
  counterfactual changes (a non-empty string). ``valid: true`` without an aspect is not answered
  yet, as the page counts it.

Anything else is refused with one line naming the file, the line and the field: a hand-edited
``-1`` or ``true`` must not be read as some option.
"""
from __future__ import annotations

import json
import json.decoder
import json.scanner
import re
from dataclasses import dataclass, field
from typing import Any

from ..core.items import Item

TASKS = ("choice", "validate")
INVALID = "invalid"  # a validation vote that the counterfactual is not a valid one


class _Located(dict):
    """A JSON object that knows where it lies in the text it was read from."""

    span: tuple[int, int] = (0, 0)


class _DuplicateKey(ValueError):
    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict:
    seen = set()
    for key, _ in pairs:
        if key in seen:  # json would keep the last silently; an answer given twice is ambiguous
            raise _DuplicateKey(key)
        seen.add(key)
    return dict(pairs)


def _parse_located(text: str) -> Any:
    """``json.loads``, but every object remembers its span, so a bad field can be named by line."""
    decoder = json.JSONDecoder(object_pairs_hook=_no_duplicates)

    def parse_object(s_and_end, *args):
        start = s_and_end[1] - 1
        try:
            value, end = json.decoder.JSONObject(s_and_end, *args)
        except _DuplicateKey as exc:
            second = list(_key_pattern(exc.key).finditer(text, start))[1:2]
            line = _line(text, second[0].start() if second else start)
            raise ValueError(f"line {line}: the key {json.dumps(exc.key, ensure_ascii=False)} twice in one "
                             f"object") from None
        located = _Located(value)
        located.span = (start, end)
        return located, end

    decoder.parse_object = parse_object
    decoder.scan_once = json.scanner.py_make_scanner(decoder)
    return decoder.decode(text)


def _line(text: str, position: int) -> int:
    return text.count("\n", 0, position) + 1


def _key_line(text: str, span: tuple[int, int] | None, key: str) -> int:
    """The line of ``key`` in the object at ``span`` (the object's own line when not found)."""
    start, end = span or (0, len(text))
    found = _key_pattern(key).search(text, start, end)
    return _line(text, found.start() if found else start)


def _key_pattern(key: str) -> re.Pattern:
    """``"key":`` as written by JSON.stringify or json.dumps (a string value cannot match: its
    quotes are escaped)."""
    return re.compile(f"{re.escape(json.dumps(key, ensure_ascii=False))}\\s*:")


@dataclass
class AnswerFile:
    path: str
    annotator: str
    task: str
    answers: dict[str, dict]  # item id -> the answer object as saved
    text: str = field(repr=False)

    def where(self, item_id: str, name: str) -> str:
        """``PATH: line N: answers[ID].NAME``, the line the field is on (else its answer's)."""
        line = _key_line(self.text, getattr(self.answers[item_id], "span", None), name)
        return f"{self.path}: line {line}: answers[{json.dumps(item_id, ensure_ascii=False)}].{name}"

    def vote(self, item_id: str, item: Item) -> tuple[bool, Any]:
        """(answered, the vote): an option index or None for choice; an aspect or INVALID for validate."""
        answer = self.answers[item_id]
        if self.task == "choice":
            if "choice" not in answer:
                return False, None
            value = answer["choice"]
            if value is None or (type(value) is int and 0 <= value < item.n_options):
                return True, value
            raise ValueError(f"{self.where(item_id, 'choice')}: {json.dumps(value)} is not an option of this item "
                             f"(0 to {item.n_options - 1}, or null for none of them)")
        if "valid" not in answer:
            return False, None
        if type(answer["valid"]) is not bool:
            raise ValueError(f"{self.where(item_id, 'valid')}: {json.dumps(answer['valid'])} is not true or false")
        if not answer["valid"]:
            return True, INVALID
        if "aspect" not in answer:
            return False, None
        aspect = answer["aspect"]
        if not isinstance(aspect, str) or not aspect.strip():
            raise ValueError(f"{self.where(item_id, 'aspect')}: {json.dumps(aspect)} is not the name of an aspect")
        return True, aspect


def read_answers(path: str) -> AnswerFile:
    """A saved answer file, checked enough to name what is wrong with it."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        data = _parse_located(text)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ValueError(f"{path}: not a readable answer file ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("answers"), dict) or not data.get("annotator") \
            or not isinstance(data["annotator"], str):
        raise ValueError(f"{path}: not a timefoil answer file (needs annotator and answers)")
    task = data.get("task", "choice")
    if task not in TASKS:
        raise ValueError(f"{path}: line {_key_line(text, data.span, 'task')}: task {json.dumps(task)} is not one of "
                         f"{', '.join(TASKS)}")
    for item_id, answer in data["answers"].items():
        if not isinstance(answer, dict):
            line = _key_line(text, data["answers"].span, item_id)
            raise ValueError(f"{path}: line {line}: answers[{json.dumps(item_id, ensure_ascii=False)}]: an answer "
                             f"is an object, not {json.dumps(answer)}")
    return AnswerFile(path, data["annotator"], task, data["answers"], text)
