"""Read option letters and Yes/No out of what models write: the meant reading, one grammar for
every protocol (docs/reproduce.md, "How a reply is read").

Lenient about form ("(B)", "**b**", "Answer: B", "Option B", "Option 2", "the first one", the
option's own text, "the second video" for a question whose options are video segments), strict
about meaning: a letter counts only where it is used as one (the article in "A man opens the door"
is not option A, the "A" of "then A on reflection" is), a negated option names no answer ("not
A"), the answer is what the text concludes ("I think it's A. Actually, B." is B; "Initially B, but
on reflection A" is A), an answer given first keeps its reason ("A. Caption B reverses the order."
is A), and output naming several options with no conclusion, or none, is a parse failure, scored
wrong and counted in a visible rate, never a guess.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from .grammar import (CHANGED_MIND, EXAMINED_BEFORE, GIVEN_UP_AFTER, GIVEN_UP_BEFORE, HESITANT_BEFORE, NEGATED_BEFORE,
                      QUESTIONED, SETTLED_AFTER, Parsed, CHANGE_SIGNS, compatible, decided, json_field,
                      negated_clause, unwrapped)
from .verdicts import first_word_verdict, parse_yes_no

__all__ = ["Parsed", "compatible", "conclusion", "first_word_verdict", "parse_choice", "parse_yes_no"]

_BARE = re.compile(r"^[\s\"'*(\[]*([A-Za-z])\s*[\])}.:,]?[\s\"'*]*$")
# A single letter standing alone: not inside a word ("Based"), a contraction ("it's") or an
# abbreviation ("e.g."), optionally in brackets.
_MENTION = re.compile(r"(?<![A-Za-z0-9'’])(?<![A-Za-z]\.)(\(|\[)?([A-Za-z])([)\]])?"
                      r"(?![A-Za-z0-9'’]|\.[A-Za-z]|-[A-Za-z])")
# Words that may follow a lower-case letter used as a letter ("b is right", "a because"); any
# other word after a lower-case letter makes it a word of the sentence ("a man walks").
_AFTER_LETTER = {"is", "was", "are", "were", "fits", "fit", "matches", "match", "best", "describes", "describe",
                 "seems", "seem", "correctly", "because", "or", "and", "nor", "vs", "versus", "since", "as", "would",
                 "should", "must", "looks", "look", "appears", "appear"}
# Words that cannot follow the article "A": after them a capital "A" is the letter ("then A on
# reflection", "A in my view", "A, not B", "A shows the door first"). Nouns, adjectives and
# adverbs that may start a noun phrase ("a really", "a while", "a so-called") are not here.
_NOT_AFTER_ARTICLE = _AFTER_LETTER | {
    "in", "on", "at", "by", "for", "from", "with", "without", "to", "of", "into", "after", "before", "upon", "than",
    "via", "per", "but", "though", "although", "if", "unless", "whereas", "then", "too", "instead", "again", "now",
    "here", "there", "indeed", "overall", "anyway", "not", "only", "be", "has", "have", "had", "does", "did", "can",
    "could", "will", "may", "might", "shows", "depicts", "captures", "reflects", "corresponds", "says", "states",
    "gives", "remains", "wins", "works", "holds", "makes", "it", "this", "that", "these", "those", "he", "she",
    "they", "we", "you", "my", "me", "i", "actually", "finally", "ultimately", "over", "beats", "beat", "definitely",
    "certainly", "obviously", "surely", "wins", "seems", "undoubtedly", "hands"}
# The option another is preferred to: "I prefer A to B"
_PREFERRED_TO = re.compile(r"\bprefer(?:s|red)?\s+\S+\s+to\s+(?:option\s+|caption\s+)?[(\[*\"']*$", re.IGNORECASE)
# A capital "A" chosen is the letter whatever follows it: "I'd pick A over B", "go with A".
_CHOSEN_BEFORE = re.compile(r"\b(?:pick|choose|select|go\s+with|opt\s+for|prefer|vote\s+for)\s*$", re.IGNORECASE)
# Words after which "the first", "the second" stands for an option without its noun ("the first
# is right"); not "the first time", "the first to leave". After a pronoun ("in the second he
# stands") only where the reply has named an option so before ("in the first segment he sits").
_AFTER_ORDINAL = _AFTER_LETTER | {"shows", "depicts", "has", "does", "gets"}
_PRONOUNS = {"he", "she", "they", "it", "this", "we", "you", "i", "the", "a", "there"}
# A capital letter after another in a list ("B and A", "B, A"): a letter too, whatever word
# follows it ("B and a man" keeps its article)
_LISTED_AFTER = re.compile(r"(?<![A-Za-z0-9'’])[(\[*]*([A-Z])[)\]*]*\s*(?:,|and|or|&|/|nor)\s*[(\[*]*$")
_NAMED_BEFORE = re.compile(r"\b(?:option|caption|choice|answer|segment|letter)\s*$", re.IGNORECASE)  # "option A shows"
_WORD_LETTERS = {"A", "I"}  # upper-case letters that are also English words
# Phrases after which the text states its answer; the last one followed by an option decides.
_CONCLUDES = re.compile(
    r"final answer|answer\s*(?:is|would be|should be|must be|[:=])|"
    r"\b(?:option|caption|choice|segment|one|pick|match)\s+(?:is|would be|should be|must be)\b|"
    r"\b(?:so|therefore|thus|hence|actually|correction|wait|instead)\b|"
    r"\b(?:it|which|that|this)(?:'s|’s|\s+is|\s+would be)|"
    r"\bi(?:'ll|’ll|\s+will|\s+would|'d|’d)?\s+(?:choose|pick|select|go with|say)\b|\bmy (?:answer|choice|pick)\b|"
    r"\b(?:(?:option|caption)\s+)?[A-Z]\s*(?:vs\.?|versus)\s*(?:(?:option|caption)\s+)?[A-Z]\s*[:?]|"  # "A vs B: B"
    + CHANGED_MIND, re.IGNORECASE)
# An option, or a list of them ("A and B"), followed by a verdict against it.
_NEGATED_AFTER = re.compile(
    r"^[)\]*\"']*(?:\s*(?:,|and|or|&|nor)\s*[(\[*]*[A-Za-z][)\]*]*)*\s*(?:(?:is|are|was|were|seems|looks)\s+"
    r"(?:both\s+|also\s+|clearly\s+)?)?(?:wrong|incorrect|false|not\b|isn't|aren't|doesn't|does not|cannot|can't)",
    re.IGNORECASE)
_ORDINAL_WORDS = {"first": 0, "1st": 0, "second": 1, "2nd": 1, "third": 2, "3rd": 2, "fourth": 3, "4th": 3,
                  "fifth": 4, "5th": 4, "last": -1, "former": 0, "latter": 1}
_ORDINAL = "|".join(_ORDINAL_WORDS)
_OPTION_NOUNS = "one|option|caption|choice|answer|description|statement|sentence"
_SEGMENT_NOUNS = "video|segment|clip"
_LISTED = re.compile(r"^[)\]*]*\s*(?:,|or|and|/|&|vs\.?|versus)\s*(?:[(\[*]*[A-Za-z](?![A-Za-z])|"
                     r"(?:the\s+)?(?:" + _ORDINAL + r")\b)", re.IGNORECASE)
_SENTENCE_END = re.compile(r"[.!?](?:\s|$)|\n")
_LEAD_IN = re.compile(r"[\s:*#>\-\"'`]*")
# After an opening answer ("A." "(B):" "C -"), the rest of the reply is its reason.
# ... or affirms it first: "Option A is correct because ..."
_OPENS = re.compile(r"^[)\]*\"'`]*\s*(?:[.:;,\-—–]|\n|"
                    r"(?:is|fits|matches)\s+(?:the\s+)?(?:correct|right|best|answer)\b)", re.IGNORECASE)
_OPENING_LEAD = re.compile(r"[\s:*#>\-\"'`]*(?:(?:option|caption|choice|answer)\s*:?\s*)?", re.IGNORECASE)
# A later option that the reply affirms, not reasons about: "A. B is also right", "A. Or B."
_AFFIRMED_AFTER = re.compile(r"^[)\]*\"'`]*\s*(?:(?:is|was|seems|would be|could be|might be|may be)\s+)?"
                             r"(?:also|too|correct|right|true|better|best|possible|plausible|likely|the answer|"
                             r"could|might|may)\b", re.IGNORECASE)
_OFFERED_BEFORE = re.compile(r"\b(?:or|maybe|perhaps|possibly|then)\s+(?:(?:option|caption|the)\s+)?[(\[*\"']*$",
                             re.IGNORECASE)
_ALONE_AFTER = re.compile(r"^[)\]*\"'`]*\s*(?:[.!?]|$)")


@dataclass(frozen=True)
class _Mention:
    letter: str
    start: int
    end: int
    negated: bool
    listed: bool  # the first of a list ("A or B"), which names no single answer
    weak: bool = False  # asked ("B?") or given up ("B at first"): an answer only where nothing else is
    settled: bool = False  # followed by a phrase that settles on it ("A on reflection")
    offered: bool = False  # "maybe B": no answer, but a doubt cast on any other option given


def _judged(text: str, start: int, end: int, letter: str, listed: bool) -> _Mention:
    """A mention with what the words around it say of it."""
    before, after = text[max(0, start - 48):start], text[end:end + 80]
    # a hedged mention ("not sure it's A", "maybe B"), or one looked at ("let me look at B"),
    # names no answer either
    negated = bool(NEGATED_BEFORE.search(before) or HESITANT_BEFORE.search(before) or _NEGATED_AFTER.match(after)
                   or EXAMINED_BEFORE.search(before) or _PREFERRED_TO.search(before)
                   or negated_clause(text[max(0, start - 160):start]))
    weak = bool(QUESTIONED.match(after) or GIVEN_UP_BEFORE.search(before) or GIVEN_UP_AFTER.match(after))
    return _Mention(letter, start, end, negated, listed, weak, bool(SETTLED_AFTER.match(after)),
                    bool(HESITANT_BEFORE.search(before)))


def _letter_mentions(text: str, labels: Sequence[str]) -> list[_Mention]:
    found = []
    for match in _MENTION.finditer(text):
        opening, letter, closing = match.groups()
        if letter.upper() not in labels:
            continue
        bold = text[max(0, match.start() - 2):match.start()] == "**" and text[match.end():match.end() + 2] == "**"
        named = _NAMED_BEFORE.search(text[max(0, match.start() - 12):match.start()])
        chosen = letter.isupper() and _CHOSEN_BEFORE.search(text[max(0, match.start() - 16):match.start()])
        marked = bool(opening or closing or bold or named or chosen)
        following = re.match(r"[ \t]+([A-Za-z]+)", text[match.end():])  # on the same line
        used_as_word = letter.islower() or letter in _WORD_LETTERS
        listed_after = _LISTED_AFTER.search(text[max(0, match.start() - 16):match.start()])
        marked = marked or bool(letter.isupper() and listed_after and listed_after.group(1) in labels)
        allowed = _NOT_AFTER_ARTICLE if letter.isupper() else _AFTER_LETTER
        if used_as_word and not marked and following and following.group(1).lower() not in allowed:
            continue  # "a man", "I think", "so b shows": a word of the sentence, or unsure
        found.append(_judged(text, match.start(), match.end(), letter.upper(), bool(_LISTED.match(text[match.end():]))))
    return found


def _named_mentions(text: str, labels: Sequence[str], segments: bool) -> list[_Mention]:
    """Options named by place or number: "the first one", "the second caption", "Option 2",
    and, where the options are the segments of one video, "the second video", "segment 1", "the
    clip before the black frame"."""
    nouns = _OPTION_NOUNS + ("|" + _SEGMENT_NOUNS if segments else "")
    # "the first one", "the second caption"; not "the first one to leave"
    ordinal = re.compile(r"\b(?:(the)\s+)?(" + _ORDINAL + r")\b(?:\s+(" + nouns + r")\b(?!\s+(?:to|who)\b))?",
                         re.IGNORECASE)
    numbered = re.compile(r"\b(?:" + nouns + r"|number|no\.)\s*#?\s*\(?([1-9])\b\)?|#([1-9])\b", re.IGNORECASE)
    found = []
    for match in ordinal.finditer(text):
        the, word, noun = match.groups()
        word = word.lower()
        after = text[match.end():]
        following = re.match(r"\s+([A-Za-z]+)", after)
        word_after = following.group(1).lower() if following else ""
        after_list = re.search(r"\b(?:" + _ORDINAL + r")(?:\s+(?:" + nouns + r"))?\s*(?:,|and|or|/|&)\s*$",
                               text[max(0, match.start() - 32):match.start()])  # "the first and second"
        alone = after_list or the and (re.match(r"[\s*\"'`]*(?:[.,!;:)]|$)", after) or _LISTED.match(after)
                         or word_after in _AFTER_ORDINAL or (word_after in _PRONOUNS and found))
        if not (noun or alone) or (word in ("former", "latter") and (not the or len(labels) != 2)):
            continue
        index = _ORDINAL_WORDS[word]
        if index < len(labels):
            found.append(_judged(text, match.start(), match.end(), labels[index], bool(_LISTED.match(after))))
    for match in numbered.finditer(text):
        digit = match.group(1) or match.group(2)
        label = digit if digit in labels else labels[int(digit) - 1] if int(digit) <= len(labels) else None
        if label:
            found.append(_judged(text, match.start(), match.end(), label, bool(_LISTED.match(text[match.end():]))))
    if segments and len(labels) == 2:
        for match in re.finditer(r"\b(before|after)\s+the\s+black\b", text, re.IGNORECASE):
            found.append(_judged(text, match.start(), match.end(), labels[match.group(1).lower() == "after"], False))
    return found


