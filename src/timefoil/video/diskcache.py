"""The on-disk frame cache: compressed (lossless) and bounded. Entries past the budget are
evicted least recently used first.

An entry is the sample's arrays in one zstandard frame (fast level -2). Measured per sample of 8
decoded 640x480 frames (bench/decode.py), writing costs about a fifth of decoding them and
reading back is over five times faster than decoding, where ``np.savez_compressed`` (deflate)
cost more than the decode it saved and read back barely faster. Entries written before in
that format (``.npz``) are never read (their keys changed) and are pruned as any other.

Each entry is checked when read: that it is a regular file, its length against its header's, its
key, its arrays' layout (against the request, before the frames are read) and a SHA-256 of both
and of the arrays' bytes; a damaged one is moved aside (``<entry>.damaged``) with one warning, and
is a miss: its frames are decoded again and stored over it."""
from __future__ import annotations

import hashlib
import json
import math
import os
import re
import stat
import struct
import sys
import tempfile
from typing import Callable

import numpy as np

from ..core.hashing import NotRegularFile, regular_file

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
MAX_HEADER = 1 << 16  # the key, three arrays' layout and a sample's facts take under 1 KiB
LEVEL = -2  # fast: on noisy camera frames 0.8 of level 1's time at the same size; level 3 took twice as long


class DamagedEntry(ValueError):
    """An entry that is not what was written for its key: a miss, moved aside."""


Layout = dict[str, tuple[np.dtype, tuple[int, ...]]]  # each array's dtype and shape, as an entry's header gives them


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


def read_entry(path: str, key: str,
               expect: Callable[[Layout], None] | None = None) -> tuple[dict[str, np.ndarray], dict]:
    """(arrays, facts) of the entry at ``path``, checked: a regular file, written for ``key``, of
    the layout its header gives (and that ``expect`` accepts before a byte of the frames is read:
    it raises ValueError for a layout the request could never make), no longer than that layout
    compresses to, with the checksum it was written with. Anything else raises DamagedEntry."""
    with _open_regular(path) as handle:
        described, digest, layout, shapes = _read_header(handle)
        if expect is not None:
            try:
                expect(shapes)
            except ValueError as exc:
                raise DamagedEntry(f"not the sample asked for: {exc}") from None
        raw = sum(math.prod(shape) * dtype.itemsize for dtype, shape in shapes.values())
        left = os.fstat(handle.fileno()).st_size - handle.tell()
        if left > _compressed_bound(raw):  # never read more than the entry can hold
            raise DamagedEntry("longer than its frames could compress to")
        compressed = handle.read(left + 1)  # one byte more: an entry that grew meanwhile is not one frame
    out = _arrays_of(_decompressed(compressed, raw), shapes)
    if _digest(described, out.values()) != digest:
        raise DamagedEntry("checksum mismatch")
    if layout["key"] != key:
        raise DamagedEntry("written for another key")
    return out, layout["facts"]


