"""Which frames to show a model: pure index arithmetic, no decoding.

A ``Sampling`` is part of a run's configuration and of every cache key. ``plan_frames``
turns it into a list of (part, frame index) entries, ``None`` standing for a black frame.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass, replace
from typing import Literal, Sequence

Strategy = Literal["mid", "endpoints"]
FrameOrder = Literal["natural", "shuffled", "reversed"]
Entry = tuple[int, int] | None  # (part index, frame index) or a black frame
MAX_FPS = 1000.0  # beyond any video's own rate: a bound on what a sampling can ask of a decoder
DEFAULT_MAX_FRAMES = 64


@dataclass(frozen=True)
class Sampling:
    """``frames`` uniform frames, or ``fps`` frames per second (at most ``max_frames``; None:
    every frame the rate asks for, 80 for a 10 s clip at 8 fps).

    ``mid`` takes the middle of each interval (VELOCITI's mid-second frames), ``endpoints``
    includes the first and last frame. ``order`` and ``single_frame`` are the
    temporal-sensitivity ablations; they reorder or drop decoded frames and never change
    what is decoded."""

    frames: int | None = 8
    fps: float | None = None
    max_frames: int | None = DEFAULT_MAX_FRAMES
    strategy: Strategy = "mid"
    resize: tuple[int, int] | None = None  # (width, height)
    order: FrameOrder = "natural"
    single_frame: bool = False
    seed: int = 0

    def __post_init__(self) -> None:
        if (self.frames is None) == (self.fps is None):
            raise ValueError("give exactly one of frames or fps")
        if self.frames is not None and self.frames < 1:
            raise ValueError("frames must be at least 1")
        if self.fps is not None and not (0 < self.fps <= MAX_FPS):  # also NaN and inf
            raise ValueError(f"fps must be a positive number up to {MAX_FPS:g}, got {self.fps}")
        if self.max_frames is not None and self.max_frames < 1:
            raise ValueError("max_frames must be at least 1")
        if self.frames is not None and self.max_frames is not None and self.frames > self.max_frames:
            raise ValueError(f"{self.frames} frames is more than max_frames ({self.max_frames}); raise max_frames "
                             "(--max-frames) to show that many")
        if self.strategy not in ("mid", "endpoints"):
            raise ValueError(f"unknown strategy {self.strategy!r}")
        if self.order not in ("natural", "shuffled", "reversed"):
            raise ValueError(f"unknown frame order {self.order!r}")

    def decode_key(self) -> dict:
        """The fields that change which pixels are decoded (ablations excluded)."""
        return {"frames": self.frames, "fps": self.fps, "max_frames": self.max_frames,
                "strategy": self.strategy, "resize": list(self.resize) if self.resize else None}

    def to_json(self) -> dict:
        # every field by name, without asdict's deep copy: every request's cache key reads this
        return {"frames": self.frames, "fps": self.fps, "max_frames": self.max_frames, "strategy": self.strategy,
                "resize": list(self.resize) if self.resize else None, "order": self.order,
                "single_frame": self.single_frame, "seed": self.seed}

    @staticmethod
    def from_json(data: dict) -> "Sampling":
        data = dict(data)
        if data.get("resize"):
            data["resize"] = tuple(data["resize"])
        return Sampling(**data)

    @staticmethod
    def from_flags(base: "Sampling", counts: Sequence[int] = (), fps: float | None = None,
                   **flags) -> "list[Sampling | None]":
        """The samplings a command line asks for: one per frame count in ``counts`` (a sweep), or
        ``fps``; only the flags given (not None) change the benchmark's own ``base`` (VELOCITI: 1
        fps). [None] when nothing is given: the run keeps its benchmark's default."""
        if counts and fps is not None:
            raise ValueError("give --frames or --fps, not both")
        given = {k: v for k, v in flags.items() if v is not None}
        if fps is not None:  # the rate asked for, on every clip, unless max_frames caps it
            given.update(fps=fps, frames=None, max_frames=flags.get("max_frames"))
        changes = [dict(given, frames=n, fps=None) for n in counts] or ([given] if given else [None])
        return [replace(base, **change) if change is not None else None for change in changes]

    def label(self) -> str:
        base = f"{self.frames}f" if self.frames is not None else f"{self.fps:g}fps"
        if self.single_frame:
            base += "-single"
        if self.order != "natural":
            base += f"-{self.order}"
        return base


@dataclass(frozen=True)
class PartInfo:
    """What the decoder knows of one source: frame rate and the frame range of the window."""

    fps: float
    first: int
    stop: int  # exclusive

    @property
    def length(self) -> int:
        return self.stop - self.first


