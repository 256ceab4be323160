"""Text-only questions to a model, through the response cache runs share.

Every answer is stored as soon as its batch returns, under the same key a run would use
(model fingerprint + request content), so a killed build resumes without asking again.
"""
from __future__ import annotations

import os
import sys
from typing import Sequence

from ..core.hashing import stable_hash
from ..models import Model, fingerprint_of, load_model
from ..core.redaction import redact
from ..models.requests import Answer, Request
from ..execution.answering import Answerer
from ..execution.store import RESPONSES, ResponseCache
from ..video.frames import FrameStore


class Asker:
    """A model (from a spec) and the cache its answers go to; counts what was asked."""

    def __init__(self, spec: str, cache_dir: str, model: Model | None = None):
        self.spec = spec
        self.model = model or load_model(spec, cache_dir=cache_dir)
        self.fingerprint = fingerprint_of(self.model)
        self.cache_path = os.path.join(cache_dir, RESPONSES)
        self.asked = self.cached = 0
        self.answerer = Answerer(self.model, FrameStore())  # text-only questions: no frame is ever asked for

    def _key(self, request: Request) -> str:
        return stable_hash([stable_hash(self.fingerprint), request.key()], 40)

    def ask(self, requests: Sequence[Request]) -> list[Answer]:
        missing = {request.kind for request in requests} - self.model.kinds
        if missing:
            raise ValueError(f"{self.spec} cannot answer {', '.join(sorted(missing))} questions "
                             f"(it answers: {', '.join(sorted(self.model.kinds))})")
        cache = ResponseCache(self.cache_path)
        try:
            found = cache.get_many([self._key(r) for r in requests])
            answers: dict[int, Answer] = {i: Answer.from_json(found[self._key(r)]["answer"])
                                          for i, r in enumerate(requests) if self._key(r) in found}
            self.cached += len(answers)
            todo = [i for i in range(len(requests)) if i not in answers]
            for arrived in self._arrivals([requests[i] for i in todo]):
                got = {todo[k]: answer for k, answer in arrived}
                answers.update(got)
                cache.put_many({self._key(requests[i]): {"answer": a.to_json(), "frames": {"n": 0}}
                                for i, a in got.items() if not a.error})
                self.asked += len(got)
        finally:
            cache.close()
        return [answers[i] for i in range(len(requests))]

    def _arrivals(self, requests: list[Request]):
        """Lists of (index, answer): as each arrives from a model that streams (a server), else
        per batch. Each list is cached before the next is asked for."""
        stream = getattr(self.model, "stream_answers", None)
        done: set[int] = set()
        if stream is not None and requests:
            try:
                for arrived in stream(requests, _no_frames):
                    done.update(k for k, _ in arrived)
                    yield [(k, self.answerer.checked(requests[k], answer)) for k, answer in arrived]
            except Exception as exc:  # the stream broke: the rest are asked in batches below
                print(f"timefoil: {self.spec} stopped streaming ({type(exc).__name__}: {redact(str(exc))}); "
                      "asking the rest in batches", file=sys.stderr)
        rest = [k for k in range(len(requests)) if k not in done]
        size = max(1, self.model.batch_size)
        for start in range(0, len(rest), size):
            chunk = rest[start:start + size]
            yield list(zip(chunk, self._answer([requests[k] for k in chunk])))

    def _answer(self, requests: list[Request]) -> list[Answer]:
        """Checked as a run checks them (one Answer per request, finite numbers, what the kind
        is read from); a failing batch is asked again request by request, failures recorded."""
        return self.answerer.ask(requests)


def _no_frames(video, sampling):
    raise RuntimeError("a text-only question has no video")
