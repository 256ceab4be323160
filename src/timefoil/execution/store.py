"""Durable run state: the append-only answer log and the cross-run response cache."""
from __future__ import annotations

import json
import math
import os
import sqlite3
import stat
import sys
import time
from typing import Any, Iterable

from ..core.output import failure_text
from ..core.jsonfiles import Fields, ListOf, MapOf, UnreadableFile, kind_fault

ANSWERS = "items.jsonl"
CONFIG = "run.json"
LOCK = "run.lock"
SHARD = "shard.json"  # a shard's request ids, for `merge`
RUN_FILES = (ANSWERS, CONFIG, LOCK, SHARD)  # what a run directory is made of
MERGING = "merging"  # in the run.json of a merge not yet finished: the command that finishes it


NON_FINITE = "non_finite"  # where a stored object had NaN or an infinity, written as null


def strict_json(data: Any, **options) -> str:
    """JSON every reader parses. Python writes NaN and infinities as bare NaN/Infinity, which
    is not JSON (a browser refuses the whole line); they become null, and an object says
    where under ``non_finite``, so no number is silently changed."""
    try:
        return json.dumps(data, allow_nan=False, **options)
    except ValueError:
        where: list[str] = []
        data = _finite(data, "", where)
        if isinstance(data, dict) and where:
            data[NON_FINITE] = where
        return json.dumps(data, allow_nan=False, **options)


def _finite(value: Any, path: str, where: list[str]) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        where.append(path or ".")
        return None
    if isinstance(value, dict):
        return {k: _finite(v, f"{path}.{k}" if path else str(k), where) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v, f"{path}[{i}]", where) for i, v in enumerate(value)]
    return value


class StoreWriteError(RuntimeError):
    """A file of a run (or of a build) cannot be written: a full disk, a read-only mount, a folder
    that is not writable. The message names the file and what to do."""


def write_failure(path: str, exc: OSError, what: str = "it",
                  again: str = "run the same command again") -> StoreWriteError:
    """The one line for ``exc``, raised while writing ``path``: the file, why, and what to do."""
    return StoreWriteError(failure_text(path, exc, what, again))


def write_json(path: str, data: dict) -> None:
    """Written whole or not at all (a temporary file, flushed to the disk, renamed over the old
    one); a write that fails (a full disk) says so naming the file and leaves the old one."""
    tmp = path + ".tmp"
    text = strict_json(data, indent=2, ensure_ascii=False)
    try:
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise write_failure(path, exc) from None


class RunLockError(RuntimeError):
    """The run directory's lock cannot be taken."""


class RunLocked(RunLockError):
    """Another process is writing this run directory."""


class RunLock:
    """One writer per run directory: an exclusive lock on ``run.lock`` (holding the writer's
    PID) for as long as the run writes. The operating system drops the lock when its process
    dies, so a run killed mid-way leaves nothing to clean up: the next run takes over.

    The lock file is rewritten, so it must be the directory's own plain file: a symbolic link
    (which would lead the write to its target), a hard link or anything but a regular file is
    refused."""

    def __init__(self, run_dir: str):
        self.path = os.path.join(run_dir, LOCK)
        self.handle = None

    def _open(self):
        flags = os.O_RDWR | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        try:
            fd = os.open(self.path, flags, 0o644)
        except OSError as exc:
            if os.path.islink(self.path):
                raise RunLockError(f"{self.path} is a symbolic link; a run's lock file must be its own plain "
                                   "file (remove the link and run again)") from None
            raise RunLockError(f"{self.path} cannot be opened as the run's lock file ({exc.strerror})") from None
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
            os.close(fd)
            kind = "a hard link to another file" if stat.S_ISREG(info.st_mode) else "not a regular file"
            raise RunLockError(f"{self.path} is {kind}; a run's lock file must be its own plain file "
                               "(remove it and run again)")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "r+", encoding="utf-8")

    def __enter__(self) -> "RunLock":
        import fcntl

        while True:
            handle = self._open()
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                handle.seek(0)
                holder = handle.read().strip() or "unknown"
                handle.close()
                raise RunLocked(f"{os.path.dirname(self.path)} is being written by process {holder} ({LOCK}); "
                                "wait for it to finish or stop it, then run again") from None
            if self._still_there(handle):
                break
            handle.close()  # the writer before removed it as it finished: lock the file there now
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        self.handle = handle
        return self

    def __exit__(self, *exc) -> None:
        if self.handle is not None:
            try:  # removed while still held, so a finished run leaves no stale lock behind
                os.unlink(self.path)
            except OSError:
                pass
            self.handle.close()  # closing releases the lock
            self.handle = None

    def _still_there(self, handle) -> bool:
        """The locked file is the one at the path: a writer that finished removes its lock file
        while holding it, and a lock taken on the removed file would guard nothing."""
        try:
            return os.stat(self.path).st_ino == os.fstat(handle.fileno()).st_ino
        except OSError:
            return False


