"""Read Yes or No out of what a model writes: the meant reading of a Yes/No question (grammar in
docs/reproduce.md, "How a reply is read").

The answer words are Yes/No and their common variants (yeah, nope, Y/N, True/False,
Correct/Incorrect, wrong), the same words of other languages (sí/no, ja/nein, oui/non, 是/否,
да/нет), and an opening "Sure." or "Of course."; a reply that is one JSON object is read from its
answer field ({"answer": "no"}, {"entailed": false}). Each word counts where it stands as the answer
(first, before punctuation or a reason, or after "the answer is"), turned over by a negation
anywhere in its clause ("I wouldn't say yes", "I do not think the caption is correct": No), and
offered rather than given after "maybe" or "perhaps" (a hedge). Answers that disagree are settled
by a concluding phrase or a change of mind ("Yes. Actually, no.", "Initially yes, but on
reflection no."); an answer that was only asked ("Yes? No, ...") or given up ("yes at first")
yields to one that was given; otherwise disagreement, a hedge ("partly correct", "not
necessarily") or a pair ("yes and no") is a parse failure.
"""
from __future__ import annotations

import re

from .grammar import (CHANGED_MIND, GIVEN_UP_AFTER, GIVEN_UP_BEFORE, HESITANT_BEFORE, NEGATED_BEFORE, QUESTIONED,
                      SETTLED_AFTER, Parsed, compatible, decided, json_field, negated_clause, unwrapped)

_WORDS = {"yes": "yes", "yeah": "yes", "yep": "yes", "yup": "yes", "no": "no", "nope": "no", "true": "yes",
          "false": "no", "correct": "yes", "incorrect": "no", "accurate": "yes", "inaccurate": "no", "wrong": "no",
          "y": "yes", "n": "no", "affirmative": "yes", "negative": "no",
          # Spanish, Italian, German, French, Russian ("no" is Spanish and Italian too)
          "sí": "yes", "si": "yes", "ja": "yes", "nein": "no", "oui": "yes", "non": "no", "да": "yes", "нет": "no"}
_VERDICT = re.compile(r"(?<![\w'’])(" + "|".join(_WORDS) + r")(?![\w'’]|-\w)", re.IGNORECASE)
# An opening assent that stands as the answer: "Sure.", "Of course, the man ..."
_ASSENT = re.compile(r"^[\s*\"'`]*(?:sure|of\s+course|certainly|absolutely|definitely|indeed|exactly)"
                     r"(?=[\s*\"'`]*(?:[.,!;:)\-—–]|$))", re.IGNORECASE)
# A reply that answers "Does the video match the caption?" with its verb: "It does not.", "The
# caption matches the video.", "The video doesn't match the caption, because ..."
_MATCH_ANSWER = re.compile(r"^[\s*\"'`]*(?:it|this|that|they|the\s+(?:video|caption|clip|description|statement))\s+"
                           r"(?:(?:does|do)(?P<not>n't|n’t|\s+not)?(?:\s+match)?|matches|match)"
                           r"(?:\s+(?:the\s+)?(?:video|caption|clip|description|statement))?"
                           r"(?=[\s*\"'`]*(?:[.,!;:)\-—–]|$)|\s+(?:because|since|as|but)\b)", re.IGNORECASE)
_PARTLY = re.compile(r"^[\s,;:\-—–]*(?:partly|partially|somewhat|mostly|in\s+part|sort\s+of|kind\s+of|"
                     r"to\s+some\s+extent)\b", re.IGNORECASE)  # "It does, partly.": a hedge
# The fields of a JSON reply that hold its verdict
VERDICT_FIELDS = ("answer", "final_answer", "verdict", "entailed", "entailment", "entails", "match", "matches",
                  "is_match", "correct", "is_correct", "label", "prediction", "result", "response")
_ADJECTIVES = {"true", "false", "correct", "incorrect", "accurate", "inaccurate", "wrong", "affirmative", "negative"}
# A Yes or No that is the answer, not a word of a sentence ("no one", "no door"): followed by
# punctuation or the end, or by a reason ("Yes because", "No the man ...").
_STANDS = re.compile(r"^(?:[\s*\"'`]*(?:[.,!;:)\-—–]|$)|\s+(?:because|since|as|it|the|this|that|he|she|they|there|"
                     r"i|we|you|but|however)\b)", re.IGNORECASE)
# "correct", "true" stand only before punctuation or a reason ("It is true that ..." states nothing)
_ADJECTIVE_STANDS = re.compile(r"^(?:[\s*\"'`]*(?:[.,!;:)\-—–]|$)|\s+(?:because|since|as|but|however)\b)",
                               re.IGNORECASE)
_LETTER_STANDS = re.compile(r"^[\s*\"'`)\]]*(?:[.,!;:\-—–]|$)")  # "Y", "N." and "N, because ..."
_HEDGED = re.compile(r"\b(?:partly|partially|mostly|somewhat|half|largely|almost|nearly|roughly|not\s+entirely|"
                     r"not\s+completely|not\s+fully|only\s+partly)\s+$", re.IGNORECASE)
# A reply that opens with a negation standing as its answer, as a Yes or No stands: "Not
# really.", "Not at all", "Certainly not, the man leaves", "I don't think so" (not "Not really
# sure", "Not only ...")
_NEGATION_ANSWER = re.compile(r"^[\s*\"'`]*(?:(?:absolutely|certainly|definitely|surely|probably|of course|clearly)\s+"
                              r"not|not\s+(?:really|at all|quite|exactly|the case|in the video)|"
                              r"i\s+(?:don't|do not|don’t)\s+(?:think|believe)\s+so|"
                              r"(?:there's|there\s+is)\s+no\s+way)"
                              r"(?=[\s*\"'`]*(?:[.,!;:)\-—–]|$)|\s+(?:because|since|as|the|this|that|he|she|they|there|"
                              r"it)\b)", re.IGNORECASE)
