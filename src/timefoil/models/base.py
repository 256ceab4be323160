"""The model interface: one method per request kind; a model never sees a benchmark."""
from __future__ import annotations

from typing import Any, Callable, Sequence

from ..core.hashing import stored_form
from ..core.items import VideoRef
from .checks import answer_problem, check_reply
from .requests import Answer, Request
from ..video.frames import Frames
from ..video.sampling import Sampling

FrameSource = Callable[[VideoRef, Sampling], Frames]
METHOD_PREFIX = "answer_"  # answer_similarity, answer_entailment, answer_choice, answer_generation, ...


class Model:
    """Subclasses set ``name`` and implement ``answer_<kind>(requests, frames)`` for each
    request kind they can answer; ``kinds`` lists those methods.

    Each method gets requests of its kind, grouped so that requests sharing a video are
    adjacent, and a frame source backed by the run's decode-once cache. It returns one
    Answer per request, in order; an exception fails the batch, and the runner then retries
    the requests one by one so that only the culprit is recorded as an error.

    A model that answers requests independently as they come back (a server) may also define
    ``stream_answers(requests, frames)``: an iterator of lists of (index, Answer), each list
    what arrived since the last. The runner then hands it every pending request at once and
    records each answer as it arrives; if the stream breaks, the rest go through the batch path."""

    name: str = "model"
    batch_size: int = 32
    # Whether decoded frames are worth keeping on disk for later runs. A served model sends
    # encoded images, and its identical reruns come from the response cache: writing raw frames
    # cost about 8% of a cold served run's CPU (bench/api_throughput.py) for reads that never came.
    stores_frames: bool = True
    # Whether the next batch's videos should decode on the host while this batch is answered: a
    # model on a GPU leaves the host idle while it computes; on the CPU the cores are its own.
    decodes_ahead: bool = False
    # Whether every request of a video should come in one call, however many: a model that runs
    # a video's prefix once and chunks its prompts itself would otherwise run the prefix (the
    # vision tower and the video's tokens) again for each batch of one video's prompts.
    whole_videos: bool = False

    @property
    def kinds(self) -> frozenset[str]:
        return kinds_of(type(self))

    # How a model from outside timefoil (a plugin, a registered loader) was asked for: its spec
    # and options, set by load_model. Its own fingerprint may leave out what tells two of its
    # models apart (the default names only the class's name), so these enter its key too.
    loaded_as: dict[str, Any] | None = None

    def fingerprint(self) -> dict:
        """Everything that changes answers: enters every cache key."""
        return {"name": self.name}

    @property
    def notes(self) -> dict:
        """What the model learned while answering that a reader of the run should see (the
        runner writes it into run.json), e.g. a check of its inputs against a reference."""
        return {}

    def answer(self, requests: Sequence[Request], frames: FrameSource) -> list[Answer]:
        """Requests of any kinds, each kind sent to its method in one call, order kept."""
        by_kind: dict[str, list[int]] = {}
        for i, request in enumerate(requests):
            by_kind.setdefault(request.kind, []).append(i)
        out: list[Answer | None] = [None] * len(requests)
        for kind, indices in by_kind.items():
            method = getattr(self, METHOD_PREFIX + kind, None)
            if method is None:
                raise TypeError(f"{self.name} cannot answer {kind} requests")
            answers = check_reply(method([requests[i] for i in indices], frames), len(indices),
                                  f"{self.name}.{METHOD_PREFIX}{kind}")
            for i, answer in zip(indices, answers):
                out[i] = answer
        return out  # type: ignore[return-value]


def kinds_of(model_class: type) -> frozenset[str]:
    """The request kinds a model class answers: its ``answer_<kind>`` methods."""
    return frozenset(attr[len(METHOD_PREFIX):] for attr in dir(model_class)
                     if attr.startswith(METHOD_PREFIX) and callable(getattr(model_class, attr)))


def fingerprint_of(model: Any) -> dict:
    """What keys a model's answers and is matched when a run resumes: its fingerprint, with how
    it was loaded where timefoil did not write it, in the form run.json stores it."""
    loaded_as = getattr(model, "loaded_as", None)
    return stored_form({**model.fingerprint(), **({"loaded_as": loaded_as} if loaded_as else {})})


def ranks_of(scores: Sequence[float | None], asked: Sequence[int]) -> list[int | None]:
    """1 + how many other candidates score at least as high (ties lose); None without a score."""
    out = []
    for i in asked:
        own = scores[i]
        out.append(None if own is None else
                   1 + sum(1 for j, s in enumerate(scores) if j != i and s is not None and s >= own))
    return out


class RanksBySimilarity:
    """``answer_rank`` for a model that scores (video, text) pairs: every candidate is scored
    with ``answer_similarity`` and the asked candidates' ranks are reported. Adapters with
    embeddings override it with one matrix product."""

    def answer_rank(self, requests: Sequence[Request], frames: FrameSource) -> list[Answer]:
        answers = []
        for request in requests:
            pairs = [Request("similarity", request.video, text, request.sampling) for text in request.option_texts]
            method = f"{getattr(self, 'name', 'model')}.answer_similarity"
            scored = check_reply(self.answer_similarity(pairs, frames), len(pairs), method)  # type: ignore[attr-defined]
            # a rank read from a NaN or a missing score would be a silent wrong number
            problems = [f"model error: {method} returned {problem}"
                        for problem in map(answer_problem, scored, pairs) if problem]
            errors = problems or [a.error for a in scored if a.error]
            if errors:
                answers.append(Answer(error=errors[0]))
                continue
            answers.append(Answer(meta={"ranks": ranks_of([a.score for a in scored], request.ask),
                                        "candidates": len(request.option_texts)}))
        return answers
