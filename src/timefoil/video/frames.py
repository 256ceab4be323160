"""Decode each (video content, sampling) once: a memory LRU in front of an on-disk cache.

A FrameStore may be shared by threads (a served model decodes in its workers while the runner
reads frame facts): the memory cache is locked, and two threads asking for one sample wait for
a single decode of it."""
from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field, replace

import numpy as np

from ..core.hashing import file_hash, stable_hash
from ..core.items import VideoRef
from ..core.once import OnceEach
from .decode import VideoError, VideoUndecodable, decode_frames, frame_pixel_budget, probe
from .diskcache import FrameDiskCache
from .sampling import FramePlan, PartInfo, Sampling, ablation_order, plan_frames, rate_frame_count, window_frames


@dataclass
class Frames:
    """What a model is shown: frames in display order and where they came from."""

    array: np.ndarray  # uint8 [n, height, width, 3]
    entries: tuple  # (part, index) or None (black) per frame, after ablations
    degenerate: bool = False
    times: tuple = ()  # seconds from the start of the shown timeline, per frame, after ablations
    sampled_fps: float | None = None  # the rate of the sampling (frames per second of timeline)
    rate_guessed: bool = False  # a source without timestamps: its frame rate, so the times, are guesses
    rotations: tuple = ()  # per source: degrees its frames were turned to be shown upright (display matrix)
    decoded: tuple = ()  # per source: how its frames were decoded (seek or not, frames skipped or not)


@dataclass
class FrameStats:
    decodes: int = 0
    memory_hits: int = 0
    disk_hits: int = 0


def content_key(ref: VideoRef) -> dict:
    """Identity of what a reference shows: file bytes, window and gap."""
    if ref.is_concat:
        return {"parts": [content_key(p) for p in ref.parts], "gap": ref.gap}
    try:
        digest = file_hash(ref.path)
    except FileNotFoundError:
        digest = f"missing:{ref.path}"
    except OSError:  # a directory, FIFO, device or unreadable file: decoding says why, as that item's error
        digest = f"unreadable:{ref.path}"
    return {"sha": digest, "start": ref.start, "end": ref.end}


# Part of every frame cache key (and so of every response cache key): 2 since frames are turned
# upright by their display matrix (entries written before hold rotated videos sideways); 3 since
# AV1 decodes every frame, Matroska's millisecond stamps and AVI's B-frame delay are read right
# (entries written before may hold the frame before the one wanted).
FRAMES_FORMAT = 3


def _resize_nearest(array: np.ndarray, height: int, width: int) -> np.ndarray:
    rows = (np.arange(height) * array.shape[0] / height).astype(int)
    cols = (np.arange(width) * array.shape[1] / width).astype(int)
    return array[:, rows][:, :, cols]


@dataclass
class FrameStore:
    cache_dir: str | None = None
    memory_bytes: int = 512 * 1024 * 1024
    max_pixels: int | None = None  # per frame; None: TIMEFOIL_MAX_FRAME_PIXELS or its default, read once here
    store: bool = True  # False: entries on disk are read, decoded frames are not written
    stats: FrameStats = field(default_factory=FrameStats)
    _memory: OrderedDict = field(default_factory=OrderedDict)
    _used: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _decoding: OnceEach = field(default_factory=OnceEach, repr=False)

    def __post_init__(self) -> None:
        self.disk = FrameDiskCache(self.cache_dir) if self.cache_dir else None
        if self.max_pixels is None:  # a malformed value stops the run at its start, not at each video
            self.max_pixels = frame_pixel_budget()

    def get(self, ref: VideoRef, sampling: Sampling) -> Frames:
        key = stable_hash({"video": content_key(ref), "sampling": sampling.decode_key(), "format": FRAMES_FORMAT}, 32)
        sample = self._load(key, sampling)
        if sample is None:  # looked up again inside: another thread may have just decoded it
            sample = self._decoding.run(key, lambda: self._load(key, sampling)
                                        or self._save(key, self._decode(ref, sampling)))
        order = ablation_order(len(sample.entries), sampling, ref.key())
        return replace(sample, array=sample.array[order], entries=tuple(sample.entries[i] for i in order),
                       times=tuple(sample.times[i] for i in order))

    # -- caching -------------------------------------------------------------------------
    def _load(self, key: str, sampling: Sampling) -> Frames | None:
        with self._lock:
            if key in self._memory:
                self._memory.move_to_end(key)
                self.stats.memory_hits += 1
                return self._memory[key]
        stored = self.disk.load(key) if self.disk else None
        if stored is None:
            return None
        try:
            sample = _sample_from(*stored, sampling)
        except (ValueError, KeyError, TypeError) as exc:  # checksummed, yet not a sample: written wrong
            self.disk.discard(key, str(exc))
            return None
        with self._lock:
            self.stats.disk_hits += 1
        self._remember(key, sample)
        return sample

    def _save(self, key: str, sample: Frames) -> Frames:
        self._remember(key, sample)
        if self.disk and self.store:
            encoded = np.array([(-1, -1) if e is None else e for e in sample.entries], dtype=np.int64).reshape(-1, 2)
            self.disk.save(key, {"array": sample.array, "entries": encoded,
                                 "times": np.asarray(sample.times, dtype=np.float64)},
                           {"degenerate": sample.degenerate, "rate": sample.sampled_fps,
                            "rate_guessed": sample.rate_guessed, "rotations": list(sample.rotations),
                            "decoded": list(sample.decoded)})
        return sample

    def _remember(self, key: str, sample: Frames) -> None:
        with self._lock:
            self._used += sample.array.nbytes - (self._memory[key].array.nbytes if key in self._memory else 0)
            self._memory[key] = sample
            while self._used > self.memory_bytes and len(self._memory) > 1:
                _, old = self._memory.popitem(last=False)
                self._used -= old.array.nbytes

    # -- decoding ------------------------------------------------------------------------
    def _decode(self, ref: VideoRef, sampling: Sampling):
        with self._lock:
            self.stats.decodes += 1
        sources = ref.parts if ref.is_concat else (ref,)
        infos, parts = [], []
        for source in sources:
            info = probe(source.path, self.max_pixels)
            first, stop = window_frames(info.n_frames, info.fps, source.start, source.end)
            if stop <= first:
                raise VideoUndecodable(source.path, f"window [{source.start}, {source.end}] s holds no frame")
            infos.append(info)
            parts.append(PartInfo(info.fps, first, stop))
        plan: FramePlan = plan_frames(parts, sampling, ref.gap)
        if not plan.entries:
            raise VideoError(ref.key(), "sampling selects no frame")
        if sampling.resize:
            width, height = sampling.resize
        else:
            width, height = infos[0].width, infos[0].height
        per_part: dict[int, dict[int, np.ndarray]] = {}
        decoded = []
        for p, source in enumerate(sources):
            wanted = sorted({e[1] for e in plan.entries if e is not None and e[0] == p})
            if wanted:
                frames, how = decode_frames(source.path, wanted, sampling.resize, self.max_pixels,
                                            origin=infos[p].first_pts)
                if frames.shape[1:3] != (height, width):
                    frames = _resize_nearest(frames, height, width)
                per_part[p] = dict(zip(wanted, frames))
                decoded.append(how)
        black = np.zeros((height, width, 3), np.uint8)
        array = np.stack([black if e is None else per_part[e[0]][e[1]] for e in plan.entries])
        times, rate = frame_times(plan.entries, parts, sampling, ref.gap)
        return Frames(array, tuple(plan.entries), plan.degenerate, tuple(times), rate,
                      any(i.rate_guessed for i in infos), tuple(i.rotation for i in infos), tuple(decoded))


