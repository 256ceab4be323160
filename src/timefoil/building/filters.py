"""Filters over (caption, counterfactual) candidates; each says why it drops one.

- ``same_words``: Vinoground's rule, the two texts use exactly the same words;
- ``entailment``: VITATECS' NLI step, dropped when either text entails the other (any model
  that answers Yes/No questions);
- ``aspect_consistency``: VITATECS' 7-way rule, a class is kept only when the product of the
  classifier's probabilities for (t1, t2) and (t2, t1) beats every other class by a margin;
- ``language_prior``: a text-only model picks the true caption without the video; items it
  solves with high confidence are dropped (or flagged), and its accuracy before and after is
  reported, so the benchmark cannot be passed from the captions alone.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..measures.parsing import parse_choice, parse_yes_no
from ..models.requests import Answer, Request
from .asking import Asker
from .rules import same_words

DISQUALIFIED = "disqualified"


@dataclass(frozen=True)
class Verdict:
    keep: bool
    reason: str = ""  # why it was dropped (or flagged)
    flagged: bool = False
    detail: dict | None = None  # the numbers the decision used


def same_words_filter(caption: str, foil: str) -> Verdict:
    return Verdict(True) if same_words(caption, foil) else Verdict(False, "not the same words")


def p_yes(answer: Answer) -> float | None:
    """p(Yes) from the answer's probabilities, else 1/0 from its text; None if unreadable."""
    if answer.error:
        return None
    if answer.probs and (answer.probs.get("yes", 0) + answer.probs.get("no", 0)) > 0:
        return answer.probs["yes"] / (answer.probs["yes"] + answer.probs["no"])
    parsed = parse_yes_no(answer.raw)
    return None if not parsed.ok else float(parsed.value == "yes")


def nli_question(premise: str, hypothesis: str) -> Request:
    text = (f'Premise: "{premise}"\nHypothesis: "{hypothesis}"\n'
            "If the premise is true, must the hypothesis be true? Answer Yes or No.")
    return Request("entailment", None, text, caption=hypothesis)


def entailment_filter(asker: Asker, pairs: Sequence[tuple[str, str]], threshold: float = 0.5) -> list[Verdict]:
    """Drop a pair when p(Yes) >= threshold in either direction (one text entails the other)."""
    requests = [q for a, b in pairs for q in (nli_question(a, b), nli_question(b, a))]
    answers = asker.ask(requests)
    out = []
    for k, (forward, backward) in enumerate(zip(answers[0::2], answers[1::2])):
        p1, p2 = p_yes(forward), p_yes(backward)
        detail = {"caption_entails_foil": p1, "foil_entails_caption": p2}
        if p1 is None or p2 is None:
            out.append(Verdict(False, "entailment unreadable", detail=detail))
        elif p1 >= threshold:
            out.append(Verdict(False, "caption entails counterfactual", detail=detail))
        elif p2 >= threshold:
            out.append(Verdict(False, "counterfactual entails caption", detail=detail))
        else:
            out.append(Verdict(True, detail=detail))
    return out


def aspect_decision(forward: Sequence[float], backward: Sequence[float], classes: Sequence[str],
                    margin: float = 0.3) -> tuple[str | None, list[float]]:
    """The class whose product of probabilities (t1, t2) x (t2, t1) exceeds every other class's
    by more than ``margin``, or None (inconsistent, unconfident, or disqualified)."""
    if not (len(forward) == len(backward) == len(classes)):
        raise ValueError("one probability per class in each direction")
    scores = [a * b for a, b in zip(forward, backward)]
    best = max(range(len(scores)), key=lambda i: scores[i])
    others = max((s for i, s in enumerate(scores) if i != best), default=0.0)
    if scores[best] - others > margin and classes[best] != DISQUALIFIED:
        return classes[best], scores
    return None, scores


