"""Decoding the coming batches' videos on host threads while the device answers this batch.

Several workers decode at once (PyAV releases the GIL while it decodes, torch while it
resizes), each taking the oldest call queued, so the videos are made ready in about the order
they are answered. The threads are daemons and nothing ever waits for them after an
exception: a Ctrl-C (or any error) while they decode ends the run at once, where a pool's
worker is joined without a timeout, at its shutdown and again as the interpreter exits. The
decoders' lazy imports run in the thread that opens it, before the first decode ahead, so the
threads never meet on an import's lock."""
from __future__ import annotations

import queue
import threading
from concurrent.futures import Future
from typing import Any, Callable

from ..video.frames import import_codecs

_STOP = None


class DecodeAhead:
    """``with DecodeAhead(workers) as ahead: ahead.submit(fn, *args)``: each call runs on one of
    ``workers`` daemon threads, started at the first call, in the order queued; what it raises
    is left to the batch that decodes the same video to record. A normal end waits for the
    calls under way; an exception does not. ``most_busy``: the most calls seen running at once."""

    def __init__(self, workers: int = 1) -> None:
        if workers < 1:
            raise ValueError(f"decode-ahead workers must be at least 1, got {workers}")
        self.workers = workers
        self.calls: queue.SimpleQueue = queue.SimpleQueue()
        self.threads: list[threading.Thread] = []
        self._count = threading.Lock()
        self.busy = self.most_busy = 0

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future:
        """The call queued; its future is done when the call has ended, whatever it raised."""
        if not self.threads:
            import_codecs()
            for n in range(self.workers):
                thread = threading.Thread(target=self._work, name=f"timefoil-decode-ahead-{n}", daemon=True)
                thread.start()
                self.threads.append(thread)
        done: Future = Future()
        self.calls.put((fn, args, done))
        return done

    def _work(self) -> None:
        while (call := self.calls.get()) is not _STOP:
            fn, args, done = call
            with self._count:
                self.busy += 1
                self.most_busy = max(self.most_busy, self.busy)
            try:
                fn(*args)
            except BaseException:  # noqa: S110 - a decode's fault is recorded by the batch that asks it
                pass
            finally:
                with self._count:
                    self.busy -= 1
                done.set_result(None)

    def __enter__(self) -> DecodeAhead:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        for _ in self.threads:
            self.calls.put(_STOP)
        if exc_type is None:
            for thread in self.threads:
                thread.join()


__all__ = ["DecodeAhead"]
