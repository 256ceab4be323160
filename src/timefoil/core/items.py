"""Typed evaluation items.

An item is one question about one or more videos: the model must single out the
``target`` among its options. Counterfactual structure is data: items that must all be
right together (a Vinoground 2x2 pair, the binary questions of one TemporalBench video,
a ViLMA main test and its proficiency test) share a ``group_id``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

OptionsAre = Literal["texts", "videos", "references"]
PROFICIENCY = "proficiency"


@dataclass(frozen=True)
class VideoRef:
    """A video file, optionally a [start, end] window in seconds, or two refs played in
    sequence with ``gap`` seconds of black between them (Vinoground's video question)."""

    path: str | None = None
    start: float | None = None
    end: float | None = None
    parts: tuple["VideoRef", ...] = ()
    gap: float = 0.0

    @staticmethod
    def file(path: str, start: float | None = None, end: float | None = None) -> "VideoRef":
        return VideoRef(path=str(path), start=start, end=end)

    @staticmethod
    def concat(first: "VideoRef", second: "VideoRef", gap: float = 2.0) -> "VideoRef":
        return VideoRef(parts=(first, second), gap=float(gap))

    @property
    def is_concat(self) -> bool:
        return bool(self.parts)

    def key(self) -> str:
        """A readable identity of the reference (not of the file's content)."""
        if self.parts:
            inner = " + ".join(p.key() for p in self.parts)
            return f"concat[{inner} | gap={self.gap:g}]"
        window = ""
        if self.start is not None or self.end is not None:
            window = f"[{self.start if self.start is not None else ''}:{self.end if self.end is not None else ''}]"
        return f"{self.path}{window}"

    def to_json(self) -> dict[str, Any]:
        if self.parts:
            return {"parts": [p.to_json() for p in self.parts], "gap": self.gap}
        return {"path": self.path, "start": self.start, "end": self.end}

    @staticmethod
    def from_json(data: dict[str, Any]) -> "VideoRef":
        if "parts" in data:
            return VideoRef(parts=tuple(VideoRef.from_json(p) for p in data["parts"]), gap=data.get("gap", 0.0))
        return VideoRef(path=data["path"], start=data.get("start"), end=data.get("end"))


@dataclass(frozen=True)
class Item:
    """One question. ``options_are`` says whether the options are the ``texts`` (one video,
    several captions) or the ``videos`` (one caption, several videos); "references" marks a
    free-generation item whose texts are reference answers."""

    id: str
    group_id: str
    benchmark: str
    test: str
    videos: tuple[VideoRef, ...]
    texts: tuple[str, ...]
    target: int = 0
    subtest: str | None = None
    role: str = "main"
    categories: tuple[str, ...] = ()
    options_are: OptionsAre = "texts"
    # How the benchmark's own files pose the question, when they do (the protocol asks it so):
    prompt: str | None = None  # the published question or instruction, used verbatim
    target_position: int | None = None  # where that question shows the target (its GT letter)
    joined_video: VideoRef | None = None  # the published file of the option videos joined
    labels: tuple[str, ...] = ()  # option labels as published; A, B, C, ... when empty
    metadata: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)

    def __post_init__(self) -> None:
        if self.options_are == "references":  # free generation scored against reference texts
            if len(self.videos) != 1 or not self.texts:
                raise ValueError(f"item {self.id}: a generation item has one video and 1+ reference texts")
            return
        n = self.n_options
        if n < 2:
            raise ValueError(f"item {self.id}: needs at least two options, has {n}")
        if not 0 <= self.target < n:
            raise ValueError(f"item {self.id}: target {self.target} outside 0..{n - 1}")
        if self.target_position is not None and not 0 <= self.target_position < n:
            raise ValueError(f"item {self.id}: target position {self.target_position} outside 0..{n - 1}")
        if self.labels and len(self.labels) != n:
            raise ValueError(f"item {self.id}: {len(self.labels)} labels for {n} options")
        other = self.texts if self.options_are == "videos" else self.videos
        if len(other) != 1:
            raise ValueError(f"item {self.id}: options are {self.options_are}, so exactly one "
                             f"{'text' if self.options_are == 'videos' else 'video'} is needed")

    @property
    def options(self) -> tuple:
        return self.videos if self.options_are == "videos" else self.texts

    @property
    def n_options(self) -> int:
        return len(self.options)

    @property
    def is_proficiency(self) -> bool:
        return self.role == PROFICIENCY

    def describe(self) -> dict[str, Any]:
        """The fields scoring needs, stored with every answer so a run rescores alone."""
        return {
            "id": self.id, "group_id": self.group_id, "benchmark": self.benchmark,
            "test": self.test, "subtest": self.subtest, "role": self.role,
            "categories": list(self.categories), "target": self.target,
            "n_options": self.n_options, "options_are": self.options_are,
            "texts": list(self.texts), "videos": [v.to_json() for v in self.videos],
            "metadata": self.metadata,
        }
