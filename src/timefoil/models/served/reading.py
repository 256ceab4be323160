"""Answers read from a reply's first token: its alternatives' log-probabilities become Yes/No
or option-letter probabilities, whatever wire format carried them."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable

from ..requests import Answer, Request

LOGPROB_SLACK = 1e-3  # a log-probability this far above 0 is rounding, read as 0


def first_token_probs(alternatives: Iterable[tuple[Any, Any]]) -> tuple[list[tuple[str, float]], str | None]:
    """(token, log-probability) pairs as (token, probability), or none and why: a
    log-probability that is not a finite number at most 0 makes every probability of the
    reply doubtful. Pairs missing either half are skipped (a missing log-probability is
    unknown, not 0); a token listed twice counts once."""
    read: dict[str, float] = {}
    for token, logprob in alternatives:
        if token is None or logprob is None:
            continue
        try:
            value = float(logprob)
        except (TypeError, ValueError):
            value = math.nan
        if not math.isfinite(value) or value > LOGPROB_SLACK:
            return [], f"log-probability {logprob!r} of token {str(token)!r} is not a finite number <= 0"
        read.setdefault(str(token), math.exp(min(value, 0.0)))
    return list(read.items()), None


def _at_most_one(probs: dict[str, float], answer: Answer) -> dict[str, float] | None:
    """``probs`` summed over variants ("Yes", " yes", "YES"), as one distribution: a sum above
    1 by rounding alone (``LOGPROB_SLACK``) is scaled back to 1; more than that says the
    alternatives are not one distribution, and none is kept (the answer is read from its text,
    and its record says why)."""
    total = sum(probs.values())
    if total > math.exp(LOGPROB_SLACK):
        answer.meta["logprobs_dropped"] = f"probabilities of {', '.join(probs)} sum to {total:.4g}, above 1"
        return None
    return {k: p / total for k, p in probs.items()} if total > 1.0 else probs


def _yes_no_probs(request: Request, alternatives: list[tuple[str, float]], answer: Answer) -> None:
    words = [(t.strip().lower(), p) for t, p in alternatives]
    answer.probs = _at_most_one({"yes": sum(p for w, p in words if w == "yes"),
                                 "no": sum(p for w, p in words if w == "no")}, answer)
    answer.meta["tokens"] = [t for t, _ in alternatives if t.strip().lower() in ("yes", "no")]


def _letter_probs(request: Request, alternatives: list[tuple[str, float]], answer: Answer) -> None:
    letters = [(t.strip().strip("().:").upper(), p) for t, p in alternatives]
    answer.probs = _at_most_one({label: sum(p for w, p in letters if w == label) for label in request.labels},
                                answer)


# How each request kind's first-token alternatives are read; None: free generation, no logprobs asked.
READERS = {"entailment": _yes_no_probs, "choice": _letter_probs, "generation": None}


@dataclass
class Reply:
    """What a wire format reads from a successful reply: its text, why it ended, and the first
    token's (token, log-probability) alternatives where the server gave them."""

    text: str
    finish_reason: Any = None
    alternatives: list[tuple[Any, Any]] = field(default_factory=list)
    attempts: int = 1
    latency: float = 0.0
    model: Any = None  # the model the reply names (the transport compares it with the one it expects)
