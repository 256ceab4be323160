"""Read option letters and Yes/No out of what models write.

Lenient about form ("(B)", "**b**", "Answer: B", "Option B", the option's own text, "Yes,
because..."), strict about meaning: a letter counts only where it is used as one (the article
in "a man opens the door" is not option A), the answer is what the text concludes ("I think
it's A. Actually, B." is B), and output naming several options with no conclusion, or none,
is a parse failure, scored wrong and counted in a visible rate, never a guess.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Sequence


@dataclass(frozen=True)
class Parsed:
    value: str | None  # a label ("A") or "yes"/"no"; None when it failed
    status: str  # "ok", "empty", "ambiguous", "unparseable"
    read_from: str | None = None  # where a reading could come from the text or probabilities: which one

    @property
    def ok(self) -> bool:
        return self.value is not None


_BARE = re.compile(r"^[\s\"'*(\[]*([A-Za-z])\s*[\])}.:,]?[\s\"'*]*$")
# A single letter standing alone: not inside a word ("Based"), a contraction ("it's") or an
# abbreviation ("e.g."), optionally in brackets.
_MENTION = re.compile(r"(?<![A-Za-z0-9'’])(?<![A-Za-z]\.)(\(|\[)?([A-Za-z])([)\]])?"
                      r"(?![A-Za-z0-9'’]|\.[A-Za-z]|-[A-Za-z])")
# Words that may follow a letter used as a letter ("A is right", "B because"); any other word
# after "A", "a" or a lower-case letter makes it a word of the sentence ("A man walks").
_AFTER_LETTER = {"is", "was", "are", "were", "fits", "fit", "matches", "match", "best", "describes", "describe",
                 "seems", "seem", "correctly", "because", "or", "and", "nor", "vs", "versus", "since", "as", "would",
                 "should", "must", "looks", "look", "appears", "appear"}
# A capital letter after another in a list ("B and A", "B, A"): a letter too, whatever word
# follows it ("B and a man" keeps its article)
_LISTED_AFTER = re.compile(r"(?<![A-Za-z0-9'’])[(\[*]*([A-Z])[)\]*]*\s*(?:,|and|or|&|/|nor)\s*[(\[*]*$")
_NAMED_BEFORE = re.compile(r"\b(?:option|caption|choice|answer|segment|letter)\s*$", re.IGNORECASE)  # "option A shows"
_WORD_LETTERS = {"A", "I"}  # upper-case letters that are also English words
# Phrases after which the text states its answer; the last one followed by a letter decides.
_CONCLUDES = re.compile(
    r"final answer|answer\s*(?:is|would be|should be|must be|[:=])|"
    r"\b(?:option|caption|choice|segment|one|pick|match)\s+(?:is|would be|should be|must be)\b|"
    r"\b(?:so|therefore|thus|hence|actually|correction|wait|instead)\b|"
    r"\b(?:it|which|that|this)(?:'s|’s|\s+is|\s+would be)|"
    r"\bi(?:'ll|’ll|\s+will|\s+would|'d|’d)?\s+(?:choose|pick|select|go with|say)\b|\bmy (?:answer|choice|pick)\b",
    re.IGNORECASE)
_NEGATED_BEFORE = re.compile(r"(?:\bnot|n't|n’t|\bneither|\bnor|\brather than|\binstead of|\bexcept)\s+"
                             r"(?:(?:option|caption|choice|answer)\s+)?[(\[*\"']*$", re.IGNORECASE)
# A letter, or a list of them ("A and B"), followed by a verdict against it.
_NEGATED_AFTER = re.compile(
    r"^[)\]*\"']*(?:\s*(?:,|and|or|&|nor)\s*[(\[*]*[A-Za-z][)\]*]*)*\s*(?:(?:is|are|was|were|seems|looks)\s+"
    r"(?:both\s+|also\s+|clearly\s+)?)?(?:wrong|incorrect|false|not\b|isn't|aren't|doesn't|does not|cannot|can't)",
    re.IGNORECASE)
_LISTED = re.compile(r"^[)\]*]*\s*(?:,|or|and|/|&|vs\.?|versus)\s*[(\[*]*[A-Za-z](?![A-Za-z])", re.IGNORECASE)
_SENTENCE_END = re.compile(r"[.!?](?:\s|$)|\n")
_LEAD_IN = re.compile(r"[\s:*#>\-\"'`]*")


@dataclass(frozen=True)
class _Mention:
    letter: str
    start: int
    negated: bool
    listed: bool  # the first of a list ("A or B"), which names no single answer


def _mentions(text: str, labels: Sequence[str]) -> list[_Mention]:
    found = []
    for match in _MENTION.finditer(text):
        opening, letter, closing = match.groups()
        if letter.upper() not in labels:
            continue
        bold = text[max(0, match.start() - 2):match.start()] == "**" and text[match.end():match.end() + 2] == "**"
        named = _NAMED_BEFORE.search(text[max(0, match.start() - 12):match.start()])
        marked = bool(opening or closing or bold or named)
        following = re.match(r"[ \t]+([A-Za-z]+)", text[match.end():])  # on the same line
        used_as_word = letter.islower() or letter in _WORD_LETTERS
        listed_after = _LISTED_AFTER.search(text[max(0, match.start() - 16):match.start()])
        marked = marked or bool(letter.isupper() and listed_after and listed_after.group(1) in labels)
        if used_as_word and not marked and following and following.group(1).lower() not in _AFTER_LETTER:
            continue  # "a man", "I think", "so b shows": a word of the sentence, or unsure
        negated = bool(_NEGATED_BEFORE.search(text[max(0, match.start() - 40):match.start()])
                       or _NEGATED_AFTER.match(text[match.end():match.end() + 80]))
        found.append(_Mention(letter.upper(), match.start(), negated, bool(_LISTED.match(text[match.end():]))))
    return found


def _concluded(text: str, mentions: Sequence[_Mention]) -> str | None:
    """The letter the text concludes with: the first letter after the last concluding phrase
    that is followed by one in the same sentence (a list "A or B" concludes nothing)."""
    for marker in reversed(list(_CONCLUDES.finditer(text))):
        for mention in mentions:
            if mention.start < marker.end():
                continue
            between = text[marker.end():mention.start]
            if _SENTENCE_END.search(between) and not _LEAD_IN.fullmatch(between):
                break  # the sentence ended before a letter: this phrase concludes nothing
            if mention.negated:
                continue
            if mention.listed:
                break
            return mention.letter
    return None


def _normalise(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def _quoted(text: str, labels: Sequence[str], option_texts: Sequence[str]) -> str | None:
    """The one option whose text the answer repeats (an option contained in another quoted
    one, "opens the door" in "opens the door twice", does not count)."""
    said = f" {_normalise(text)} "
    shown = {labels[i]: _normalise(option) for i, option in enumerate(option_texts) if i < len(labels)}
    quoted = {label: option for label, option in shown.items() if option and f" {option} " in said}
    longest = [label for label, option in quoted.items()
               if not any(option != other and f" {option} " in f" {other} " for other in quoted.values())]
    return longest[0] if len(longest) == 1 else None


def compatible(raw: str | None) -> str | None:
    """``raw`` with Unicode compatibility forms made plain: a full-width "Ｂ" or "Ｙｅｓ", as a
    model writing in a CJK context may, is the letter or word it shows."""
    return unicodedata.normalize("NFKC", raw) if raw else raw


def parse_choice(raw: str | None, labels: Sequence[str] = ("A", "B"),
                 option_texts: Sequence[str] = ()) -> Parsed:
    labels = [label.upper() for label in labels]
    raw = compatible(raw)
    if raw is None or not raw.strip():
        return Parsed(None, "empty")
    text = raw.strip()
    bare = _BARE.match(text)
    if bare:
        letter = bare.group(1).upper()
        return Parsed(letter, "ok") if letter in labels else Parsed(None, "unparseable")
    mentions = _mentions(text, labels)
    concluded = _concluded(text, mentions)
    if concluded:
        return Parsed(concluded, "ok")
    named = {m.letter for m in mentions if not m.negated}
    quoted = _quoted(text, labels, option_texts) if option_texts else None
    if len(named) > 1 or (named and quoted and quoted not in named):
        return Parsed(None, "ambiguous")
    if named:
        return Parsed(named.pop(), "ok")
    return Parsed(quoted, "ok") if quoted else Parsed(None, "unparseable")


# <answer>...</answer>, and VELOCITI's chain-of-thought format <<<output>>>...<<</output>>>.
_TAGGED = re.compile(r"<answer>\s*(.*?)\s*</answer>|<<<output>>>\s*(.*?)\s*<<</output>>>", re.IGNORECASE | re.DOTALL)
_FINAL = re.compile(r"final answer|answer is|answer would be|answer:|therefore", re.IGNORECASE)


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
        marks = list(_FINAL.finditer(line))
        rest = line[marks[-1].end():].strip(" :*-") if marks else ""
        if rest:
            return rest
    return lines[-1] if lines else raw


_YES = {"yes", "yeah", "yep"}
_NO = {"no", "nope"}
_VERDICT = re.compile(r"\b(yes|yeah|yep|no|nope)\b", re.IGNORECASE)
# A Yes or No that is the answer, not a word of a sentence ("no one", "no door"): followed by
# punctuation or the end, or by a reason ("Yes because", "No the man ...").
_STANDS = re.compile(r"^(?:[\s*\"'`]*(?:[.,!;:)\-—–]|$)|\s+(?:because|since|as|it|the|this|that|he|she|they|there|"
                     r"i|we|you|but|however)\b)", re.IGNORECASE)
# A reply that opens with a negation standing as its answer, as a Yes or No stands: "Not
# really.", "Not at all", "Certainly not, the man leaves" (not "Not really sure", "Not only ...")
_NEGATION_ANSWER = re.compile(r"^[\s*\"'`]*(?:(?:absolutely|certainly|definitely|surely|probably|of course|clearly)\s+"
                              r"not|not\s+(?:really|at all|quite|true|correct|the case|in the video))"
                              r"(?=[\s*\"'`]*(?:[.,!;:)\-—–]|$)|\s+(?:because|since|as|the|this|that|he|she|they|there|"
                              r"it)\b)", re.IGNORECASE)
_PAIRED = re.compile(r"\s*(?:or|and|/)\s*(?:yes|no)\b", re.IGNORECASE)
_YES_NO_CONCLUDES = re.compile(r"(?:final answer|answer\s*(?:is|would be|[:=])|\b(?:so|therefore|thus|hence|actually|"
                               r"wait|correction|instead|i(?:'d| would)? say))[\s:*\"'`,]*$", re.IGNORECASE)


def first_word_verdict(raw: str | None) -> str | None:
    """"yes" or "no" when the answer's first word is a Yes or No variant (any case, any leading
    space), the word a first-token probability describes; else None."""
    match = re.match(r"\s*([A-Za-z]+)", compatible(raw) or "")
    word = match.group(1).lower() if match else ""
    return "yes" if word == "yes" else "no" if word == "no" else None


def parse_yes_no(raw: str | None) -> Parsed:
    """The Yes or No the answer concludes with. Verdicts that disagree ("Yes. Actually, no.")
    are settled by a concluding phrase; without one they are a parse failure. A reply that is a
    negation with no Yes or No in it ("Not really.", "Absolutely not") is No."""
    raw = compatible(raw)
    if raw is None or not raw.strip():
        return Parsed(None, "empty")
    verdicts = []  # (value, concluded) of each Yes/No that stands as an answer
    for match in _VERDICT.finditer(raw):
        first = not raw[:match.start()].strip(" \t\n*\"'`")
        if _PAIRED.match(raw[match.end():]):  # "yes or no": both, as a list
            verdicts += [("yes", False), ("no", False)]
        elif first or _STANDS.match(raw[match.end():]) or _YES_NO_CONCLUDES.search(raw[:match.start()]):
            value = "yes" if match.group(1).lower() in _YES else "no"
            verdicts.append((value, bool(_YES_NO_CONCLUDES.search(raw[:match.start()]))))
    if not verdicts:
        return Parsed("no", "ok") if _NEGATION_ANSWER.match(raw) else Parsed(None, "unparseable")
    values = {value for value, _ in verdicts}
    if len(values) == 1:
        return Parsed(values.pop(), "ok")
    concluded = [value for value, marked in verdicts if marked]
    return Parsed(concluded[-1], "ok") if concluded else Parsed(None, "ambiguous")
