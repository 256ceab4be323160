"""The on-disk frame cache: compressed (lossless) and bounded. Entries past the budget are
evicted least recently used first; a damaged entry is removed with a warning naming it.

An entry is the sample's arrays in one zstandard frame (fast level -2). Measured per sample of 8
decoded 640x480 frames (bench/decode.py), writing costs about a fifth of decoding them and
reading back is over five times faster than decoding, where ``np.savez_compressed`` (deflate)
cost more than the decode it saved and read back barely faster. Entries written before in
that format (``.npz``) are still read."""
from __future__ import annotations

import json
import os
import re
import struct
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


MAGIC = b"timefoil-frames-2\n"
SUFFIX, LEGACY = ".frames", ".npz"  # this format, and deflated npz entries from before
LEVEL = -2  # fast: on noisy camera frames 0.8 of level 1's time at the same size; level 3 took twice as long


def write_entry(handle, arrays: dict[str, np.ndarray]) -> None:
    """MAGIC, the header's length (4 bytes), the header (JSON: each array's name, dtype and
    shape), then every array's bytes in one zstandard frame, fed to the compressor straight
    from the arrays' memory (no joined copy of the frames)."""
    import zstandard

    shapes = {name: list(np.shape(value)) for name, value in arrays.items()}
    arrays = {name: np.ascontiguousarray(value) for name, value in arrays.items()}  # 0-d become 1-d: same bytes
    header = json.dumps([[name, value.dtype.str, shapes[name]] for name, value in arrays.items()]).encode()
    handle.write(MAGIC + struct.pack("<I", len(header)) + header)
    stream = zstandard.ZstdCompressor(level=LEVEL).compressobj(size=sum(v.nbytes for v in arrays.values()))
    for value in arrays.values():
        handle.write(stream.compress(value.reshape(-1).view(np.uint8)))
    handle.write(stream.flush())


def read_entry(path: str) -> dict[str, np.ndarray]:
    import zstandard

    with open(path, "rb") as handle:
        data = handle.read()
    if not data.startswith(MAGIC):
        raise ValueError("not a frame cache entry")
    start = len(MAGIC) + 4
    (length,) = struct.unpack("<I", data[len(MAGIC):start])
    layout = json.loads(data[start:start + length])
    payload = zstandard.ZstdDecompressor().decompress(data[start + length:])
    out, offset = {}, 0
    for name, dtype, shape in layout:
        size = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        out[name] = np.frombuffer(payload, dtype=dtype, count=size // np.dtype(dtype).itemsize,
                                  offset=offset).reshape(shape)
        offset += size
    if offset != len(payload):
        raise ValueError("entry length does not match its header")
    return out


def _read_legacy(path: str) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as data:
        return {name: data[name] for name in data.files}


class FrameDiskCache:
    """Entries are ``frames/<key[:2]>/<key>.frames``. A writer's temporary file is hidden and
    ends in ``.tmp`` (never an entry's suffix), so no prune or clear, in this process or another,
    removes a file that is still being written."""

    def __init__(self, root: str, budget: int | None = None):
        self.root = os.path.join(root, "frames")
        self.budget = cache_budget() if budget is None else budget
        self._size: int | None = None  # measured on first write
        self._warned = False

    def path(self, key: str, suffix: str = SUFFIX) -> str:
        return os.path.join(self.root, key[:2], key + suffix)

    def load(self, key: str) -> dict | None:
        path = self.path(key)
        try:
            try:
                value = read_entry(path)
            except FileNotFoundError:  # never stored in this format: perhaps in the one before
                path = self.path(key, LEGACY)
                value = _read_legacy(path)
        except FileNotFoundError:  # never stored, or removed meanwhile by a prune or a clear
            return None
        except Exception as exc:  # damaged: a miss, said once, and the file goes
            print(f"timefoil: removed a damaged frame cache entry {path} ({type(exc).__name__})", file=sys.stderr)
            self._remove(path)
            return None
        try:
            os.utime(path)  # recently used: evicted last
        except OSError:  # removed meanwhile, or a read-only cache: the entry was read all the same
            pass
        return value

    def save(self, key: str, **arrays) -> None:
        """Stored whole or not at all. A store that fails (a full disk, a read-only mount, the
        entry's folder removed meanwhile) costs a decode next time, never the run: said once."""
        path = self.path(key)
        tmp = None
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=f".{key}.", suffix=".tmp")
            with os.fdopen(fd, "wb") as handle:
                write_entry(handle, arrays)
            os.replace(tmp, path)  # atomic: a killed run never leaves half an entry
            tmp = None
            size = os.path.getsize(path)
        except OSError as exc:
            if tmp is not None:
                self._remove(tmp)
            if not self._warned and not isinstance(exc, FileNotFoundError):  # gone meanwhile: just a miss
                self._warned = True
                print(f"timefoil: could not store frames in the cache {self.root} ({exc}); going on without "
                      "storing them", file=sys.stderr)
            return
        if self._size is None:
            self._size = self.usage()[0]
        else:
            self._size += size
        if self._size > self.budget:
            self._size = self.prune(self.budget)

    def entries(self) -> list[tuple[float, int, str]]:
        """(last use, bytes, path) of every entry."""
        out = []
        for folder, _, files in os.walk(self.root):
            for name in files:
                if name.endswith((SUFFIX, LEGACY)):
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
