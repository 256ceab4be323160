"""Name -> declaration tables (benchmarks, protocols, models, video-LLM families): one lookup,
one way to add, and one way for installed packages to add theirs (entry points)."""
from __future__ import annotations

import sys
from importlib import metadata
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

    def load_plugins(self, group: str, kind: type, attribute: str) -> list[str]:
        """Register what installed packages declare under the entry point ``group``: each entry
        names a ``kind``, or a module holding one as ``attribute``. A plugin that fails to load
        is named on stderr in one line and skipped: it never stops timefoil itself."""
        added = []
        for entry in metadata.entry_points(group=group):
            try:
                declared = entry.load()
                declared = getattr(declared, attribute, declared)
                if not isinstance(declared, kind):
                    raise TypeError(f"{entry.value} is a {type(declared).__name__}, not a {kind.__name__}")
            except Exception as exc:
                print(f"timefoil: {self.what} plugin {entry.name!r} could not be loaded "
                      f"({type(exc).__name__}: {exc})", file=sys.stderr)
                continue
            self.register(declared)
            added.append(declared.name)
        return added
