"""The version, where timefoil keeps its caches, and where it may write: read by every layer, importing nothing."""
from __future__ import annotations

import os

__version__ = "0.1.0"


def default_cache_dir() -> str:
    """Frames, responses and converted weights: TIMEFOIL_CACHE, else ~/.cache/timefoil."""
    return os.environ.get("TIMEFOIL_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "timefoil")


class CacheRootUnusable(ValueError):
    """The cache root names something that is not a folder (a file, or a path under one)."""


_checked: dict[str, bool] = {}  # each cache root's check, made once a process: whether it can be written


def cache_root(given: str | None = None) -> str:
    """``given`` (a --cache-dir), else the default, checked once a process: a file, or a path
    under one, is refused (``CacheRootUnusable``, one line naming it), where each frame and
    answer would fail on its own and say so; a folder that cannot be written is said in one
    line, and what it holds is still read (``cache_writable`` tells the stores not to write)."""
    root = given or default_cache_dir()
    if root in _checked:
        return root
    named = "--cache-dir" if given else "TIMEFOIL_CACHE" if os.environ.get("TIMEFOIL_CACHE") else "the cache folder"
    existing = root
    while not os.path.lexists(existing) and os.path.dirname(existing) not in ("", existing):
        existing = os.path.dirname(existing)
    if os.path.lexists(existing) and not os.path.isdir(existing):
        where = "is a file" if existing == root else f"lies under the file {existing}"
        raise CacheRootUnusable(f"the cache folder {root} ({named}) {where}, not a folder: set {named} to a folder")
    writable = os.access(existing, os.W_OK | os.X_OK)
    if not writable:
        import sys

        print(f"timefoil: the cache folder {root} ({named}) cannot be written; what it holds is read, and new "
              "frames and answers are not kept", file=sys.stderr)
    _checked[root] = writable
    return root


def cache_writable(root: str) -> bool:
    """Whether ``cache_root`` found ``root`` writable (a root never checked: assumed so)."""
    return _checked.get(root, True)


class OutputInsideInput(ValueError):
    """A command was asked to write into the data it reads."""


def refuse_output_inside(output: str | None, inputs) -> None:
    """Refuse an output path that is, or lies inside, one of ``inputs`` (folders or files a
    command reads). A run log appended to a benchmark's own ``items.jsonl`` leaves a benchmark
    that no longer loads, so every command that reads data and writes output asks here first.
    Paths are compared after resolving symbolic links: a link into the data is the data."""
    if not output:
        return
    written = os.path.normcase(os.path.realpath(output))
    for given in inputs:
        if not given:
            continue
        read = os.path.normcase(os.path.realpath(given))
        if written == read:
            raise OutputInsideInput(f"the output {output} is the input {given}; write the output elsewhere")
        if os.path.commonpath([written, read]) == read:
            raise OutputInsideInput(f"the output {output} lies inside the input {given}; write the output elsewhere")
