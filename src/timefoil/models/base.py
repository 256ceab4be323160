"""The model interface: answer a batch of requests of one kind; never see a benchmark."""
from __future__ import annotations

from typing import Callable, Sequence

from ..items import VideoRef
from ..requests import Answer, Request
from ..video.frames import Frames
from ..video.sampling import Sampling

FrameSource = Callable[[VideoRef, Sampling], Frames]


class Model:
    """Subclasses set ``name`` and ``kinds`` and implement ``answer``.

    ``answer`` gets requests of one kind, grouped so that requests sharing a video are
    adjacent, and a frame source backed by the run's decode-once cache. It returns one
    Answer per request, in order; an exception fails the batch, and the runner then retries
    the requests one by one so that only the culprit is recorded as an error."""

    name: str = "model"
    kinds: frozenset[str] = frozenset()
    batch_size: int = 32

    def fingerprint(self) -> dict:
        """Everything that changes answers: enters every cache key."""
        return {"name": self.name}

    @property
    def notes(self) -> dict:
        """What the model learned while answering that a reader of the run should see (the
        runner writes it into run.json), e.g. a check of its inputs against a reference."""
        return {}

    def answer(self, requests: Sequence[Request], frames: FrameSource) -> list[Answer]:
        raise NotImplementedError(f"{type(self).__name__} must implement answer()")
