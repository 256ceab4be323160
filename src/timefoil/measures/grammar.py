"""What the two readers of replies (letters and named options; Yes/No) share: the reading's
result, Unicode forms made plain, and the phrases that decide which of several answers a reply
gives. docs/reproduce.md ("How a reply is read") states the grammar with examples.

Negation scope: "not", "n't", "never", "no way", "hardly", "neither"/"nor" negate the answer word of
their own clause, however far back in it they stand ("I wouldn't say yes", "I do not think the
caption is correct", "there's no way that's correct" are No; "not A" names no answer); a clause ends
at punctuation or a conjunction ("I'm not sure, yes" is Yes; "it isn't blue, so yes" is Yes). A
leading "No," is a correction, not a negation: its scope ends at the comma ("B? No, A in my view" is A).

A reply cut before its writer finished (at a token limit, or at a stop string) is read by
``decided``: only where the part received settles its answer and goes on past it with no sign of
a change of mind.
"""
from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class Parsed:
    value: str | None  # a label ("A") or "yes"/"no"; None when it failed
    status: str  # "ok", "empty", "ambiguous", "unparseable"; "cut": a cut reply its received part does not decide
    read_from: str | None = None  # where a reading could come from the text or probabilities: which one

    @property
    def ok(self) -> bool:
        return self.value is not None


def compatible(raw: str | None) -> str | None:
    """``raw`` with Unicode compatibility forms made plain: a full-width "Ｂ" or "Ｙｅｓ", as a
    model writing in a CJK context may, is the letter or word it shows."""
    return unicodedata.normalize("NFKC", raw) if raw else raw


_WRAPPED = re.compile(r"^\s*<([A-Za-z_]+)>\s*(.*?)\s*</\1>\s*$", re.DOTALL)  # "<answer>Yes</answer>"
_UNDERLINED = re.compile(r"(?<![\w_])__(?=\S)(.+?)(?<=\S)__(?![\w_])")  # markdown's "__Yes__"


def unwrapped(raw: str) -> str:
    """``raw`` without a tag pair around the whole of it or markdown's ``__`` emphasis: what
    they wrap is the answer as written."""
    wrapped = _WRAPPED.match(raw)
    return _UNDERLINED.sub(r"\1", wrapped.group(2) if wrapped else raw)


# Words that may stand between a negation and the answer word it negates: "I wouldn't say
# yes", "not quite correct", "not option A", "isn't the first one".
_NEGATION_FILLER = (r"(?:say|answer|reply|respond|pick|choose|select|go|with|call|think|it|that|this|a|an|the|be|is|"
                    r"was|went|seems|looks|quite|really|entirely|completely|fully|exactly|simply|just|clearly|definitely|a\s+clear|"
                    r"option|caption|choice|i)")
NEGATED_BEFORE = re.compile(r"(?:\bnot|n't|n’t|\bnever|\bneither|\bnor|\bnothing|\bhardly|\brather than|"
                            r"\binstead of|\bexcept|\bthan|\bover|\bbeats?)\s+(?:" + _NEGATION_FILLER +
                            r"\s+){0,3}[(\[*\"']*$", re.IGNORECASE)
# The clause an answer word stands in, back to its start: punctuation or a conjunction opens it.
_CLAUSE_OPENS = re.compile(r"[.;!?\n,:—–()]|\b(?:so|but|and|because|since|therefore|thus|hence|while|whereas|"
                           r"although|though|yet)\b", re.IGNORECASE)
_NEGATOR = re.compile(r"\bnot\b(?!\s+only)|n't|n’t|\bnever\b|\bno\s+way\b|\bhardly\b|\bcannot\b|\bneither\b",
                      re.IGNORECASE)


def negated_clause(before: str) -> bool:
    """Whether the clause ``before`` ends holds a negation, however far back in it: "I do not
    think the caption is <correct>", "there's no way that's <correct>"."""
    opens = [m.end() for m in _CLAUSE_OPENS.finditer(before)]
    return bool(_NEGATOR.search(before[opens[-1] if opens else 0:]))


# "not necessarily yes", "not sure it's A": the reply hesitates, it does not deny; "maybe yes",
# "perhaps B": it offers an answer without giving it
HESITANT_BEFORE = re.compile(r"(?:\bnot\s+(?:necessarily|sure|certain|clear|clearly)\s+(?:\S+\s+){0,2}|"
                             r"\b(?:maybe|perhaps|possibly)\s+(?:(?:it's|it\s+is|option|caption|the)\s+)?)[(\[*\"']*$",
                             re.IGNORECASE)
# An option looked at, not chosen: "Let me look at option B first", "Considering A, ..."
EXAMINED_BEFORE = re.compile(r"\b(?:look(?:ing)?\s+at|check(?:ing)?|consider(?:ing)?|examin(?:e|ing)|"
                             r"compar(?:e|ing)|start(?:ing)?\s+with|think(?:ing)?\s+about|analy[sz](?:e|ing)|"
                             r"review(?:ing)?|go(?:ing)?\s+through)\s+(?:(?:option|caption|choice|the)\s+)?[(\[*\"']*$",
                             re.IGNORECASE)