def window_frames(n_frames: int, fps: float, start: float | None, end: float | None) -> tuple[int, int]:
    """Frames i with start <= i / fps < end, clipped to the video."""
    eps = 1e-9
    first = 0 if start is None else max(0, math.ceil(start * fps - eps))
    stop = n_frames if end is None else min(n_frames, math.ceil(end * fps - eps))
    return first, stop


def uniform_positions(length: int, count: int, strategy: Strategy) -> list[int]:
    """``count`` positions in range(length)."""
    if length <= 0 or count <= 0:
        return []
    if strategy == "mid":
        return [math.floor((k + 0.5) * length / count) for k in range(count)]
    if count == 1:
        return [(length - 1) // 2]
    return [round(k * (length - 1) / (count - 1)) for k in range(count)]


def _cap(entries: list[Entry], max_frames: int | None, strategy: Strategy) -> list[Entry]:
    if max_frames is None or len(entries) <= max_frames:
        return entries
    return [entries[p] for p in uniform_positions(len(entries), max_frames, strategy)]


def _rate_positions(duration: float, rate: float, strategy: Strategy) -> list[float]:
    """Times in [0, duration) at ``rate`` per second (mid-interval or from 0)."""
    offset = 0.5 if strategy == "mid" else 0.0
    times, k = [], 0
    while (t := (k + offset) / rate) < duration - 1e-9:
        times.append(t)
        k += 1
    return times


def rate_frame_count(duration: float, rate: float, strategy: Strategy) -> int:
    """How many frames ``rate`` per second asks for on ``duration`` seconds, before any cap."""
    return len(_rate_positions(duration, rate, strategy))


@dataclass(frozen=True)
class FramePlan:
    entries: tuple[Entry, ...]
    degenerate: bool = False  # a concatenation too short to show both clips


def plan_frames(parts: Sequence[PartInfo], sampling: Sampling, gap: float = 0.0) -> FramePlan:
    """Plan the frames of one source, or of two sources with ``gap`` seconds of black."""
    if len(parts) == 1:
        part = parts[0]
        if sampling.frames is not None:
            entries = [(0, part.first + p) for p in uniform_positions(part.length, sampling.frames, sampling.strategy)]
        else:
            times = _rate_positions(part.length / part.fps, sampling.fps, sampling.strategy)
            entries = [(0, part.first + min(part.length - 1, math.floor(t * part.fps + 1e-9))) for t in times]
            entries = _cap(entries, sampling.max_frames, sampling.strategy)
        return FramePlan(tuple(entries))
    if len(parts) != 2:
        raise ValueError("concatenation joins exactly two videos")
    if sampling.frames is not None:
        # N frames: (N - 1) // 2 from each clip and the rest black, so at least one is black.
        per_clip = (sampling.frames - 1) // 2
        black = sampling.frames - 2 * per_clip
        entries: list[Entry] = []
        entries += [(0, parts[0].first + p) for p in uniform_positions(parts[0].length, per_clip, sampling.strategy)]
        entries += [None] * black
        entries += [(1, parts[1].first + p) for p in uniform_positions(parts[1].length, per_clip, sampling.strategy)]
        return FramePlan(tuple(entries), degenerate=per_clip < 1)
    # fps: sample the joined timeline; times that fall in the gap are black frames.
    d0, d1 = parts[0].length / parts[0].fps, parts[1].length / parts[1].fps
    entries = []
    for t in _rate_positions(d0 + gap + d1, sampling.fps, sampling.strategy):
        if t < d0:
            entries.append((0, parts[0].first + min(parts[0].length - 1, math.floor(t * parts[0].fps + 1e-9))))
        elif t < d0 + gap:
            entries.append(None)
        else:
            t1 = t - d0 - gap
            entries.append((1, parts[1].first + min(parts[1].length - 1, math.floor(t1 * parts[1].fps + 1e-9))))
    entries = _cap(entries, sampling.max_frames, sampling.strategy)
    shown = {e[0] for e in entries if e is not None}
    return FramePlan(tuple(entries), degenerate=shown != {0, 1} or None not in entries)


def ablation_order(count: int, sampling: Sampling, video_key: str) -> list[int]:
    """Positions of decoded frames to show, after the shuffle/reverse/single-frame ablations.
    Randomness is seeded by the run seed and the video, so reruns see the same frames."""
    positions = list(range(count))
    rng = random.Random(f"{sampling.seed}:{video_key}")
    if sampling.single_frame and positions:
        positions = [rng.choice(positions)]
    if sampling.order == "reversed":
        positions.reverse()
    elif sampling.order == "shuffled":
        rng.shuffle(positions)
    return positions