def _mentions(text: str, labels: Sequence[str], segments: bool = False) -> list[_Mention]:
    found = _letter_mentions(text, labels) + _named_mentions(text, labels, segments)
    return sorted(found, key=lambda m: m.start)


def _concluded(text: str, mentions: Sequence[_Mention]) -> str | None:
    """The option the text concludes with: the first option after the last concluding phrase
    that is followed by one in the same sentence (a list "A or B" concludes nothing), or an option
    followed by a phrase that settles on it ("A on reflection"), whichever comes last."""
    settled = [(m.start, m.letter) for m in mentions if m.settled and not m.negated and not m.listed]
    for marker in reversed(list(_CONCLUDES.finditer(text))):
        found = _first_after(text, marker.end(), mentions)
        if found is not None:
            settled.append((marker.end(), found))
            break
    return max(settled)[1] if settled else None


_CONCEDED_AFTER = re.compile(r"^[)\]*\"'`]*\s*(?:is|was|would be|could be|might be|may be|seems)?\s*"
                             r"(?:also|too)\s+(?:possible|plausible|correct|right|likely|valid)", re.IGNORECASE)


def _conceded(text: str, mentions: Sequence[_Mention], concluded: str) -> bool:
    """Whether another option is granted as also right after the conclusion: a hedge."""
    return any(m.letter != concluded and not m.negated and _CONCEDED_AFTER.match(text[m.end:]) for m in mentions)


