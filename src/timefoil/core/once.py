"""Compute a value once per key when several threads ask for it at the same time."""
from __future__ import annotations

import threading
from concurrent.futures import Future
from typing import Callable, Generic, Hashable, TypeVar

T = TypeVar("T")


class OnceEach(Generic[T]):
    """The first thread asking for a key computes it; threads asking while it does wait for
    its result (or its exception) instead of computing it again. Nothing is kept afterwards:
    callers store results in their own caches, under their own lock."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pending: dict[Hashable, Future] = {}

    def run(self, key: Hashable, compute: Callable[[], T]) -> T:
        with self.lock:
            waiting = self.pending.get(key)
            mine = waiting is None
            if mine:
                waiting = self.pending[key] = Future()
        if not mine:
            return waiting.result()
        try:
            value = compute()
        except BaseException as exc:
            with self.lock:
                self.pending.pop(key, None)
            waiting.set_exception(exc)
            raise
        with self.lock:
            self.pending.pop(key, None)
        waiting.set_result(value)
        return value