def _open_regular(path: str):
    """The entry opened for reading, if it is a regular file: a FIFO would block the read for
    ever, a device never end it, so neither is opened. Opened without blocking, so one swapped
    in after the check is refused by its open file's type instead of hanging the open."""
    try:
        regular_file(path)
    except NotRegularFile as exc:
        raise DamagedEntry(f"{exc.what}, not a regular file") from None
    handle = os.fdopen(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb")
    if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
        handle.close()
        raise DamagedEntry("replaced by a file that is not a regular one as it was opened")
    return handle


def _read_header(handle) -> tuple[bytes, str, dict, Layout]:
    """MAGIC, the header's length and the header, read no further than they say: (the described
    bytes the checksum covers, that checksum, the described JSON, each array's dtype and shape)."""
    prefix = handle.read(len(MAGIC) + 4)
    if not prefix.startswith(MAGIC) and not MAGIC.startswith(prefix):
        raise DamagedEntry("not a frame cache entry of this format")
    if len(prefix) < len(MAGIC) + 4:
        raise DamagedEntry(f"cut short at {len(prefix)} bytes, before its header")
    (length,) = struct.unpack_from("<I", prefix, len(MAGIC))
    if length > MAX_HEADER:
        raise DamagedEntry(f"a header of {length} bytes, more than any entry's")
    text = handle.read(length)
    if len(text) < length:
        raise DamagedEntry(f"cut short in its header ({len(text)} of {length} bytes)")
    try:
        header = json.loads(text)
        described, digest = header["described"].encode(), header["sha256"]
        layout = json.loads(described)
        shapes = _layout(layout["arrays"])
        if not (isinstance(digest, str) and isinstance(layout["key"], str) and isinstance(layout["facts"], dict)):
            raise TypeError("a field of another type")
    except (ValueError, KeyError, TypeError, AttributeError, UnicodeError) as exc:
        raise DamagedEntry(f"unreadable header ({type(exc).__name__})") from None
    return described, digest, layout, shapes


def _layout(arrays) -> Layout:
    """Each array's name, dtype and shape as the header lists them, or ValueError: a dtype that
    holds Python objects or no bytes, a shape that is not whole non-negative numbers."""
    layout = {}
    for name, dtype, shape in arrays:
        if not (isinstance(name, str) and isinstance(dtype, str) and isinstance(shape, list)) or name in layout:
            raise ValueError(f"array {name!r} listed wrong")
        dtype = np.dtype(dtype)
        if dtype.hasobject or not dtype.itemsize or not all(type(d) is int and d >= 0 for d in shape):
            raise ValueError(f"array {name!r} of dtype {dtype} and shape {shape}")
        layout[name] = (dtype, tuple(shape))
    return layout


def _compressed_bound(raw: int) -> int:
    """The most bytes zstandard writes for ``raw`` bytes (ZSTD_COMPRESSBOUND) and its frame
    header: an entry longer than that holds something besides its frames."""
    return raw + (raw >> 8) + ((128 * 1024 - raw) >> 11 if raw < 128 * 1024 else 0) + 64


def _decompressed(compressed: bytes, raw: int) -> bytes:
    """Exactly one zstandard frame of exactly ``raw`` bytes, nothing after it; its stated size
    is checked before anything is allocated for it."""
    import zstandard

    try:
        if zstandard.frame_content_size(compressed) != raw:
            raise DamagedEntry("length does not match its header")
        stream = zstandard.ZstdDecompressor().decompressobj()
        payload = stream.decompress(compressed)
    except zstandard.ZstdError as exc:
        raise DamagedEntry(f"unreadable frames ({type(exc).__name__})") from None
    if not stream.eof or stream.unused_data or len(payload) != raw:
        raise DamagedEntry("length does not match its header")
    return payload


def _arrays_of(payload: bytes, shapes: Layout) -> dict[str, np.ndarray]:
    out, offset = {}, 0
    for name, (dtype, shape) in shapes.items():
        count = math.prod(shape)
        out[name] = np.frombuffer(payload, dtype=dtype, count=count, offset=offset).reshape(shape)
        offset += count * dtype.itemsize
    return out


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

    def load(self, key: str, expect: Callable[[Layout], None] | None = None
             ) -> tuple[dict[str, np.ndarray], dict] | None:
        """(arrays, facts) stored under ``key``, or None: never stored, or damaged (moved aside).
        ``expect`` checks the entry's layout against the request (``read_entry``)."""
        path = self.path(key)
        try:
            value = read_entry(path, key, expect)
        except (FileNotFoundError, NotADirectoryError):  # never stored, removed meanwhile by a prune or a
            return None  # clear, or a cache root that is no folder (said once, by the run)
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
            where = self._removed(path)
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

    def _removed(self, path: str) -> str:
        """How a damaged entry that could not be moved aside was dealt with: a folder in its
        place (or a read-only cache) stays, and storing over it fails with a warning, not the run."""
        try:
            self._remove(path)
            return "removed"
        except OSError as exc:
            return f"left in place ({type(exc).__name__})"

    @staticmethod
    def _remove(path: str) -> None:
        try:
            os.remove(path)
        except FileNotFoundError:
            pass
