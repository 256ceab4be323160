"""One model answering requests over one frame store: what every executor runs.

The one-process runner uses it directly; a Ray worker holds one per model replica. It decodes
each request's video before asking (a bad video is an error for its requests, whatever the
model), retries a failing batch request by request so only the culprit is an error, and hands a
model that streams (a server) every request at once."""
from __future__ import annotations

import sys
import time
from collections import Counter
from concurrent.futures import wait
from typing import Iterator, Sequence

from ..models.base import METHOD_PREFIX, Model
from ..models.local.placement import out_of_memory
from ..models.checks import WrongAnswers, answer_problem, check_reply
from ..core.memory import is_out_of_memory, release_memory
from ..core.outside import exception_text, terminal_line
from ..core.redaction import redact
from ..core.registry import said
from ..models.requests import Answer, Request
from .ahead import DecodeAhead
from .sharding import video_batches
from ..video.decode import VideoError
from ..video.frames import FrameStore, frames_asked

AHEAD_PER_WORKER = 2  # videos queued ahead per worker: one decoding, one ready (the frame store keeps them)
Entry = tuple[str, Answer, dict]  # (request key, answer, frame facts): one answered request before recording
# What a model raising passes on rather than failing its requests: Ctrl-C ends the run, and a
# generator closed (this module's own, when the runner stops reading it) is no model's failure.
# Anything else it raises, BaseException included (asyncio's CancelledError, sys.exit), is its
# requests' error.
PASSED_ON = (KeyboardInterrupt, GeneratorExit)


