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
    reply doubtful. Pairs missing either half are skipped."""
    read = []
    for token, logprob in alternatives:
        if token is None or logprob is None:
            continue
        try:
            value = float(logprob)
        except (TypeError, ValueError):
            value = math.nan
        if not math.isfinite(value) or value > LOGPROB_SLACK:
            return [], f"log-probability {logprob!r} of token {str(token)!r} is not a finite number <= 0"
        read.append((str(token), math.exp(min(value, 0.0))))
    return read, None


def _yes_no_probs(request: Request, alternatives: list[tuple[str, float]], answer: Answer) -> None:
    words = [(t.strip().lower(), p) for t, p in alternatives]
    answer.probs = {"yes": sum(p for w, p in words if w == "yes"), "no": sum(p for w, p in words if w == "no")}
    answer.meta["tokens"] = [t for t, _ in alternatives if t.strip().lower() in ("yes", "no")]


def _letter_probs(request: Request, alternatives: list[tuple[str, float]], answer: Answer) -> None:
    letters = [(t.strip().strip("().:").upper(), p) for t, p in alternatives]
    answer.probs = {label: sum(p for w, p in letters if w == label) for label in request.labels}


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
