"""Output files (reports, tables, pages, a benchmark folder's files) written whole or not at all:
into a temporary file beside the target, flushed to the disk, then renamed over it. A write
that fails (a full disk, a read-only folder) leaves the target as it was (absent, or the
previous version), removes the temporary file, and is one line naming the file."""
from __future__ import annotations

import errno
import os
from typing import Callable, TextIO


class OutputWriteError(RuntimeError):
    """A file timefoil writes could not be written; the message names it and what to do."""


def failure_text(path: str, exc: OSError, what: str = "it", again: str = "run the same command again") -> str:
    """The one line for ``exc``, raised while writing ``path``: the file, why, and what to do."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        todo = "free some space on its disk (or write to another folder)"
    elif exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        todo = "make its folder writable (or write to another folder)"
    else:
        todo = "see that its folder can be written (or write to another folder)"
    return f"{path}: could not write {what} ({exc.strerror or exc}); {todo}, then {again}"


def write_whole(path: str, content: str | Callable[[TextIO], object], *, newline: str | None = None) -> str:
    """Write ``content`` (text, or a function writing to the open file) to ``path`` whole or not
    at all; returns ``path``. A failed write raises ``OutputWriteError`` naming ``path``."""
    folder, name = os.path.split(os.path.abspath(path))
    tmp = os.path.join(folder, f".{name}.{os.getpid()}.tmp")  # hidden beside it: the rename stays on one disk
    try:
        with open(tmp, "w", encoding="utf-8", newline=newline) as handle:
            content(handle) if callable(content) else handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException as exc:  # a failed write, or Ctrl-C during it: no cut file stays behind
        try:
            os.remove(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise OutputWriteError(failure_text(path, exc)) from None
        raise
    return path


__all__ = ["OutputWriteError", "failure_text", "write_whole"]
