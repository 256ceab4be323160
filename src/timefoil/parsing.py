"""Read option letters and Yes/No out of what models write.

Lenient about form ("(B)", "b)", "Answer: B", the option's own text, "Yes, because..."),
strict about meaning: output naming two options, or none, is a parse failure, and a parse
failure is scored wrong and counted in a visible rate.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence


@dataclass(frozen=True)
class Parsed:
    value: str | None  # a label ("A") or "yes"/"no"; None when it failed
    status: str  # "ok", "empty", "ambiguous", "unparseable"

    @property
    def ok(self) -> bool:
        return self.value is not None


_BARE = re.compile(r"^[\s\"'*(\[]*([A-Za-z])\s*[\])}.:,]?[\s\"'*]*$")
_STATED = re.compile(
    r"\b(?:answer|option|caption|choice|segment|video)\s*(?:is|would be|:)?\s*[:\-]?\s*\(?([A-Z])\b\)?",
    re.IGNORECASE)
_TOKEN = re.compile(r"(?<![A-Za-z])\(?([A-Z])(?![A-Za-z])")
# "A man walks" uses A as an article; these words after "A" still read as an answer.
_AFTER_LETTER = {"is", "was", "fits", "matches", "best", "describes", "seems", "correctly", "because", "or", "and",
                 "nor", "vs", "versus"}


def _normalise(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def parse_choice(raw: str | None, labels: Sequence[str] = ("A", "B"),
                 option_texts: Sequence[str] = ()) -> Parsed:
    labels = [label.upper() for label in labels]
    if raw is None or not raw.strip():
        return Parsed(None, "empty")
    text = raw.strip()
    bare = _BARE.match(text)
    if bare:
        letter = bare.group(1).upper()
        return Parsed(letter, "ok") if letter in labels else Parsed(None, "unparseable")
    # An answer quoting exactly one option's text names that option.
    if option_texts:
        said = f" {_normalise(text)} "
        quoted = [labels[i] for i, option in enumerate(option_texts)
                  if i < len(labels) and _normalise(option) and f" {_normalise(option)} " in said]
        if len(quoted) == 1:
            return Parsed(quoted[0], "ok")
    stated = {m.upper() for m in _STATED.findall(text)} & set(labels)
    if len(stated) == 1:
        return Parsed(stated.pop(), "ok")
    if len(stated) > 1:
        return Parsed(None, "ambiguous")
    seen = set()
    for match in _TOKEN.finditer(text):
        letter = match.group(1)
        if letter not in labels:
            continue
        following = text[match.end():].lstrip(")")
        word = re.match(r"\s+([a-z]+)", following)
        if letter == "A" and word and word.group(1) not in _AFTER_LETTER:
            continue  # the article "A"
        seen.add(letter)
    if len(seen) == 1:
        return Parsed(seen.pop(), "ok")
    return Parsed(None, "ambiguous" if seen else "unparseable")


# <answer>...</answer>, and VELOCITI's chain-of-thought format <<<output>>>...<<</output>>>.
_TAGGED = re.compile(r"<answer>\s*(.*?)\s*</answer>|<<<output>>>\s*(.*?)\s*<<</output>>>", re.IGNORECASE | re.DOTALL)
_CONCLUDES = re.compile(r"final answer|answer is|answer would be|answer:|therefore", re.IGNORECASE)


def conclusion(raw: str | None) -> str | None:
    """The part of a reasoned answer that states the answer: the last tagged answer, else what
    follows the last "answer is" / "final answer" / "Answer:", else the last non-empty line."""
    if raw is None:
        return None
    tagged = [answer or output for answer, output in _TAGGED.findall(raw)]
    if tagged:
        return tagged[-1]
    lines = [line for line in raw.strip().splitlines() if line.strip()]
    for line in reversed(lines):
        marks = list(_CONCLUDES.finditer(line))
        rest = line[marks[-1].end():].strip(" :*-") if marks else ""
        if rest:
            return rest
    return lines[-1] if lines else raw


_YES = {"yes", "yeah", "yep"}
_NO = {"no", "nope"}


def parse_yes_no(raw: str | None) -> Parsed:
    if raw is None or not raw.strip():
        return Parsed(None, "empty")
    words = re.findall(r"[a-z]+", raw.lower())
    if not words:
        return Parsed(None, "unparseable")
    if words[0] in _YES:
        return Parsed("yes", "ok")
    if words[0] in _NO:
        return Parsed("no", "ok")
    found = {"yes" if w in _YES else "no" for w in words if w in _YES or w in _NO}
    if len(found) == 1:
        return Parsed(found.pop(), "ok")
    return Parsed(None, "ambiguous" if found else "unparseable")
