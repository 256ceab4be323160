"""What a model's reply must be before anything stores or reads it: a list of one ``Answer`` per
request, each with finite numbers, probabilities between 0 and 1, and what its request kind is
read from (a similarity needs a score, a rank its ranks, ...). The runner checks every reply of
every model here, built-in or plugin, batch or stream; what fails is said in one line naming
the model's method, so the request becomes that model's recorded error, never a silent loss."""
from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any

from .requests import Answer, Request

# A probability summed from a float32 softmax may pass 1 by a few rounding steps.
PROBABILITY_SLACK = 1e-5
# What each built-in request kind is read from; a protocol's own kind gets the other checks only.
READ_FROM = {"similarity": ("score",), "entailment": ("raw", "probs"), "choice": ("raw", "probs"),
             "generation": ("raw",)}


class WrongAnswers(RuntimeError):
    """A reply that is not one Answer per request: the whole batch is refused."""


def check_reply(reply: Any, count: int, method: str) -> list:
    """``reply`` itself, if it is a list of ``count`` things; ``method`` names who replied."""
    if not isinstance(reply, list):
        raise WrongAnswers(f"{method} returned {_a(reply)}, not a list of answers")
    if len(reply) != count:
        raise WrongAnswers(f"{method} returned {len(reply)} answers for {count} request{'s' * (count != 1)}")
    return reply


def answer_problem(answer: Any, request: Request) -> str | None:
    """What is wrong with ``answer`` as the reply to ``request``, or None. An answer that is an
    error already is taken as it is: it says why it has nothing to read."""
    if not isinstance(answer, Answer):
        return f"{_a(answer)}, not an Answer"
    if answer.error is not None:
        return None if isinstance(answer.error, str) and answer.error else f"error {answer.error!r}, not a message"
    if answer.raw is not None and not isinstance(answer.raw, str):
        return f"raw {_a(answer.raw)}, not text"
    if answer.score is not None and not _finite(answer.score):
        return f"score {_shown(answer.score)}, not a finite number"
    if not _finite(answer.latency or 0.0):
        return f"latency {_shown(answer.latency)}, not a finite number"
    if not isinstance(answer.meta, dict):
        return "meta that is not a dict"
    return _probs_problem(answer.probs) or _kind_problem(answer, request)


def _probs_problem(probs: Any) -> str | None:
    if probs is None:
        return None
    if not isinstance(probs, dict):
        return f"probs {_a(probs)}, not a dict of probabilities"
    for key, value in probs.items():
        if not _finite(value) or not 0 <= value <= 1 + PROBABILITY_SLACK:
            return f"probability {key!r} {_shown(value)}, not between 0 and 1"
    return None


def _kind_problem(answer: Answer, request: Request) -> str | None:
    if request.kind == "rank":
        return _ranks_problem(answer.meta.get("ranks"), request)
    needs = READ_FROM.get(request.kind)
    if needs and all(getattr(answer, field) is None for field in needs):
        return f"no {' and no '.join(needs)} ({_article(request.kind)} {request.kind} answer needs " \
               f"{'one' if len(needs) == 1 else 'either'})"
    return None


def _ranks_problem(ranks: Any, request: Request) -> str | None:
    """One rank (1 to the number of candidates) per candidate asked about."""
    wanted, most = len(request.ask), len(request.option_texts)
    if ranks is None:
        return "no ranks (a rank answer needs them in its meta)"
    if not isinstance(ranks, list) or len(ranks) != wanted:
        return f"ranks {_shown(ranks)}, not a list of {wanted}"
    for rank in ranks:
        if isinstance(rank, bool) or not isinstance(rank, Integral) or not 1 <= rank <= most:
            return f"rank {_shown(rank)}, not a whole number from 1 to {most}"
    return None


def _finite(value: Any) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool) and math.isfinite(value)


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def _a(value: Any) -> str:
    name = type(value).__name__
    return "None" if value is None else f"{_article(name)} {name}"


def _shown(value: Any) -> str:
    """A value as the one line shows it: short, with its type unless it is a number."""
    shown = repr(value)[:40]
    return shown if value is None or (isinstance(value, Real) and not isinstance(value, bool)) else \
        f"{shown} ({_a(value)})"