# What a record holds, field by field, as timefoil writes it (records.records_for): every reader
# indexes these, so a record whose field is of another kind (an answer edited by hand) is refused
# where it is read, naming its line and field, instead of failing later without a name. Fields
# a protocol or model adds of its own are not listed and pass as they are.
TEXT, NUMBER, WHOLE = str, float, int
JUDGE = Fields({"model": (TEXT, None), "fingerprint": (TEXT, None), "raw": (TEXT, None), "error": (TEXT, None)})
STORED_ANSWER = Fields({"raw": (TEXT, None), "score": (NUMBER, None), "probs": (MapOf((NUMBER, None)), None),
                        "error": (TEXT, None), "latency": (NUMBER, None),
                        "meta": (Fields({"ranks": (ListOf((WHOLE, None)), None), "candidates": (WHOLE, None),
                                         "judge": (JUDGE, None),
                                         "text_cut": Fields({"tokens": WHOLE, "limit": WHOLE, "read": TEXT},
                                                            required=("tokens", "limit", "read")),
                                         "texts_cut": WHOLE, "text_limit": WHOLE}), None)})
VIDEO = Fields({"path": (TEXT, None), "start": (NUMBER, None), "end": (NUMBER, None), "parts": ListOf(dict),
                "gap": NUMBER})
ITEM = Fields({"id": TEXT, "group_id": TEXT, "benchmark": TEXT, "test": TEXT, "subtest": (TEXT, None),
               "role": TEXT, "categories": ListOf(TEXT), "target": WHOLE, "n_options": WHOLE,
               "options_are": TEXT, "texts": ListOf(TEXT), "videos": ListOf(VIDEO), "metadata": (dict, None)},
              required=("id", "group_id", "test", "role", "target", "n_options"))
REQUEST = Fields({"kind": TEXT, "video": (VIDEO, None), "text": TEXT, "labels": ListOf(TEXT),
                  "option_texts": ListOf(TEXT), "caption": (TEXT, None), "system": (TEXT, None),
                  "max_tokens": WHOLE, "key": (TEXT, None), "ask": ListOf(WHOLE),
                  "candidates": Fields({"n": WHOLE, "digest": TEXT}), "option": WHOLE, "position": WHOLE,
                  "order": ListOf(WHOLE), "roles": ListOf(TEXT), "reasoning": bool, "published": bool})
FRAMES = Fields({"n": WHOLE, "degenerate": bool, "blind": bool, "decoded": (TEXT, ListOf(TEXT)),
                 "capped": Fields({"asked": WHOLE, "max_frames": WHOLE}, required=("asked", "max_frames"))})
RECORD = Fields({"id": TEXT, "item": ITEM, "expected": WHOLE, "request": REQUEST, "answer": STORED_ANSWER,
                 "judge": (JUDGE, None), "frames": (FRAMES, None),
                 "parsed": (Fields({"status": TEXT, "read_from": TEXT}), None), NON_FINITE: ListOf(TEXT)},
                required=("id", "item", "expected", "request", "answer"))


