"""Stable content hashes used as cache keys."""
from __future__ import annotations

import hashlib
import json
import os
import stat
from typing import Any

_FILE_HASHES: dict[tuple[str, int, int, int, int], str] = {}


def stable_hash(value: Any, length: int = 24) -> str:
    """Hash of a JSON-serialisable value, independent of dict order and process."""
    blob = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:length]


def stored_form(value: Any) -> Any:
    """``value`` as a JSON file gives it back (tuples as lists, other objects as their text, as
    ``stable_hash`` reads them): what is compared with something stored must be in this form,
    or a tuple never equals the list it was written as."""
    return json.loads(json.dumps(value, default=str))


class NotRegularFile(OSError):
    """A path that names a directory, FIFO, device or socket: reading one would fail, block
    for ever (a FIFO with no writer) or never end (a device), so it is never opened."""

    def __init__(self, path: str, what: str):
        super().__init__(f"{path}: {what}, not a regular file")
        self.path, self.what = path, what


_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def regular_file(path: str) -> os.stat_result:
    """``os.stat`` of a regular file (symlinks followed), checked before anything opens it;
    anything else raises ``NotRegularFile``, and a missing path ``FileNotFoundError``."""
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise NotRegularFile(path, next((what for test, what in _KINDS if test(st.st_mode)), "a special file"))
    return st


def file_hash(path: str) -> str:
    """sha256 of a file's bytes, memoised on (path, size, mtime, ctime, inode) so repeats cost
    nothing (a file replaced by another of the same size within the clock's step has a new inode;
    one rewritten in place with its old mtime put back has a new ctime, which no call can set)."""
    st = regular_file(path)
    memo_key = (os.path.abspath(path), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
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


def hash_files(paths, workers: int) -> None:
    """Each file of ``paths`` hashed into ``file_hash``'s memo on ``workers`` daemon threads at
    once (sha256 lets go of the interpreter while it reads): the hundreds of videos a run's
    requests are keyed by, hashed side by side before the first answer rather than one after
    another. A path that cannot be hashed is left for ``file_hash`` to raise where it is asked."""
    import queue
    import threading

    todo: queue.SimpleQueue = queue.SimpleQueue()
    for path in dict.fromkeys(paths):
        todo.put(path)

    def work() -> None:
        while True:
            try:
                path = todo.get_nowait()
            except queue.Empty:
                return
            try:
                file_hash(path)
            except OSError:  # noqa: S110 - missing or unreadable: said by the request that names it
                pass

    threads = [threading.Thread(target=work, name=f"timefoil-hash-{n}", daemon=True) for n in range(max(1, workers))]
    for thread in threads:
        thread.start()
    for thread in threads:  # a Ctrl-C interrupts the wait; the daemons are never waited for then
        thread.join()