_PAIRED = re.compile(r"\s*(?:or|and|/|nor)\s*(?:yes|no)\b", re.IGNORECASE)
_PAIRED_LETTERS = re.compile(r"\s*(?:or|and|/|,)\s*[YN](?![A-Za-z])", re.IGNORECASE)  # "Y/N", "Y, N"
_CONCLUDES = re.compile(r"(?:final answer|answer\s*(?:is|would be|[:=])|\b(?:so|therefore|thus|hence|actually|"
                        r"wait|correction|instead|i(?:'d| would)? say)|" + CHANGED_MIND + r")[\s:*\"'`,]*$",
                        re.IGNORECASE)
# ... or a change of mind earlier in the answer word's sentence: "No. Actually, looking again, yes."
_CHANGES_IN_SENTENCE = re.compile(r"(?:^|[.!?\n])[^.!?\n]*\b(?:actually|wait|correction|sorry|oops|i\s+meant|"
                                  r"or\s+rather|on\s+second\s+thought|looking\s+again|changed\s+my\s+mind)\b"
                                  r"[^.!?\n]*$", re.IGNORECASE)
# 是 / 否 and their forms, standing as the whole answer or its opening: "是。", "不是，因为……"
_CHINESE = re.compile(r"^[\s*\"'`]*(?:答案[是为]?[：:]?\s*)?(是的|是|对|否|不是|不对)(?:[\s，。！；：,.!;:]|$)")


def first_word_verdict(raw: str | None) -> str | None:
    """"yes" or "no" when the answer's first word is a Yes or No variant (any case, any leading
    space), the word a first-token probability describes; else None."""
    match = re.match(r"\s*([A-Za-z]+)", compatible(raw) or "")
    word = match.group(1).lower() if match else ""
    return "yes" if word == "yes" else "no" if word == "no" else None


def _stands(raw: str, word: str, start: int, end: int, first: bool) -> bool:
    after, before = raw[end:], raw[:start]
    if word in ("y", "n"):
        return first and bool(_LETTER_STANDS.match(after))
    if word in _ADJECTIVES:
        return bool(_ADJECTIVE_STANDS.match(after) or _CONCLUDES.search(before))
    return first or bool(_STANDS.match(after) or _CONCLUDES.search(before))


def _verdicts(raw: str) -> list[tuple[str, bool, bool]]:
    """(value, concluded, weak) of each answer word that stands as an answer; "hedge" for one
    that hesitates."""
    found = []
    chinese = _CHINESE.match(raw)
    if chinese:
        found.append(("yes" if chinese.group(1) in ("是的", "是", "对") else "no", False, False))
    for match in _VERDICT.finditer(raw):
        word, before, after = match.group(1).lower(), raw[:match.start()], raw[match.end():]
        first = not before.strip(" \t\n*\"'`([")
        negated = bool(NEGATED_BEFORE.search(before[-48:])) or negated_clause(before[-160:])
        if (_PAIRED.match(after) and word in ("yes", "no")) or (_PAIRED_LETTERS.match(after) and word in ("y", "n")):
            # "yes or no", "Y/N": both, as a list
            found += [("yes", False, False), ("no", False, False)]
        elif HESITANT_BEFORE.search(before[-48:]) or (word in _ADJECTIVES and _HEDGED.search(before[-24:])):
            found.append(("hedge", False, False))
        elif negated or _stands(raw, word, match.start(), match.end(), first):
            value = _WORDS[word]
            if negated:
                value = "no" if value == "yes" else "yes"
            concluded = bool(_CONCLUDES.search(before) or SETTLED_AFTER.match(after)
                             or _CHANGES_IN_SENTENCE.search(before[-160:]))
            weak = bool(QUESTIONED.match(after) or GIVEN_UP_BEFORE.search(before[-48:]) or GIVEN_UP_AFTER.match(after))
            found.append((value, concluded, weak))
    return found


def parse_yes_no(raw: str | None, cut: bool = False) -> Parsed:
    """The Yes or No the answer concludes with (module docstring). A reply that is a negation
    with no answer word in it ("Not really.", "Absolutely not", "I don't think so") is No.
    ``cut``: the reply may go on past what was received (read only where that part decides it)."""
    raw = compatible(raw)
    if raw is None or not raw.strip():
        return Parsed(None, "empty")
    if cut:
        return decided(parse_yes_no, raw)
    found, value = json_field(raw, VERDICT_FIELDS)
    if found:
        if isinstance(value, bool):
            return Parsed("yes" if value else "no", "ok")
        return parse_yes_no(value) if isinstance(value, str) else Parsed(None, "unparseable")
    raw = unwrapped(raw)
    verdicts = _verdicts(raw)
    if not verdicts:
        if _ASSENT.match(raw):
            return Parsed("yes", "ok")
        matched = _MATCH_ANSWER.match(raw)
        if matched and not _PARTLY.match(raw[matched.end():]):
            return Parsed("no" if matched.group("not") else "yes", "ok")
        return Parsed("no", "ok") if _NEGATION_ANSWER.match(raw) else Parsed(None, "unparseable")
    concluded = [value for value, marked, _ in verdicts if marked and value != "hedge"]
    if concluded:
        return Parsed(concluded[-1], "ok")
    firm = [value for value, _, weak in verdicts if not weak] or [value for value, _, _ in verdicts]
    values = set(firm)
    if len(values) == 1 and "hedge" not in values:
        return Parsed(values.pop(), "ok")
    return Parsed(None, "ambiguous")