class RunLog:
    """``items.jsonl``: one JSON object per answered request, appended and flushed as answers
    arrive. A run killed mid-write leaves at most one partial last line, which is cut away
    before appending again, so a resumed run neither loses nor duplicates a record."""

    def __init__(self, run_dir: str):
        self.run_dir = run_dir
        self.path = os.path.join(run_dir, ANSWERS)
        self.corrupt: list[int] = []
        self.malformed: list[tuple[int, str]] = []

    def repair(self) -> None:
        if not os.path.exists(self.path):
            return
        with open(self.path, "rb+") as handle:
            data = handle.read()
            if data and not data.endswith(b"\n"):
                handle.truncate(data.rfind(b"\n") + 1)

    def read(self, strict: bool = True) -> list[dict[str, Any]]:
        """The records; the line numbers of lines that are not records are kept in ``corrupt``
        (reported by `score` and `check`, never silently skipped). A record with a field of
        the wrong kind (``RECORD``) is refused, naming its line and field (UnreadableFile); with
        ``strict`` off it is left out and kept in ``malformed`` as (line, what is wrong)."""
        self.corrupt, self.malformed = [], []
        if not os.path.exists(self.path):
            return []
        records = []
        with open(self.path, encoding="utf-8", errors="replace") as handle:
            for number, line in enumerate(handle, 1):
                if not line.endswith("\n"):
                    break  # a partial line from an interrupted write (cut before the next append)
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    record = None
                if not (isinstance(record, dict) and {"id", "item", "request", "answer"} <= set(record)):
                    self.corrupt.append(number)
                    continue
                fault = kind_fault(record, RECORD)
                if fault is None:
                    records.append(record)
                elif strict:
                    raise UnreadableFile(f"{self.path} line {number}: not a record timefoil wrote ({fault}); "
                                         "correct or remove that line (timefoil check "
                                         f"{self.run_dir} lists every such line)")
                else:
                    self.malformed.append((number, fault))
        return records

    def done_ids(self, include_errors: bool = True) -> set[str]:
        return {r["id"] for r in self.read() if include_errors or not r["answer"].get("error")}

    def append(self, records: Iterable[dict[str, Any]]) -> None:
        """Appended and flushed to the disk; a write that fails (a full disk) is refused in one
        line naming the log. What it wrote of a last line is cut when the run resumes."""
        lines = "".join(strict_json(r, ensure_ascii=False) + "\n" for r in records)
        if not lines:
            return
        try:
            with open(self.path, "a", encoding="utf-8") as handle:
                handle.write(lines)
                handle.flush()
                os.fsync(handle.fileno())
        except OSError as exc:
            raise write_failure(self.path, exc, "the run's answers",
                                "run the same command again: it resumes from the last answer recorded") from None


def answered_twice(records: Iterable[dict[str, Any]]) -> dict[str, int]:
    """Request ids with more than one answer, and how many. An error retried later is recorded
    again by design, so only records without an error count."""
    counts: dict[str, int] = {}
    for record in records:
        if not record["answer"].get("error"):
            counts[record["id"]] = counts.get(record["id"], 0) + 1
    return {request_id: n for request_id, n in counts.items() if n > 1}


# SQLite's result codes for a file that is not, or no longer, a sound database. Anything else
# (full disk, read-only mount, a lock held too long, an I/O error) says nothing about the file.
_CORRUPT_CODES = {11, 26}  # SQLITE_CORRUPT, SQLITE_NOTADB
_CORRUPT_WORDS = ("file is not a database", "malformed")


