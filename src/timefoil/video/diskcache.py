"""The on-disk frame cache: compressed (lossless) and bounded. Entries past the budget are
evicted least recently used first; a damaged entry is removed with a warning naming it."""
from __future__ import annotations

import os
import re
import sys
import tempfile

import numpy as np

DEFAULT_MAX = 2 * 1024**3  # 2 GiB: thousands of sampled clips; TIMEFOIL_CACHE_MAX overrides it
_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}


def parse_size(text: str) -> int:
    """"500M", "2G", "1.5g", "1048576" -> bytes."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*", text.lower())
    if not match:
        raise ValueError(f"TIMEFOIL_CACHE_MAX: expected a size like 500M or 2G, got {text!r}")
    return int(float(match.group(1)) * _UNITS[match.group(2)])


def cache_budget() -> int:
    value = os.environ.get("TIMEFOIL_CACHE_MAX")
    return parse_size(value) if value else DEFAULT_MAX


class FrameDiskCache:
    def __init__(self, root: str, budget: int | None = None):
        self.root = os.path.join(root, "frames")
        self.budget = cache_budget() if budget is None else budget
        self._size: int | None = None  # measured on first write

    def path(self, key: str) -> str:
        return os.path.join(self.root, key[:2], key + ".npz")

    def load(self, key: str) -> dict | None:
        path = self.path(key)
        if not os.path.exists(path):
            return None
        try:
            with np.load(path, allow_pickle=False) as data:
                value = {name: data[name] for name in data.files}
        except Exception as exc:  # damaged: a miss, said once, and the file goes
            print(f"timefoil: removed a damaged frame cache entry {path} ({type(exc).__name__})", file=sys.stderr)
            self._remove(path)
            return None
        os.utime(path)  # recently used: evicted last
        return value

    def save(self, key: str, **arrays) -> None:
        path = self.path(key)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".npz")
        with os.fdopen(fd, "wb") as handle:
            np.savez_compressed(handle, **arrays)
        os.replace(tmp, path)  # atomic: a killed run never leaves half a file
        if self._size is None:
            self._size = self.usage()[0]
        else:
            self._size += os.path.getsize(path)
        if self._size > self.budget:
            self._size = self.prune(self.budget)

    def entries(self) -> list[tuple[float, int, str]]:
        """(last use, bytes, path) of every entry."""
        out = []
        for folder, _, files in os.walk(self.root):
            for name in files:
                if name.endswith(".npz"):
                    full = os.path.join(folder, name)
                    try:
                        info = os.stat(full)
                    except FileNotFoundError:
                        continue
                    out.append((info.st_mtime, info.st_size, full))
        return out

    def usage(self) -> tuple[int, int]:
        entries = self.entries()
        return sum(size for _, size, _ in entries), len(entries)

    def prune(self, budget: int) -> int:
        """Remove least recently used entries until the total is within 90% of ``budget``
        (room for the next few, so a full cache is not walked on every write); the new total."""
        entries = sorted(self.entries())
        total = sum(size for _, size, _ in entries)
        target = budget * 0.9 if total > budget else budget
        for _, size, path in entries:
            if total <= target:
                break
            self._remove(path)
            total -= size
        return total

    def clear(self) -> int:
        removed = 0
        for _, _, path in self.entries():
            self._remove(path)
            removed += 1
        return removed

    @staticmethod
    def _remove(path: str) -> None:
        try:
            os.remove(path)
        except FileNotFoundError:
            pass
