"""Name -> declaration tables (benchmarks, protocols, models, video-LLM families): one lookup,
one way to add, and one way for installed packages to add theirs (entry points)."""
from __future__ import annotations

import difflib
import sys
from importlib import metadata
from typing import Generic, Iterable, TypeVar

T = TypeVar("T")
BUILT_IN = {"from": "built-in"}
REGISTERED = {"from": "registered"}  # added in Python with register(): a notebook, a test


class Registry(dict, Generic[T]):
    """A dict of declarations by their ``name``; an unknown name fails with the known ones.
    Each name's origin (built-in, registered in Python, or which plugin) is kept beside it, so
    a run can say where its model and benchmark came from."""

    def __init__(self, what: str, entries: Iterable[T] = ()):
        # plugins whose module was still being imported when they were read (the plugin imported
        # timefoil, which read its entry point): registered at the next lookup, once it is whole
        self.pending: list[tuple[metadata.EntryPoint, tuple]] = []
        super().__init__((entry.name, entry) for entry in entries)
        self.what = what
        self.origins: dict[str, dict] = {name: BUILT_IN for name in super().keys()}

    # every lookup first registers the plugins whose import has finished since
    def __contains__(self, name) -> bool:
        self._settle()
        return super().__contains__(name)

    def __getitem__(self, name) -> T:
        self._settle()
        return super().__getitem__(name)

    def __iter__(self):
        self._settle()
        return super().__iter__()

    def __len__(self) -> int:
        self._settle()
        return super().__len__()

    def get(self, name, default=None):
        self._settle()
        return super().get(name, default)

    def keys(self):
        self._settle()
        return super().keys()

    def values(self):
        self._settle()
        return super().values()

    def items(self):
        self._settle()
        return super().items()

    def _settle(self) -> None:
        waiting = [(entry, how) for entry, how in self.pending if not _initializing(entry.module)]
        if waiting:
            self.pending = [p for p in self.pending if p not in waiting]
            for entry, how in waiting:
                self._load_entry(entry, *how)

    def find(self, name: str) -> T:
        if name not in self:
            raise UnknownName(f"unknown {self.what} {name!r}{did_you_mean(name, self)}; available: "
                              f"{', '.join(sorted(self))}")
        return self[name]

    def register(self, entry: T, origin: dict | None = None) -> T:
        """Add (or replace) a declaration made outside timefoil: a plugin, a notebook, a test."""
        self[entry.name] = entry
        self.origins[entry.name] = origin or REGISTERED
        return entry

    def origin(self, name: str) -> dict:
        """Where ``name`` came from: {"from": "built-in"}, {"from": "registered"}, or
        {"from": "plugin", "distribution": ..., "version": ...}."""
        return {"name": name, **self.origins.get(name, REGISTERED)}

    def load_plugins(self, group: str, kind: type, attribute: str, adopt=None) -> list[str]:
        """Register what installed packages declare under the entry point ``group``: each entry
        names a ``kind``, or a module holding one as ``attribute``; ``adopt(entry name, what it
        names)`` may make a ``kind`` of something else (a plain loader function). A plugin that fails to load
        (whatever it raises, sys.exit and KeyboardInterrupt included) or takes a name already
        declared elsewhere is named on stderr in one line and skipped: it never stops timefoil."""
        added = []
        for entry in metadata.entry_points(group=group):
            if _initializing(entry.module):  # the plugin is importing timefoil: it is read once it is whole
                self.pending.append((entry, (kind, attribute, adopt)))
                continue
            name = self._load_entry(entry, kind, attribute, adopt)
            if name is not None:
                added.append(name)
        return added

    def _load_entry(self, entry: metadata.EntryPoint, kind: type, attribute: str, adopt) -> str | None:
        """Register what one entry point declares; its name, or None where it is refused (one line)."""
        origin = plugin_origin(entry)
        try:
            loaded = entry.load()
            declared = getattr(loaded, attribute, loaded)
            if adopt is not None:
                declared = adopt(entry.name, declared)
            if not isinstance(declared, kind):
                raise TypeError(f"{entry.value} is a {type(declared).__name__}, not a {kind.__name__}")
        except BaseException as exc:  # a plugin's import may call sys.exit: it must not end timefoil
            print(f"timefoil: {self.what} plugin {entry.name!r} could not be loaded ({said(exc)})", file=sys.stderr)
            return None
        taken = self.origins.get(declared.name, REGISTERED) if super().__contains__(declared.name) else None
        if taken is not None and taken != origin:  # the same plugin loaded again replaces itself
            print(f"timefoil: {self.what} plugin {entry.name!r} ({origin['distribution']} {origin['version']}) "
                  f"refused: {declared.name!r} is {self._taken_by(taken)}", file=sys.stderr)
            return None
        self.register(declared, origin)
        return declared.name

    def _taken_by(self, origin: dict) -> str:
        if origin == BUILT_IN:
            return f"a built-in {self.what}"
        if origin.get("from") == "plugin":
            return f"already declared by {origin['distribution']} {origin['version']}"
        return f"a {self.what} registered in Python"


def _initializing(module: str) -> bool:
    """Whether ``module`` is being imported right now (it is in sys.modules, not yet whole)."""
    spec = getattr(sys.modules.get(module), "__spec__", None)
    return bool(getattr(spec, "_initializing", False))


class UnknownName(ValueError):
    """A name that names nothing (a benchmark, protocol, model or option): a usage error."""


def did_you_mean(name: str, known) -> str:
    """' (did you mean X?)' for the closest known name, where one is close; else ''."""
    close = difflib.get_close_matches(str(name), [str(k) for k in known], n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def plugin_origin(entry: metadata.EntryPoint) -> dict:
    dist = entry.dist
    return {"from": "plugin", "distribution": dist.name if dist else "unknown",
            "version": dist.version if dist else "unknown", "entry_point": f"{entry.name} = {entry.value}"}


def said(exc: BaseException) -> str:
    """An exception in one line: its type, and its message when it has one (and can be printed)."""
    from .outside import exception_text

    return " ".join(exception_text(exc).split())
