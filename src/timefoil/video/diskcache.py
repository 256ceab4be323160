"""The on-disk frame cache: compressed (lossless) and bounded. Entries past the budget are
evicted least recently used first.

An entry is the sample's arrays in one zstandard frame (fast level -2). Measured per sample of 8
decoded 640x480 frames (bench/decode.py), writing costs about a fifth of decoding them and
reading back is over five times faster than decoding, where ``np.savez_compressed`` (deflate)
cost more than the decode it saved and read back barely faster. Entries written before in
that format (``.npz``) are never read (their keys changed) and are pruned as any other.

Each entry is checked when read: its key, its arrays' layout and a SHA-256 of both and of the
arrays' bytes; a damaged one is moved aside (``<entry>.damaged``) with one warning, and is a miss."""
from __future__ import annotations

import hashlib
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


MAGIC = b"timefoil-frames-3\n"
SUFFIX = ".frames"
OLD_SUFFIXES = (".npz",)  # entries of formats before: never read again (their keys changed), still pruned
DAMAGED = ".damaged"  # an entry that failed its checks, moved aside: kept to look at, pruned like the rest
LEVEL = -2  # fast: on noisy camera frames 0.8 of level 1's time at the same size; level 3 took twice as long


class DamagedEntry(ValueError):
    """An entry that is not what was written for its key: a miss, moved aside."""


def _digest(header: bytes, arrays) -> str:
    """SHA-256 over the header (key, layout, facts) and every array's bytes: a flipped bit
    anywhere is a mismatch. Hardware SHA makes it about a fortieth of a decode of the frames."""
    digest = hashlib.sha256(header)
    for value in arrays:
        digest.update(value.reshape(-1).view(np.uint8))
    return digest.hexdigest()


def write_entry(handle, key: str, arrays: dict[str, np.ndarray], facts: dict | None = None) -> None:
    """MAGIC, the header's length (4 bytes), the header (JSON: the key, each array's name, dtype
    and shape, the facts, and the SHA-256 of all that and the arrays' bytes), then every array's
    bytes in one zstandard frame, fed to the compressor straight from the arrays' memory (no
    joined copy of the frames)."""
    import zstandard

    shapes = {name: list(np.shape(value)) for name, value in arrays.items()}
    arrays = {name: np.ascontiguousarray(value) for name, value in arrays.items()}  # 0-d become 1-d: same bytes
    described = json.dumps({"key": key, "arrays": [[name, value.dtype.str, shapes[name]]
                                                   for name, value in arrays.items()],
                            "facts": facts or {}}, sort_keys=True).encode()
    header = json.dumps({"described": described.decode(), "sha256": _digest(described, arrays.values())}).encode()
    handle.write(MAGIC + struct.pack("<I", len(header)) + header)
    stream = zstandard.ZstdCompressor(level=LEVEL).compressobj(size=sum(v.nbytes for v in arrays.values()))
    for value in arrays.values():
        handle.write(stream.compress(value.reshape(-1).view(np.uint8)))
    handle.write(stream.flush())


def read_entry(path: str, key: str) -> tuple[dict[str, np.ndarray], dict]:
    """(arrays, facts) of the entry at ``path``, checked: written for ``key``, of the layout its
    header gives, with the checksum it was written with. Anything else raises DamagedEntry."""
    import zstandard

    with open(path, "rb") as handle:
        data = handle.read()
    if not data.startswith(MAGIC):
        raise DamagedEntry("not a frame cache entry of this format")
    start = len(MAGIC) + 4
    (length,) = struct.unpack("<I", data[len(MAGIC):start])
    try:
        header = json.loads(data[start:start + length])
        described = header["described"].encode()
        layout = json.loads(described)
        payload = zstandard.ZstdDecompressor().decompress(data[start + length:])
        out, offset = {}, 0
        for name, dtype, shape in layout["arrays"]:
            dtype = np.dtype(dtype)
            count = int(np.prod(shape, dtype=np.int64))
            out[name] = np.frombuffer(payload, dtype=dtype, count=count, offset=offset).reshape(shape)
            offset += count * dtype.itemsize
    except (ValueError, KeyError, TypeError, UnicodeError, zstandard.ZstdError) as exc:
        raise DamagedEntry(f"unreadable ({type(exc).__name__})") from None
    if offset != len(payload):
        raise DamagedEntry("length does not match its header")
    if _digest(described, out.values()) != header.get("sha256"):
        raise DamagedEntry("checksum mismatch")
    if layout.get("key") != key:
        raise DamagedEntry("written for another key")
    return out, layout.get("facts", {})


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

    def load(self, key: str) -> tuple[dict[str, np.ndarray], dict] | None:
        """(arrays, facts) stored under ``key``, or None: never stored, or damaged (moved aside)."""
        path = self.path(key)
        try:
            value = read_entry(path, key)
        except FileNotFoundError:  # never stored, or removed meanwhile by a prune or a clear
            return None
        except (DamagedEntry, OSError) as exc:
            self.discard(key, str(exc) if isinstance(exc, DamagedEntry) else type(exc).__name__)
            return None
        try:
            os.utime(path)  # recently used: evicted last
        except OSError:  # removed meanwhile, or a read-only cache: the entry was read all the same
            pass
        return value

    def discard(self, key: str, reason: str) -> None:
        """A damaged entry: said once (it is moved, so never found again) and moved aside."""
        path = self.path(key)
        try:
            os.replace(path, path + DAMAGED)
            where = f"moved to {path + DAMAGED}"
        except OSError:
            self._remove(path)
            where = "removed"
        print(f"timefoil: a damaged frame cache entry {path} ({reason}) was {where}; its frames are decoded again",
              file=sys.stderr)

    def save(self, key: str, arrays: dict[str, np.ndarray], facts: dict | None = None) -> None:
        """Stored whole or not at all. A store that fails (a full disk, a read-only mount, the
        entry's folder removed meanwhile) costs a decode next time, never the run: said once."""
        path = self.path(key)
        tmp = None
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=f".{key}.", suffix=".tmp")
            with os.fdopen(fd, "wb") as handle:
                write_entry(handle, key, arrays, facts)
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
                if name.endswith((SUFFIX, DAMAGED, *OLD_SUFFIXES)):
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
