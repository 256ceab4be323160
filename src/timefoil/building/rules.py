"""Counterfactuals by rule, with no model: event-order swaps, counting foils, word swaps, role swaps.

Each generator takes a caption (or a video's events) and returns ``Foil``s, or none when its
rule does not apply; the reason a caption yields nothing is part of the build's record.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass


@dataclass(frozen=True)
class Foil:
    """A counterfactual text, the aspect it changes and the rule that made it."""

    text: str
    aspect: str
    rule: str


def words(text: str) -> Counter:
    """The multiset of lower-cased words (punctuation ignored)."""
    return Counter(re.findall(r"[a-z0-9']+", text.lower()))


def same_words(a: str, b: str) -> bool:
    """Vinoground's check: two different captions made of exactly the same words."""
    return a.strip().lower() != b.strip().lower() and words(a) == words(b)


def _clause_case(first: str, second: str, capitalised: bool) -> tuple[str, str]:
    """After a swap the clause that now leads takes the capital the old lead had."""
    if capitalised and first[:1].islower():
        first = first[0].upper() + first[1:]
    if capitalised and second[:1].isupper() and not second.startswith("I "):
        second = second[0].lower() + second[1:]
    return first, second


# "A, then B" / "A and then B" / "A then B" / "A before B" / "A after B" / "A, and B" is not an order.
_CONNECTIVE = re.compile(r",? and then |, then | then | before | after ", re.IGNORECASE)  # longest first


def swap_events(caption: str) -> Foil | None:
    """Two events joined by one temporal connective, swapped around it (same words, another
    order): "a man jumps, then a dog barks." -> "a dog barks, then a man jumps."."""
    text = caption.strip()
    end = text[-1] if text[-1:] in ".!" else ""
    body = text[:-1] if end else text
    matches = list(_CONNECTIVE.finditer(body))
    if len(matches) != 1:
        return None  # no connective, or several: which events to swap is not clear
    at, connective = matches[0].start(), matches[0].group(0)
    first, second = body[:at].strip(), body[at + len(connective):].strip()
    if not first or not second:
        return None
    lead, follow = _clause_case(second, first, body[:1].isupper())
    return Foil(f"{lead}{connective}{follow}{end}", "order", "swap-events")


NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
MAX_COUNT = 10  # ViLMA drops counts above 10
SMALL = (1, 2, 3)  # the counts models meet most in pretraining (ViLMA's easy/difficult split)


def count_foil(caption: str, policy: str = "easy") -> Foil | None:
    """ViLMA-style counting foils of an "exactly N" caption (N from 1 to 10, word or digit, kept
    in the caption's form). ``easy``: only captions with a small count (1-3), foil N + 3 (a
    larger number). ``hard``: the foil is a small number, 1 + N mod 3 (never N itself)."""
    if policy not in ("easy", "hard"):
        raise ValueError(f"counting policy must be easy or hard, not {policy!r}")
    match = re.search(r"\bexactly (\d+|" + "|".join(NUMBER_WORDS) + r")\b", caption, re.IGNORECASE)
    if not match:
        return None
    token = match.group(1)
    count = int(token) if token.isdigit() else NUMBER_WORDS.index(token.lower())
    if not 1 <= count <= MAX_COUNT:
        return None
    if policy == "easy":
        if count not in SMALL:
            return None
        foil = count + 3
    else:
        foil = 1 + count % 3
    shown = str(foil) if token.isdigit() else NUMBER_WORDS[foil]
    if token[:1].isupper():
        shown = shown.capitalize()
    return Foil(caption[:match.start(1)] + shown + caption[match.end(1):], "counting", f"count-{policy}")


# Word pairs swapped both ways at once, by aspect. Longer phrases first so that "counterclockwise"
# is never read as "clockwise".
SWAPS: dict[str, tuple[tuple[str, str], ...]] = {
    "spatial": (("left", "right"), ("up", "down"), ("above", "below"), ("top", "bottom")),
    "order": (("before", "after"), ("first", "last")),
    "direction": (("counterclockwise", "clockwise"), ("anticlockwise", "clockwise"), ("forwards", "backwards"),
                  ("forward", "backward"), ("towards", "away from"), ("toward", "away from"), ("into", "out of"),
                  ("ascending", "descending"), ("rises", "falls"), ("opens", "closes"), ("pushes", "pulls"),
                  ("enters", "leaves"), ("raises", "lowers"), ("inflates", "deflates")),
}


def swap_words(caption: str, aspect: str) -> Foil | None:
    """Every word of the aspect's pairs swapped with its partner (both directions at once);
    None when the caption holds none of them."""
    pairs = SWAPS[aspect]
    table: dict[str, str] = {}
    for a, b in pairs:
        table.setdefault(a, b)
        table.setdefault(b, a)
    pattern = re.compile(r"\b(" + "|".join(sorted(map(re.escape, table), key=len, reverse=True)) + r")\b",
                         re.IGNORECASE)

    def swap(match: re.Match) -> str:
        word = match.group(0)
        out = table[word.lower()]
        return out.capitalize() if word[:1].isupper() else out

    changed = pattern.sub(swap, caption)
    return Foil(changed, aspect, f"swap-{aspect}") if changed != caption else None


@dataclass(frozen=True)
class Event:
    """One event of a video as semantic roles (VELOCITI's annotations): who does what."""

    agent: str
    action: str

    @property
    def caption(self) -> str:
        return f"{self.agent} {self.action}"


def role_swaps(events: list[Event]) -> list[tuple[str, Foil]]:
    """(caption, foil) pairs from a video's events, VELOCITI style: each event's agent given
    another event's action ("action binding") and another agent ("agent"), and the first two
    events told in the other order ("order"). Swaps that change nothing are skipped."""
    out: list[tuple[str, Foil]] = []
    for i, event in enumerate(events):
        for j, other in enumerate(events):
            if i == j:
                continue
            if other.action != event.action:
                out.append((event.caption, Foil(f"{event.agent} {other.action}", "action", "swap-action")))
            if other.agent != event.agent:
                out.append((event.caption, Foil(f"{other.agent} {event.action}", "agent", "swap-agent")))
    if len(events) >= 2 and events[0].caption != events[1].caption:
        first, second = events[0].caption, events[1].caption
        out.append((f"{first}, then {second}", Foil(f"{second}, then {first}", "order", "swap-chrono")))
    return out
