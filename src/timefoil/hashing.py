"""Stable content hashes used as cache keys."""
from __future__ import annotations

import hashlib
import json
import os
from typing import Any

_FILE_HASHES: dict[tuple[str, int, int], str] = {}


def stable_hash(value: Any, length: int = 24) -> str:
    """Hash of a JSON-serialisable value, independent of dict order and process."""
    blob = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:length]


def file_hash(path: str) -> str:
    """sha256 of a file's bytes, memoised on (path, size, mtime) so repeats cost nothing."""
    st = os.stat(path)
    memo_key = (os.path.abspath(path), st.st_size, st.st_mtime_ns)
    cached = _FILE_HASHES.get(memo_key)
    if cached is None:
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
        cached = digest.hexdigest()[:32]
        _FILE_HASHES[memo_key] = cached
    return cached


def seeded_unit(*parts: Any) -> float:
    """A number in [0, 1) determined only by ``parts``: reproducible pseudo-randomness."""
    digest = hashlib.sha256(json.dumps(parts, default=str).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64