def _first_after(text: str, start: int, mentions: Sequence[_Mention]) -> str | None:
    for mention in mentions:
        if mention.start < start:
            continue
        between = text[start:mention.start]
        if _SENTENCE_END.search(between) and not _LEAD_IN.fullmatch(between):
            return None  # the sentence ended before an option: this phrase concludes nothing
        if mention.negated:
            continue
        return None if mention.listed else mention.letter
    return None


def _opening_answer(text: str, mentions: Sequence[_Mention]) -> str | None:
    """The option a reply opens with, its reason after it ("A. Caption B reverses the order."),
    unless a later option stands alone as a sentence or is affirmed ("A. B is also right.")."""
    first = mentions[0]
    bracketed = text[first.end - 1] in ")]"
    if not _OPENING_LEAD.fullmatch(text[:first.start]) or first.listed or first.weak or first.negated \
            or not (bracketed or _OPENS.match(text[first.end:])):
        return None
    for later in mentions[1:]:
        if later.letter == first.letter:
            continue
        offered = _OFFERED_BEFORE.search(text[max(0, later.start - 16):later.start])  # "A. Or B.", "A. Maybe B."
        if offered:
            return None
        if later.negated:
            continue
        sentence_start = max(text.rfind(mark, 0, later.start) for mark in ".!?\n:;")
        alone = _LEAD_IN.fullmatch(text[sentence_start + 1:later.start]) and _ALONE_AFTER.match(text[later.end:])
        alternative = re.match(r"[)\]*]*\s*(?:or\b|/)", text[later.end:])  # "A. B or C?"
        if alternative or alone or offered or _AFFIRMED_AFTER.match(text[later.end:]):
            return None
    return first.letter


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


