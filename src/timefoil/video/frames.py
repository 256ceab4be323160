"""Decode each (video content, sampling) once: a memory LRU in front of an on-disk cache.

A FrameStore may be shared by threads (a served model decodes in its workers while the runner
reads frame facts): the memory cache is locked, and two threads asking for one sample wait for
a single decode of it."""
from __future__ import annotations

import math
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
    times: tuple = ()  # seconds from the window's first frame (of the shown timeline), per frame, after ablations
    sampled_fps: float | None = None  # the rate of the sampling (frames per second of timeline)
    rate_guessed: bool = False  # a source without timestamps: its frame rate, so the times, are guesses
    rotations: tuple = ()  # per source: degrees its frames were turned to be shown upright (display matrix)
    decoded: tuple = ()  # per source: how its frames were decoded (seek or not, frames skipped or not)
    # per source: (its frame rate, the window's first frame index, the index past its last, the
    # file's frame count); a frame of index i was taken i / rate seconds into the file and
    # (i - first) / rate into the window. Empty for frames that come from no file (``frames_of``)
    windows: tuple = ()


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
ROTATIONS = (0, 90, 180, -90)  # how a display matrix turns frames, as probe reports it


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
        sources = len(ref.parts) if ref.is_concat else 1
        sample = self._load(key, sampling, sources)
        if sample is None:  # looked up again inside: another thread may have just decoded it
            sample = self._decoding.run(key, lambda: self._load(key, sampling, sources)
                                        or self._save(key, self._decode(ref, sampling)))
        order = ablation_order(len(sample.entries), sampling, ref.key())
        if order == list(range(len(sample.entries))):  # frames as stored: the same array, never written to
            sample.array.flags.writeable = False
            return sample
        return replace(sample, array=sample.array[order], entries=tuple(sample.entries[i] for i in order),
                       times=tuple(sample.times[i] for i in order))

    # -- caching -------------------------------------------------------------------------
    def _load(self, key: str, sampling: Sampling, sources: int) -> Frames | None:
        with self._lock:
            if key in self._memory:
                self._memory.move_to_end(key)
                self.stats.memory_hits += 1
                return self._memory[key]
        stored = self.disk.load(key, lambda layout: _check_layout(layout, sampling, self.max_pixels)) \
            if self.disk else None
        if stored is None or "windows" not in stored[1]:
            # an entry written before frames carried their windows: its times cannot be counted from
            # the file, so it is a miss, decoded again and stored over
            return None
        try:
            sample = _sample_from(*stored, sampling, sources)
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
                            "decoded": list(sample.decoded), "windows": [list(w) for w in sample.windows]})
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
        windows = tuple((part.fps, part.first, part.stop, info.n_frames) for part, info in zip(parts, infos))
        return Frames(array, tuple(plan.entries), plan.degenerate, tuple(times), rate,
                      any(i.rate_guessed for i in infos), tuple(i.rotation for i in infos), tuple(decoded), windows)


def frame_times(entries, parts, sampling: Sampling, gap: float = 0.0) -> tuple[list[float], float]:
    """Each planned frame's time in seconds on the shown timeline (clip, black gap, clip), and
    the sampling rate: the asked fps when every asked frame was kept, else frames per second
    of timeline. A clip's time counts from its window's first frame, the first at or after the
    window's start (frame i of a window from frame ``first`` at ``fps``: (i - first) / fps, as a
    processor given the index i - first and the rate computes it). A black frame sits in the
    middle of the gap."""
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


def _check_layout(layout: dict, sampling: Sampling, max_pixels: int) -> None:
    """An entry's arrays as its header lists them, checked against what a decode for
    ``sampling`` makes before a byte of its frames is read: RGB uint8 frames, as many as the
    sampling shows, at its size (or within the frame pixel budget), one int64 plan entry and one
    float64 time per frame. ValueError says what differs."""
    if sorted(layout) != ["array", "entries", "times"]:
        raise ValueError(f"arrays {sorted(layout)}, not array, entries and times")
    dtype, shape = layout["array"]
    if dtype != np.uint8 or len(shape) != 4 or shape[3] != 3:
        raise ValueError(f"frames of dtype {dtype} and shape {shape}, not uint8 [n, h, w, 3]")
    count, height, width = shape[:3]
    _check_count(count, sampling)
    if sampling.resize and (height, width) != tuple(sampling.resize)[::-1]:
        raise ValueError(f"frames of {width}x{height}, not the sampling's {sampling.resize}")
    if not sampling.resize and not 0 < height * width <= max_pixels:
        raise ValueError(f"frames of {width}x{height}, not within 1 to {max_pixels} pixels")
    if layout["entries"] != (np.dtype(np.int64), (count, 2)) or layout["times"] != (np.dtype(np.float64), (count,)):
        raise ValueError(f"{count} frames with plan entries {layout['entries'][1]} and times {layout['times'][1]}")


