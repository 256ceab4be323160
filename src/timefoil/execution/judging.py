"""The judge: a second model that reads answers the protocol's parser cannot. It is a step of
its own: verdicts are cached under the judge's fingerprint and the question put to it (which
holds the raw answer and the options), stored in each record beside the answer, and applied
when scoring. An answer, cached or fresh, is never altered by a judge."""
from __future__ import annotations

from typing import Any, Sequence

from ..core.hashing import stable_hash
from ..core.outside import exception_text
from ..models.base import METHOD_PREFIX, FrameSource, Model, fingerprint_of
from ..models.checks import answer_problem, check_reply
from ..protocols import Protocol
from ..models.requests import Answer, Request
from .answering import PASSED_ON
from .store import ResponseCache


class Judge:
    def __init__(self, spec: str, model: Model):
        self.spec, self.model = spec, model
        self.fingerprint = stable_hash(fingerprint_of(model))
        self.asked = 0  # questions actually put to the model (cache misses)

    def verdicts(self, protocol: Protocol, entries: Sequence[tuple[dict[str, Any], Answer]], cache: ResponseCache,
                 frames: FrameSource) -> list[dict[str, Any] | None]:
        """One verdict per (stored request, answer): None where the answer needs no judge."""
        questions = [protocol.judge_request(request, answer) for request, answer in entries]
        keys = [stable_hash(["judge", self.fingerprint, q.key()], 40) if q else None for q in questions]
        found = cache.get_many(sorted({k for k in keys if k}))
        missing = {k: q for k, q in zip(keys, questions) if k and k not in found}
        if missing:
            fresh = dict(zip(missing, self._ask(list(missing.values()), frames)))
            cache.put_many({k: v for k, v in fresh.items() if not v["error"]})  # errors are asked again later
            found.update(fresh)
        return [self._verdict(found[k]) if k else None for k in keys]

    def _ask(self, questions, frames: FrameSource) -> list[dict[str, Any]]:
        self.asked += len(questions)
        try:
            answers = check_reply(self.model.answer(questions, frames), len(questions), f"{self.model.name}.answer")
        except BaseException as exc:  # a failed judgement leaves answers unparsed, never the run broken
            if isinstance(exc, PASSED_ON):
                raise
            answers = [Answer(error=f"judge error: {exception_text(exc)}")] * len(questions)
        return [{"raw": a.raw, "error": a.error} for a in map(self._checked, questions, answers)]

    def _checked(self, question: Request, answer) -> Answer:
        """A verdict is read from the judge's text: checked as every model's answer is."""
        problem = answer_problem(answer, question)
        if problem is None:
            return answer
        return Answer(error=f"judge error: {self.model.name}.{METHOD_PREFIX}{question.kind} returned {problem}")

    def _verdict(self, stored: dict[str, Any]) -> dict[str, Any]:
        return {"model": self.spec, "fingerprint": self.fingerprint, "raw": stored["raw"], "error": stored["error"]}
