"""What a model is asked (``Request``) and what it says (``Answer``).

The kind names the model method that answers it (``answer_<kind>``): ``similarity`` scores one
(video, text) pair, ``entailment`` asks a Yes/No question, ``choice`` asks for one option
letter, ``generation`` asks for free text; a protocol may bring a kind of its
own. Models answer lists of requests in batches and never see which benchmark asked.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ..core.hashing import stable_hash
from ..core.items import VideoRef
from ..video.frames import content_key
from ..video.sampling import Sampling


LISTED_OPTIONS = 64


@lru_cache(maxsize=64)
def candidates_digest(texts: tuple[str, ...]) -> str:
    """One digest per candidate pool (shared by every request of a retrieval test)."""
    return stable_hash(list(texts), 32)


@dataclass(frozen=True)
class Request:
    kind: str  # the answering method: Model.answer_<kind>
    video: VideoRef | None  # None: a blind (text-only) question
    text: str  # the caption for similarity, the full prompt otherwise
    sampling: Sampling | None = None
    labels: tuple[str, ...] = ()  # option letters for choice, as shown
    option_texts: tuple[str, ...] = ()  # what each label stands for, to read answers that quote it
    caption: str | None = None  # the caption an entailment prompt judges
    system: str | None = None
    max_tokens: int = 16
    ask: tuple[int, ...] = ()  # rank requests: the candidates (option_texts) whose ranks to report

    def key(self) -> str:
        """Content hash: the video's bytes, not its path, so a changed file is re-asked."""
        return stable_hash({
            "kind": self.kind, "text": self.text, "labels": self.labels,
            "options": self.option_texts if len(self.option_texts) <= LISTED_OPTIONS else
            candidates_digest(self.option_texts), "caption": self.caption, "system": self.system,
            "max_tokens": self.max_tokens,
            "video": content_key(self.video) if self.video else None,
            "sampling": self.sampling.to_json() if (self.sampling and self.video) else None,
            **({"ask": list(self.ask)} if self.ask else {}),
        }, 32)

    def to_json(self) -> dict[str, Any]:
        """The stored form. A long candidate list (retrieval over a whole test) is stored as
        its size and digest: every record would otherwise repeat thousands of texts."""
        listed = len(self.option_texts) <= LISTED_OPTIONS
        data = {"kind": self.kind, "video": self.video.to_json() if self.video else None,
                "text": self.text, "labels": list(self.labels),
                "option_texts": list(self.option_texts) if listed else [],
                "caption": self.caption, "system": self.system, "max_tokens": self.max_tokens}
        if not listed:
            data["candidates"] = {"n": len(self.option_texts), "digest": candidates_digest(self.option_texts)}
        if self.ask:
            data["ask"] = list(self.ask)
        return data


@dataclass
class Answer:
    """A model's raw reply. Parsing happens later, so stored runs can be re-parsed."""

    raw: str | None = None
    score: float | None = None  # similarity score
    probs: dict[str, float] | None = None  # e.g. {"yes": .7, "no": .2} or {"A": .6, "B": .3}
    error: str | None = None
    latency: float = 0.0
    meta: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        # asdict's copy, made directly: each record holds its own probs and meta (a shared answer
        # is stored once per item that asked it)
        return {"raw": self.raw, "score": self.score, "probs": None if self.probs is None else dict(self.probs),
                "error": self.error, "latency": self.latency, "meta": copy.deepcopy(self.meta) if self.meta else {}}

    @staticmethod
    def from_json(data: dict[str, Any]) -> "Answer":
        return Answer(**{k: data.get(k) for k in ("raw", "score", "probs", "error")},
                      latency=data.get("latency") or 0.0, meta=data.get("meta") or {})