def frame_times(entries, parts, sampling: Sampling, gap: float = 0.0) -> tuple[list[float], float]:
    """Each planned frame's time in seconds on the shown timeline (clip, black gap, clip), and
    the sampling rate: the asked fps when every asked frame was kept, else frames per second
    of timeline. A black frame sits in the middle of the gap."""
    durations = [part.length / part.fps for part in parts]
    offsets = [0.0] + ([durations[0] + gap] if len(parts) > 1 else [])
    span = sum(durations) + (gap if len(parts) > 1 else 0.0)
    times = [durations[0] + gap / 2 if e is None else offsets[e[0]] + (e[1] - parts[e[0]].first) / parts[e[0]].fps
             for e in entries]
    capped = sampling.fps is not None and sampling.max_frames is not None and len(entries) >= sampling.max_frames
    rate = sampling.fps if sampling.fps is not None and not capped else len(entries) / max(span, 1e-9)
    return times, float(rate)


def frames_asked(frames: Frames, sampling: Sampling) -> int | None:
    """The frames an fps sampling asked for where its ``max_frames`` cap showed fewer (so
    unevenly spaced, at a lower rate), else None. Read from the rate ``frame_times`` reports
    for a capped plan (frames shown / seconds of timeline), so frames cached before this
    question was asked answer it too."""
    shown = len(frames.entries)
    if (sampling.fps is None or sampling.max_frames is None or shown < sampling.max_frames
            or not frames.sampled_fps):
        return None
    asked = rate_frame_count(shown / frames.sampled_fps, sampling.fps, sampling.strategy)
    return asked if asked > shown else None


def _sample_from(arrays: dict[str, np.ndarray], facts: dict, sampling: Sampling) -> Frames:
    """A sample read back from the disk cache, checked against what a decode makes: RGB uint8
    frames, one plan entry and one time per frame, at the sampling's size where it sets one."""
    array, entries, times = arrays["array"], arrays["entries"], arrays["times"]
    if array.dtype != np.uint8 or array.ndim != 4 or array.shape[3] != 3 or not array.shape[0]:
        raise ValueError(f"frames of dtype {array.dtype} and shape {array.shape}, not uint8 [n, h, w, 3]")
    n = array.shape[0]
    if entries.shape != (n, 2) or times.shape != (n,):
        raise ValueError(f"{n} frames with {len(entries)} plan entries and {len(times)} times")
    if sampling.resize and array.shape[1:3] != tuple(sampling.resize)[::-1]:
        raise ValueError(f"frames of {array.shape[2]}x{array.shape[1]}, not the sampling's {sampling.resize}")
    if not np.all(np.isfinite(times)):
        raise ValueError("frame times that are not finite")
    return Frames(array, tuple(None if int(p) < 0 else (int(p), int(i)) for p, i in entries),
                  bool(facts["degenerate"]), tuple(float(t) for t in times), float(facts["rate"]),
                  bool(facts["rate_guessed"]), tuple(int(r) for r in facts["rotations"]),
                  tuple(str(how) for how in facts["decoded"]))


__all__ = ["FrameStore", "Frames", "FrameStats", "VideoError", "content_key", "frames_asked"]