# The fields of a JSON reply that hold its letter: {"answer": "B"}
LETTER_FIELDS = ("answer", "final_answer", "choice", "option", "letter", "selected", "selection", "prediction",
                 "correct_option", "best_option", "label", "response")


def parse_choice(raw: str | None, labels: Sequence[str] = ("A", "B"),
                 option_texts: Sequence[str] = (), segments: bool = False, cut: bool = False) -> Parsed:
    """The option ``raw`` answers. ``segments``: the options are the segments of one video shown
    in turn (Vinoground's video questions), which a reply may name ("the second video"); ``cut``:
    the reply may go on past what was received (read only where that part decides it)."""
    raw = compatible(raw)
    if raw is None or not raw.strip():
        return Parsed(None, "empty")
    if cut:
        return decided(lambda part: parse_choice(part, labels, option_texts, segments), raw)
    labels = [label.upper() for label in labels]
    found, value = json_field(raw, LETTER_FIELDS)
    if found:
        return parse_choice(value, labels, option_texts, segments) if isinstance(value, str) else \
            Parsed(None, "unparseable")
    text = unwrapped(raw).strip()
    bare = _BARE.match(text)
    if bare:
        letter = bare.group(1).upper()
        return Parsed(letter, "ok") if letter in labels else Parsed(None, "unparseable")
    mentions = _mentions(text, labels, segments)
    concluded = _concluded(text, mentions)
    if concluded and _conceded(text, mentions, concluded):
        return Parsed(None, "ambiguous")  # "the answer is A, but B is also possible"
    if concluded:
        return Parsed(concluded, "ok")
    standing = [m for m in mentions if not m.negated]
    firm = [m for m in standing if not m.weak] or standing
    named = {m.letter for m in firm}
    quoted = _quoted(text, labels, option_texts) if option_texts else None
    if len(named) > 1:
        opening = _opening_answer(text, firm)
        named = {opening} if opening else named
    doubted = any(m.offered and m.letter not in named for m in mentions)  # "A. Maybe B."
    if len(named) > 1 or (named and quoted and quoted not in named) or (named and doubted):
        return Parsed(None, "ambiguous")
    if named:
        return Parsed(named.pop(), "ok")
    return Parsed(quoted, "ok") if quoted else Parsed(None, "unparseable")