def _classify_question(first: str, second: str, classes: Sequence[str]) -> Request:
    labels = tuple(chr(ord("A") + i) for i in range(len(classes)))
    listed = "\n".join(f"{label}. {name}" for label, name in zip(labels, classes))
    text = (f'Text 1: "{first}"\nText 2: "{second}"\nIn which aspect does text 2 differ from text 1 in time? '
            f"Choose {DISQUALIFIED} if they differ in anything else too.\n{listed}\nAnswer with the letter.")
    return Request("choice", None, text, labels=labels, option_texts=tuple(classes))


def class_probabilities(answer: Answer, labels: Sequence[str]) -> list[float] | None:
    """Normalised letter probabilities, or 1 on the letter the answer names; None if neither."""
    if answer.error:
        return None
    if answer.probs and sum(answer.probs.get(label, 0.0) for label in labels) > 0:
        total = sum(answer.probs.get(label, 0.0) for label in labels)
        return [answer.probs.get(label, 0.0) / total for label in labels]
    parsed = parse_choice(answer.raw, labels)
    return [float(label == parsed.value) for label in labels] if parsed.ok else None


def aspect_filter(asker: Asker, candidates: Sequence[tuple[str, str, str]], aspects: Sequence[str],
                  margin: float = 0.3) -> list[Verdict]:
    """``candidates``: (caption, counterfactual, intended aspect). Kept when the decided class is
    the intended aspect."""
    classes = (DISQUALIFIED, *aspects)
    requests = [q for c, f, _ in candidates for q in (_classify_question(c, f, classes),
                                                      _classify_question(f, c, classes))]
    answers = asker.ask(requests)
    labels = requests[0].labels if requests else ()
    out = []
    for (caption, foil, intended), forward, backward in zip(candidates, answers[0::2], answers[1::2]):
        p1, p2 = class_probabilities(forward, labels), class_probabilities(backward, labels)
        if p1 is None or p2 is None:
            out.append(Verdict(False, "aspect classifier unreadable"))
            continue
        decided, scores = aspect_decision(p1, p2, classes, margin)
        detail = {"decided": decided, "scores": dict(zip(classes, (round(s, 4) for s in scores)))}
        if decided is None:
            out.append(Verdict(False, "aspect not decided with the margin", detail=detail))
        elif decided != intended:
            out.append(Verdict(False, f"classified as {decided}, not {intended}", detail=detail))
        else:
            out.append(Verdict(True, detail=detail))
    return out


def _prior_question(first: str, second: str) -> Request:
    text = ("Without seeing the video, which caption is more likely to describe it?\n"
            f"A. {first}\nB. {second}\nAnswer with the letter.")
    return Request("choice", None, text, labels=("A", "B"), option_texts=(first, second))


def language_prior_filter(asker: Asker, pairs: Sequence[tuple[str, str]], threshold: float = 0.8,
                          action: str = "drop") -> list[Verdict]:
    """Each (caption, counterfactual) asked blind in both orders; p = mean probability given to
    the caption. p >= threshold: solved from the text alone, dropped (``action="drop"``) or kept
    and flagged (``"flag"``). ``detail["correct"]``: the blind pick in both orders was right."""
    if action not in ("drop", "flag"):
        raise ValueError(f"language-prior action must be drop or flag, not {action!r}")
    requests = [q for c, f in pairs for q in (_prior_question(c, f), _prior_question(f, c))]
    answers = asker.ask(requests)
    out = []
    for forward, backward in zip(answers[0::2], answers[1::2]):
        p1, p2 = class_probabilities(forward, ("A", "B")), class_probabilities(backward, ("A", "B"))
        if p1 is None or p2 is None:
            out.append(Verdict(True, "blind answer unreadable", flagged=True, detail={"p": None, "correct": False}))
            continue
        p = (p1[0] + p2[1]) / 2  # the caption is A in the first order and B in the second
        detail = {"p": round(p, 4), "correct": p1[0] > 0.5 and p2[1] > 0.5}
        if p >= threshold:
            out.append(Verdict(action == "flag", "solved without the video", flagged=action == "flag",
                               detail=detail))
        else:
            out.append(Verdict(True, detail=detail))
    return out
