"""Name -> declaration tables (benchmarks, protocols): one lookup, one way to add."""
from __future__ import annotations

from typing import Generic, Iterable, TypeVar

T = TypeVar("T")


class Registry(dict, Generic[T]):
    """A dict of declarations by their ``name``; an unknown name fails with the known ones."""

    def __init__(self, what: str, entries: Iterable[T] = ()):
        super().__init__((entry.name, entry) for entry in entries)
        self.what = what

    def find(self, name: str) -> T:
        if name not in self:
            raise ValueError(f"unknown {self.what} {name!r}; available: {', '.join(sorted(self))}")
        return self[name]

    def register(self, entry: T) -> T:
        """Add (or replace) a declaration made outside timefoil: a plugin, a notebook, a test."""
        self[entry.name] = entry
        return entry