def _check_count(count: int, sampling: Sampling) -> None:
    """As many frames as the plan shows: exactly ``frames`` (a concatenation's black ones
    included), or at least one and at most ``max_frames`` at a rate."""
    if sampling.frames is not None and count != sampling.frames:
        raise ValueError(f"{count} frames where the sampling shows {sampling.frames}")
    if sampling.frames is None and not 0 < count <= (sampling.max_frames or count):
        raise ValueError(f"{count} frames where the sampling shows 1 to {sampling.max_frames or 'any number'}")


def _sample_from(arrays: dict[str, np.ndarray], facts: dict, sampling: Sampling, sources: int) -> Frames:
    """A sample read back from the disk cache (its layout checked by ``_check_layout``), its
    values checked against what a decode of ``sources`` videos makes: plan entries in order,
    times finite and in order, facts of the kinds a decode records. ValueError says what differs."""
    entries = tuple(None if tuple(row) == (-1, -1) else (int(row[0]), int(row[1])) for row in arrays["entries"])
    _check_plan(entries, sources)
    times = arrays["times"]
    if not np.all(np.isfinite(times)) or np.any(times < 0) or np.any(np.diff(times) < 0):
        raise ValueError("frame times that are not finite, below 0 or out of order")
    return Frames(arrays["array"], entries, times=tuple(float(t) for t in times), **_facts_of(facts, sources))


def _check_plan(entries: tuple, sources: int) -> None:
    """Entries as ``plan_frames`` makes them: frames of the sources in order, black ones only
    between the two videos of a concatenation."""
    for entry in entries:
        if entry is None and sources != 2 or entry is not None and not (0 <= entry[0] < sources and entry[1] >= 0):
            raise ValueError(f"a plan entry {entry} of a sample of {sources} video(s)")
    ordered = [(0.5, 0) if entry is None else entry for entry in entries]
    if ordered != sorted(ordered):
        raise ValueError("plan entries out of order")


def _facts_of(facts: dict, sources: int) -> dict:
    """The facts a decode records, checked: whether degenerate, the rate (positive, finite),
    whether guessed, one rotation per source, how each decoded source was decoded."""
    rate, rotations, decoded, windows = facts["rate"], facts["rotations"], facts["decoded"], facts["windows"]
    if not isinstance(facts["degenerate"], bool) or not isinstance(facts["rate_guessed"], bool):
        raise ValueError("degenerate or rate_guessed that is not true or false")
    if type(rate) not in (int, float) or not 0 < rate < math.inf:
        raise ValueError(f"a sampling rate of {rate!r}")
    if not isinstance(rotations, list) or len(rotations) != sources or any(r not in ROTATIONS for r in rotations):
        raise ValueError(f"rotations {rotations!r} of {sources} video(s)")
    if not isinstance(decoded, list) or len(decoded) > sources or not all(isinstance(how, str) for how in decoded):
        raise ValueError(f"decodes {decoded!r} of {sources} video(s)")
    if not isinstance(windows, list) or len(windows) != sources or not all(_is_window(w) for w in windows):
        raise ValueError(f"windows {windows!r} of {sources} video(s)")
    return {"degenerate": facts["degenerate"], "sampled_fps": float(rate), "rate_guessed": facts["rate_guessed"],
            "rotations": tuple(int(r) for r in rotations), "decoded": tuple(decoded),
            "windows": tuple((float(w[0]), int(w[1]), int(w[2]), int(w[3])) for w in windows)}


def _is_window(window) -> bool:
    """(rate, first, stop, frames) as a decode records a source's window: a positive finite rate
    and 0 <= first < stop <= frames, whole numbers."""
    if not isinstance(window, list) or len(window) != 4 or type(window[0]) not in (int, float):
        return False
    rate, first, stop, total = window
    return (0 < rate < math.inf and all(type(n) is int for n in (first, stop, total))
            and 0 <= first < stop <= total)


def import_codecs() -> None:
    """PyAV (decoding) and zstandard (the frame cache), which decoding imports lazily, imported
    by the calling thread: two threads that first decode at once would otherwise both run
    these imports, and a Ctrl-C in one leaves the other waiting on the import's lock."""
    import av  # noqa: F401
    import zstandard  # noqa: F401


__all__ = ["FrameStore", "Frames", "FrameStats", "VideoError", "content_key", "frames_asked", "import_codecs"]

