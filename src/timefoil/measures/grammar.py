"""What the two readers of replies (letters and named options; Yes/No) share: the reading's
result, Unicode forms made plain, and the phrases that decide which of several answers a reply
gives. docs/reproduce.md ("How a reply is read") states the grammar with examples.

Negation scope: "not", "n't", "never", "neither"/"nor" negate the answer word of their own clause
("I wouldn't say yes" is No, "not A" names no answer); a few words may stand between ("not quite
correct"), punctuation may not ("I'm not sure, yes" is Yes). A leading "No," is a correction, not a
negation: its scope ends at the comma ("B? No, A in my view" is A).
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass


@dataclass(frozen=True)
class Parsed:
    value: str | None  # a label ("A") or "yes"/"no"; None when it failed
    status: str  # "ok", "empty", "ambiguous", "unparseable"
    read_from: str | None = None  # where a reading could come from the text or probabilities: which one

    @property
    def ok(self) -> bool:
        return self.value is not None


def compatible(raw: str | None) -> str | None:
    """``raw`` with Unicode compatibility forms made plain: a full-width "Ｂ" or "Ｙｅｓ", as a
    model writing in a CJK context may, is the letter or word it shows."""
    return unicodedata.normalize("NFKC", raw) if raw else raw


# Words that may stand between a negation and the answer word it negates: "I wouldn't say
# yes", "not quite correct", "not option A", "isn't the first one".
_NEGATION_FILLER = (r"(?:say|answer|reply|respond|pick|choose|select|go|with|call|think|it|that|this|a|an|the|be|is|"
                    r"was|went|seems|looks|quite|really|entirely|completely|fully|exactly|simply|just|clearly|definitely|a\s+clear|"
                    r"option|caption|choice|i)")
NEGATED_BEFORE = re.compile(r"(?:\bnot|n't|n’t|\bnever|\bneither|\bnor|\bnothing|\bhardly|\brather than|"
                            r"\binstead of|\bexcept)\s+(?:" + _NEGATION_FILLER + r"\s+){0,3}[(\[*\"']*$",
                            re.IGNORECASE)
# "not necessarily yes", "not sure it's A": the reply hesitates, it does not deny
HESITANT_BEFORE = re.compile(r"\bnot\s+(?:necessarily|sure|certain|clear|clearly)\s+(?:\S+\s+){0,2}[(\[*\"']*$",
                             re.IGNORECASE)

# A change of mind: what follows in the same sentence is the answer the reply settles on.
CHANGED_MIND = (r"on\s+(?:second|further)\s+(?:thought|reflection|consideration)|on\s+reflection|"
                r"after\s+(?:all|reflection|consideration)|in\s+the\s+end|ultimately|in\s+fact|"
                r"changed\s+my\s+mind|i\s+now\s+think|now\s+i\s+think|"
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