def is_corrupt(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in _CORRUPT_CODES  # extended codes keep the primary one in the low byte
    return any(words in str(exc) for words in _CORRUPT_WORDS)


RESPONSES = "responses.sqlite"  # the response cache's file in a cache directory


class ResponseCache:
    """SQLite map from (model fingerprint, request content) to a stored answer, shared by
    runs: a rerun, or a run with another configuration asking the same thing, reuses it.

    The cache only saves asking again. A file that is not a database is set aside and a new one
    started; any other failure (a full disk, a read-only mount, a lock, an I/O error) is said once
    and the cache steps out of the way: every lookup misses and nothing is stored, while the
    answers still go to the run log."""

    def __init__(self, path: str, timeout: float = 30):
        self.path, self.timeout = path, timeout
        self.db: sqlite3.Connection | None = None
        try:
            os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
            try:
                self.db = self._open()
            except sqlite3.DatabaseError as exc:
                if not is_corrupt(exc):
                    raise
                self._set_aside(exc)
                self.db = self._open()
        except (sqlite3.Error, OSError) as exc:
            self._step_aside(exc)

    @classmethod
    def in_dir(cls, cache_dir: str) -> "ResponseCache":
        return cls(os.path.join(cache_dir, RESPONSES))

    @staticmethod
    def files(cache_dir: str) -> list[str]:
        """The database and its write-ahead log files."""
        path = os.path.join(cache_dir, RESPONSES)
        return [path + suffix for suffix in ("", "-wal", "-shm")]

    @classmethod
    def size(cls, cache_dir: str) -> int:
        return sum(os.stat(path).st_size for path in cls.files(cache_dir) if os.path.isfile(path))

    @classmethod
    def clear(cls, cache_dir: str) -> None:
        for path in cls.files(cache_dir):
            try:
                os.remove(path)
            except FileNotFoundError:  # never made, or removed meanwhile by another clear
                pass

    def _open(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=self.timeout)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            db.execute("SELECT count(*) FROM responses").fetchone()
            db.commit()
        except sqlite3.Error:
            db.close()
            raise
        return db

    def _set_aside(self, exc: sqlite3.Error) -> None:
        """Not a database: moved aside (kept for a look), said, and a new one started."""
        aside = f"{self.path}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}"
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(self.path + suffix):
                os.replace(self.path + suffix, aside + suffix)
        print(f"timefoil: the response cache {self.path} could not be read ({exc}); moved it to {aside} and "
              "started a new one", file=sys.stderr)

    def _step_aside(self, exc: BaseException) -> None:
        """Said once; from here on every lookup misses and nothing is stored. The file is left
        as it is: a full disk or a read-only mount is no reason to lose what it holds."""
        self.close()
        print(f"timefoil: the response cache {self.path} cannot be used ({type(exc).__name__}: {exc}); "
              "going on without it (answers are still recorded in the run)", file=sys.stderr)

    def get_many(self, keys: list[str]) -> dict[str, dict]:
        found: dict[str, dict] = {}
        if self.db is None:
            return found
        unreadable = 0
        try:
            for start in range(0, len(keys), 500):
                chunk = keys[start:start + 500]
                rows = self.db.execute(
                    f"SELECT key, value FROM responses WHERE key IN ({','.join('?' * len(chunk))})", chunk)
                for key, value in rows:
                    try:
                        found[key] = json.loads(value)
                    except (ValueError, TypeError):
                        found[key] = None
                    if not isinstance(found[key], dict) or (  # written by something else: asked again
                            "answer" in found[key] and kind_fault(found[key]["answer"], STORED_ANSWER) is not None):
                        del found[key]
                        unreadable += 1
        except sqlite3.Error as exc:
            self._step_aside(exc)
            return {}
        if unreadable:
            print(f"timefoil: the response cache {self.path} holds {unreadable} stored answers that are not "
                  "timefoil's JSON; asking those again (their entries are replaced)", file=sys.stderr)
        return found

    def put_many(self, values: dict[str, dict]) -> None:
        if self.db is None:
            return
        try:
            self.db.executemany("INSERT OR REPLACE INTO responses VALUES (?, ?)",
                                [(k, strict_json(v)) for k, v in values.items()])
            self.db.commit()
        except sqlite3.Error as exc:
            self._step_aside(exc)

    def close(self) -> None:
        if self.db is not None:
            try:
                self.db.close()
            except sqlite3.Error:
                pass
            self.db = None