# A change of mind: what follows in the same sentence is the answer the reply settles on.
CHANGED_MIND = (r"on\s+(?:second|further)\s+(?:thought|reflection|consideration)|on\s+reflection|"
                r"after\s+(?:all|reflection|consideration)|in\s+the\s+end|ultimately|in\s+fact|"
                r"changed\s+my\s+mind|i\s+now\s+think|now\s+i\s+think|sorry|oops|i\s+meant|or\s+rather|"
                r"my\s+(?:mistake|bad|error)|let\s+me\s+correct|looking\s+again|"
                r"(?:^|(?<=[.?!;:\n]))\s*no\s*[,.!:]")  # "B? No, A": a correction opening its sentence
# ... and after the answer: "A on reflection", "A in my view".
SETTLED_AFTER = re.compile(r"^[)\]*\"'`]*,?\s*(?:on\s+(?:second\s+|further\s+)?(?:reflection|thought|consideration)|"
                           r"in\s+my\s+(?:view|opinion|judgement|judgment)|after\s+all|in\s+the\s+end|"
                           r"ultimately|i\s+(?:think|believe)\b\s*[.!]?\s*$)", re.IGNORECASE)
# An answer given up: "B at first", "Initially B", "I thought B" (kept only where nothing else is said)
GIVEN_UP_BEFORE = re.compile(r"(?:\binitially|\bat\s+first|\bfirst\s+i\s+thought|\bi\s+(?:first\s+)?thought|"
                             r"\bmy\s+first\s+(?:guess|thought|instinct)\s+(?:was|is)?|"
                             r"\bi\s+was\s+going\s+to\s+(?:say|pick|choose))[\s,:]*(?:(?:it\s+was|it's|"
                             r"option|caption|the\s+answer\s+was)\s+)?[(\[*\"']*$", re.IGNORECASE)
GIVEN_UP_AFTER = re.compile(r"^[)\]*\"'`]*,?\s*(?:at\s+first|initially)\b", re.IGNORECASE)
# An answer asked, not given: "B? No, A."
QUESTIONED = re.compile(r"^[)\]*\"'`]*\s*\?")


# -- JSON ----------------------------------------------------------------------------------------
_FENCE = re.compile(r"^\s*```[a-zA-Z]*\s*|\s*```\s*$")


def _json_object(raw: str) -> dict | None:
    """The JSON object a reply is, bare or in a code fence; None where it is not one."""
    text = _FENCE.sub("", raw.strip())
    if not (text.startswith("{") and text.endswith("}")):
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def json_field(raw: str, fields: tuple[str, ...]) -> tuple[bool, Any]:
    """(found, value) of the first of ``fields`` (any case) in a reply that is one JSON object,
    bare or in a code fence: ``{"answer": "B"}``, ``{"entailed": false}``."""
    data = _json_object(raw)
    if data is None:
        return False, None
    keys = {str(key).lower().replace("-", "_").replace(" ", "_"): value for key, value in data.items()}
    for name in fields:
        if name in keys:
            return True, keys[name]
    return False, None


# -- cut replies ---------------------------------------------------------------------------------
# What may turn a reply's answer over after the point where it was cut: a change of mind, a
# hedge, a second answer offered, a question.
CHANGE_SIGNS = re.compile(r"\b(?:wait|actually|hmm+|but|however|though|although|yet|correction|correct(?:ing)?\s+"
                           r"(?:that|myself)|sorry|oops|meant|rather|instead|reconsider\w*|mistake|maybe|perhaps|"
                           r"possibly|unless|except|initially|at\s+first|on\s+second|on\s+reflection|no,|"
                           r"let\s+me|double[- ]check|re-?check|look(?:ing)?\s+again)\b|\?|^\W*(?:and|or|/)(?:\W|$)",
                           re.IGNORECASE)
_WORD_END = re.compile(r"\S+")


def decided(read: Callable[[str], Parsed], raw: str) -> Parsed:
    """The reading of a reply that was cut before its writer finished, where the part received
    decides it, else unread with status "cut". Decided: the part reads an answer; that answer has
    stood unchanged since a point (every longer stretch of the part reads it too: "No. Actually,
    yes, because" has stood at Yes since "yes"), and the part goes on past that point with words
    of its own (a reason), none of them a sign of a change to come ("wait", "actually", "but",
    "maybe", a question mark, "or"). A reply cut right after its answer ("Yes", "He picks up a"),
    before it ("The video first shows ... which matches option"), or during a change of mind is
    not decided."""
    whole = read(raw)
    if not whole.ok or (raw.lstrip().startswith(("{", "```")) and _json_object(raw) is None):
        return Parsed(None, "cut", whole.read_from)  # a JSON object not closed: its answer field may be to come
    ends = [m.end() for m in _WORD_END.finditer(raw)]
    settled = len(raw)
    for end in reversed(ends[:-1]):
        if read(raw[:end]).value != whole.value:
            break
        settled = end
    rest = raw[settled:]
    if not re.search(r"\w", rest) or CHANGE_SIGNS.search(rest):
        return Parsed(None, "cut", whole.read_from)
    return whole
