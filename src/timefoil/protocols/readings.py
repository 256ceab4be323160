"""How stored answers are read at scoring time: the meant reading (what the papers define, the
parser's) or a benchmark's released reading (what its published scorer does, which made the
published rows). A benchmark declares its released rule; nothing here names a benchmark.

A rule may read choice answers (the letter a reply names), Yes/No answers of a model that wrote
text, and may drop items whose answers it cannot read from the denominator, as some released
scorers do. Errors (a request that failed) stay errors under every rule.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

READINGS = ("meant", "released")
MEANT = "meant"


@dataclass(frozen=True)
class ReadingRule:
    """``letter(raw, labels)``: the label a choice reply names, None where the rule reads none;
    ``verdict(raw)``: "yes", "no" or None for a written Yes/No reply (an answer read from the
    first token's probabilities keeps its e); ``drops``: an item with an answer the rule reads
    as None leaves the denominator instead of counting wrong; ``tie_policy``: the released
    scorer's treatment of equal scores. ``source`` cites the released code."""

    source: str
    letter: Callable[[str | None, Sequence[str]], str | None] | None = None
    verdict: Callable[[str | None], str | None] | None = None
    drops: bool = False
    tie_policy: str | None = None


def first_character(raw: str | None, labels: Sequence[str]) -> str | None:
    """The reply's first character, in any case, where it is one of the labels: "Answer: B"
    reads as A, " B" (a leading space) and "" read as nothing."""
    first = (raw or "")[:1].upper()
    return first if first and first in [label.upper() for label in labels] else None


def first_token(raw: str | None, labels: Sequence[str]) -> str | None:
    """The reply's first whitespace-separated token where it is exactly a label (case and
    punctuation matter: "A." and "a" read as nothing)."""
    tokens = (raw or "").split()
    return tokens[0] if tokens and tokens[0] in labels else None


def contains_one_verdict(raw: str | None) -> str | None:
    """Yes where the reply contains "Yes" and not "No", No the other way round, else nothing;
    case-sensitive substrings ("yes" and "I cannot tell." read as nothing, "Not sure, Yes" as
    nothing, "Yes, no doubt" as Yes)."""
    text = raw or ""
    yes, no = "Yes" in text, "No" in text
    return "yes" if yes and not no else "no" if no and not yes else None