class Answerer:
    def __init__(self, model: Model, frames: FrameStore, workers: int = 1):
        """``workers``: threads that decode ahead, for a model that ``decodes_ahead``."""
        self.model, self.frames, self.workers = model, frames, workers
        self.most_busy = 0  # the most decode-ahead workers seen busy at once
        # batches that failed and were asked again one request at a time: their sizes, and by exception
        self.fallen: list[int] = []
        self.fallen_by: Counter[str] = Counter()
        self.first_said: dict[str, str] = {}

    def frame_info(self, request: Request) -> tuple[dict, str | None]:
        """Decode (once, cached) before asking, so every model sees exactly the same frames."""
        if request.video is None:
            return {"n": 0, "blind": True}, None
        try:
            frames = self.frames.get(request.video, request.sampling)
        except VideoError as exc:
            return {}, str(exc)
        info = {"n": int(frames.array.shape[0]), "degenerate": frames.degenerate}
        asked = frames_asked(frames, request.sampling)
        if asked:  # the cap changed the sampling: fewer frames than the rate asks, unevenly spaced
            info["capped"] = {"asked": asked, "max_frames": request.sampling.max_frames}
        if frames.rate_guessed:  # said in the record, never silently assumed
            info["rate_guessed"] = True
        if frames.decoded:  # which path decoded it (seek, skipped frames): per video of a pair
            info["decoded"] = frames.decoded[0] if len(frames.decoded) == 1 else list(frames.decoded)
        if any(frames.rotations):  # shown upright: turned by this many degrees (per video of a pair)
            info["rotation"] = frames.rotations[0] if len(frames.rotations) == 1 else list(frames.rotations)
        return info, None

    def ask(self, requests: list[Request]) -> list[Answer]:
        """One checked answer per request; never raises. A batch that fails is asked again one
        request at a time, so only the culprit is an error (a batch of one is that already).
        Each such fallback is said in one line and counted (run.json's ``batch_fallbacks``):
        right answers at one request's cost each are never silent."""
        if len(requests) == 1:
            return [self._ask_one(requests[0])]
        try:
            return self._asked(requests)
        except BaseException as exc:  # a model calling sys.exit fails its requests, not the run
            if isinstance(exc, PASSED_ON):
                raise
            self._fell_back(exc, len(requests))
        # Asked again only once out of the except block: until then its traceback holds the failed
        # forward's frames, and with them its activations (after an out-of-memory, the next OOM)
        release_memory()
        return [self._ask_one(r) for r in requests]

    def _fell_back(self, exc: BaseException, size: int) -> None:
        """The failed batch counted by its exception (the first message of each kind kept) and
        said in one line on stderr."""
        kind = type(exc).__name__
        message = terminal_line(redact(exception_text(exc).removeprefix(kind).removeprefix(": ")), 200)
        self.fallen.append(size)
        self.fallen_by[kind] += 1
        self.first_said.setdefault(kind, message)
        if is_out_of_memory(exc):
            ran = (getattr(self.model, "notes", None) or {}).get("ran_on") or {}
            said = out_of_memory(f"in a batch of {size}", device=ran.get("device", "?"),
                                 device_map=ran.get("device_map"), dtype=ran.get("dtype", "?"),
                                 batch_size=getattr(self.model, "batch_size", size))
        else:
            said = f"a batch of {size} failed ({kind}: {message})"
        print(redact(f"timefoil: {self.model.name}: {said}; asking its {size} requests one at a time "
                     f"(fallback {len(self.fallen)}, counted in run.json)"), file=sys.stderr)

    @property
    def fallback_counts(self) -> dict:
        """What run.json records: batches asked again one request at a time, their requests, how
        many each exception failed and its first message (nothing when no batch failed)."""
        if not self.fallen:
            return {}
        return {"batches": len(self.fallen), "requests": sum(self.fallen),
                "exceptions": dict(sorted(self.fallen_by.items())), "messages": dict(sorted(self.first_said.items()))}

    def _asked(self, requests: list[Request]) -> list[Answer]:
        start = time.perf_counter()
        answers = check_reply(self.model.answer(requests, self.frames.get), len(requests), f"{self.model.name}.answer")
        elapsed = (time.perf_counter() - start) / len(requests)
        answers = [self.checked(request, answer) for request, answer in zip(requests, answers)]
        for answer in answers:
            answer.latency = answer.latency or elapsed
        return answers

    def checked(self, request: Request, answer) -> Answer:
        """The answer, or the error saying what is wrong with it: every answer passes here."""
        return checked(self.model, request, answer)

    def _ask_one(self, request: Request) -> Answer:
        full = False
        try:
            return self._asked([request])[0]
        except WrongAnswers as exc:  # says itself what was wrong and whose reply it was
            error = f"model error: {exc}"
        except SystemExit as exc:
            error = f"model error: {self.model.name} exited while answering ({said(exc)})"
        except BaseException as exc:  # asyncio's CancelledError, a plugin's own BaseException: this request's
            if isinstance(exc, PASSED_ON):
                raise
            error, full = f"model error: {exception_text(exc)}", is_out_of_memory(exc)
        if full:  # released out of the except block: the next request does not start beside this one's leftovers
            release_memory()
        return Answer(error=redact(error))

    def answer_batch(self, requests: Sequence[Request]) -> list[tuple[Answer, dict]]:
        """(answer, frame facts) per request, in order; never raises for a model or video error."""
        info = [self.frame_info(r) for r in requests]
        askable = [i for i, (_, error) in enumerate(info) if error is None]
        answers = dict(zip(askable, self.ask([requests[i] for i in askable]))) if askable else {}
        return [(Answer(error=error) if error else answers[i], facts) for i, (facts, error) in enumerate(info)]

    def entries(self, keys: list[str], requests: dict[str, Request]) -> Iterator[list[Entry]]:
        """(key, answer, frame facts) in groups, each group recorded as soon as it is yielded.
        A model that streams gets every request at once and its answers are recorded as they
        arrive; the others answer in batches of their ``batch_size`` that never split a video
        unless it alone fills more than one."""
        stream = getattr(self.model, "stream_answers", None)
        answered: set[str] = set()
        if stream is not None and keys:
            try:
                for arrived in stream([requests[k] for k in keys], self.frames.get):
                    # The model decoded as it prepared each request, so the frame facts come from
                    # memory; a video that cannot be decoded is that video's error, as below.
                    entries = [self._entry(keys[index], requests[keys[index]], answer) for index, answer in arrived]
                    answered.update(key for key, _, _ in entries)
                    yield entries
            except BaseException as exc:  # the stream itself broke: the rest go through the batch path
                if isinstance(exc, PASSED_ON):
                    raise
                print(f"timefoil: {self.model.name} stopped streaming ({terminal_line(redact(exception_text(exc)))}); "
                      "asking the remaining requests in batches", file=sys.stderr)
        rest = [k for k in keys if k not in answered]
        batches = [batch for bundle in video_batches(rest, requests, self.model.batch_size,
                                                     whole_videos=getattr(self.model, "whole_videos", False))
                   for batch in bundle]
        if not getattr(self.model, "decodes_ahead", False):  # any object may answer
            for batch in batches:
                yield self._answered(batch, requests)
            return
        # the coming batches' videos decode (and their inputs are made) on the workers while the
        # device answers this batch: the batch waits only for its own videos, then answers in order
        calls, needs = video_calls(batches, requests)
        depth = AHEAD_PER_WORKER * self.workers  # videos made ready beyond those of the batch answered
        with DecodeAhead(self.workers) as ahead:  # never waited for after a Ctrl-C
            made: list = []
            reached = 0  # calls the batches so far need: the first ``reached``
            for n, batch in enumerate(batches):
                reached = max([reached] + [i + 1 for i in needs[n]])
                while len(made) < min(len(calls), reached + depth):
                    made.append(ahead.submit(self.decode_ahead, [requests[k] for k in calls[len(made)]]))
                wait([made[i] for i in needs[n]])  # this batch's videos and inputs, made ahead: taken as made
                self.most_busy = ahead.most_busy
                yield self._answered(batch, requests)
        finish = getattr(self.model, "finish_ahead", None)  # a normal end: what the model did aside, finished
        if finish is not None:
            finish()

    def _answered(self, batch: list[str], requests: dict[str, Request]) -> list[Entry]:
        answered = self.answer_batch([requests[k] for k in batch])
        return [(key, answer, facts) for key, (answer, facts) in zip(batch, answered)]

    def decode_ahead(self, requests: list[Request]) -> None:
        """Each video of ``requests`` decoded into the frame store, and the model's inputs for
        them made where it makes them ahead (``prepare_ahead``); a bad video, or a failure to
        prepare, is left for the batch that asks it to record."""
        decoded = [request for request in requests if self.frame_info(request)[1] is None]
        prepare = getattr(self.model, "prepare_ahead", None)
        if prepare is not None and decoded:
            try:
                prepare(decoded, self.frames.get)
            except Exception:  # noqa: BLE001 - the batch asking these requests meets it again and records it
                pass

    def _entry(self, key: str, request: Request, answer: Answer) -> Entry:
        frames, video_error = self.frame_info(request)
        return key, Answer(error=video_error) if video_error else self.checked(request, answer), frames


