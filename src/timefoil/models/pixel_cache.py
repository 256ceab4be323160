"""Each video's pixels built once, by whichever thread asks first, and kept for the calls that
show it.

The runner's decode-ahead workers build the coming videos' pixels (resize and normalise, the
heaviest step of a prompt's inputs) while the model answers this batch; the answering thread
then finds them here. Two threads asking for one video's pixels at once wait for one build.
``built_by`` counts the builds by the thread that made them, so where they were made is a
number, not a belief."""
from __future__ import annotations

import threading
from collections import Counter, OrderedDict
from typing import Any, Callable

import numpy as np

from ..core.once import OnceEach

MOST_KEPT = 32  # videos: the decode-ahead depth of the most workers, and the one answered
MOST_BYTES = 1 << 30  # a 7B model's pixels are some 28 MB a video


def same_frames(a: np.ndarray, b: np.ndarray) -> bool:
    """The same frames: one array, or equal ones (an ablated order is a new array each time it is
    asked for); the first frame compared first, so another video is told apart at once."""
    if a is b:
        return True
    return a.shape == b.shape and np.array_equal(a[:1], b[:1]) and np.array_equal(a, b)


class PixelCache:
    """``get(frames, key, build)``: ``build()``'s result for ``frames`` (an array) under ``key``
    (what else the build depends on: timing, frames or images), built at most once while kept."""

    def __init__(self, most: int = MOST_KEPT, most_bytes: int = MOST_BYTES) -> None:
        self.most, self.most_bytes = most, most_bytes
        self._kept: OrderedDict = OrderedDict()  # (id, key) -> (frames, value, bytes)
        self._lock = threading.Lock()
        self._building: OnceEach = OnceEach()
        self.built_by: Counter[str] = Counter()  # builds by thread: "main" or the worker's name

    def get(self, frames: np.ndarray, key: Any, build: Callable[[], Any]) -> Any:
        found = self._find(frames, key)
        if found is not None:
            return found
        return self._building.run((id(frames), key), lambda: self._find(frames, key) or self._built(frames, key, build))

    def _find(self, frames: np.ndarray, key: Any):
        with self._lock:
            exact = self._kept.get((id(frames), key))
            if exact is not None and exact[0] is frames:  # the array itself is held: its id is not reused
                self._kept.move_to_end((id(frames), key))
                return exact[1]
            candidates = [(k, v) for k, v in self._kept.items() if k[1] == key]
        for held, (array, value, _) in candidates:
            if same_frames(array, frames):
                with self._lock:
                    if held in self._kept:
                        self._kept.move_to_end(held)
                return value
        return None

    def _built(self, frames: np.ndarray, key: Any, build: Callable[[], Any]):
        value = build()
        thread = threading.current_thread()
        size = sum(_nbytes(v) for v in (value[0].values() if isinstance(value, tuple) and isinstance(value[0], dict)
                                         else ()))
        with self._lock:
            self.built_by["main" if thread is threading.main_thread() else thread.name] += 1
            self._kept[(id(frames), key)] = (frames, value, size)
            while len(self._kept) > 1 and (len(self._kept) > self.most
                                           or sum(e[2] for e in self._kept.values()) > self.most_bytes):
                self._kept.popitem(last=False)
        return value

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()


def _nbytes(value) -> int:
    return int(value.numel() * value.element_size()) if hasattr(value, "element_size") else 0


__all__ = ["MOST_BYTES", "MOST_KEPT", "PixelCache", "same_frames"]
