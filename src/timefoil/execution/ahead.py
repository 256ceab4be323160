"""Decoding the next batch's videos on one host thread while the device answers this batch.

The thread is a daemon and nothing ever waits for it after an exception: a Ctrl-C (or any
error) while it decodes ends the run at once, where a pool's worker is joined without a
timeout, at its shutdown and again as the interpreter exits. The decoders' lazy imports run
in the thread that opens it, before the first decode ahead, so the two threads never meet
on an import's lock."""
from __future__ import annotations

import queue
import threading
from concurrent.futures import Future
from typing import Any, Callable

from ..video.frames import import_codecs

_STOP = None


class DecodeAhead:
    """``with DecodeAhead() as ahead: ahead.submit(fn, *args)``: each call runs in order on one
    daemon thread, started at the first call; what it raises is left to the batch that decodes
    the same video to record. A normal end waits for the call under way; an exception does not."""

    def __init__(self) -> None:
        self.calls: queue.SimpleQueue = queue.SimpleQueue()
        self.thread: threading.Thread | None = None

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future:
        """The call queued; its future is done when the call has ended, whatever it raised."""
        if self.thread is None:
            import_codecs()
            self.thread = threading.Thread(target=self._work, name="timefoil-decode-ahead", daemon=True)
            self.thread.start()
        done: Future = Future()
        self.calls.put((fn, args, done))
        return done

    def _work(self) -> None:
        while (call := self.calls.get()) is not _STOP:
            fn, args, done = call
            try:
                fn(*args)
            except BaseException:  # noqa: S110 - a decode's fault is recorded by the batch that asks it
                pass
            finally:
                done.set_result(None)

    def __enter__(self) -> DecodeAhead:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if self.thread is None:
            return
        self.calls.put(_STOP)
        if exc_type is None:
            self.thread.join()