def video_calls(batches: list[list[str]], requests: dict[str, Request]) -> tuple[list[list[str]], list[list[int]]]:
    """The decode-ahead calls for ``batches``: one a video (and sampling), with its requests in
    order of first appearance (a video split over consecutive batches is one call, so no worker
    waits on another's decode of it), and the calls each batch needs. Requests without a video
    need none."""
    calls: list[list[str]] = []
    needs: list[list[int]] = []
    latest: dict[tuple, int] = {}  # a video's call, while the batches show it one after another
    for batch in batches:
        needs.append([])
        for key in batch:
            request = requests[key]
            if request.video is None:
                continue
            video = (request.video.key(), str(request.sampling))
            index = latest.get(video)
            if index is None or (index not in needs[-1] and (len(needs) < 2 or index not in needs[-2])):
                index = latest[video] = len(calls)
                calls.append([])
            calls[index].append(key)
            if index not in needs[-1]:
                needs[-1].append(index)
    return calls, needs


def checked(model: Model, request: Request, answer) -> Answer:
    """``answer`` if it is a valid reply to ``request``, else the model error saying what is wrong."""
    problem = answer_problem(answer, request)
    if problem is None:
        return answer
    return Answer(error=redact(f"model error: {model.name}.{METHOD_PREFIX}{request.kind} returned {problem}"))