# <answer>...</answer>, and VELOCITI's chain-of-thought format <<<output>>>...<<</output>>>.
_TAGGED = re.compile(r"<answer>\s*(.*?)\s*</answer>|<<<output>>>\s*(.*?)\s*<<</output>>>", re.IGNORECASE | re.DOTALL)
_FINAL = re.compile(r"final answer|answer is|answer would be|answer:|therefore", re.IGNORECASE)


def conclusion(raw: str | None, cut: bool = False) -> str | None:
    """The part of a reasoned answer that states the answer: the last tagged answer, else what
    follows the last "answer is" / "final answer" / "Answer:", else the last non-empty line. Of a
    reply cut before its writer finished (``cut``), only a tagged answer followed by more words
    with no sign of a change of mind (as ``grammar.decided`` asks) is its conclusion; else None."""
    if raw is None:
        return None
    tagged = [answer or output for answer, output in _TAGGED.findall(raw)]
    if cut:
        last = list(_TAGGED.finditer(raw))
        rest = raw[last[-1].end():] if last else ""
        return tagged[-1] if last and re.search(r"\w", rest) and not CHANGE_SIGNS.search(rest) else None
    if tagged:
        return tagged[-1]
    lines = [line for line in raw.strip().splitlines() if line.strip()]
    for line in reversed(lines):
        marks = list(_FINAL.finditer(line))
        rest = line[marks[-1].end():].strip(" :*-") if marks else ""
        if rest:
            return rest
    return lines[-1] if lines else raw
