"""The version, where timefoil keeps its caches, and where it may write: read by every layer, importing nothing."""
from __future__ import annotations

import os

__version__ = "0.1.0"


def default_cache_dir() -> str:
    """Frames, responses and converted weights: TIMEFOIL_CACHE, else ~/.cache/timefoil."""
    return os.environ.get("TIMEFOIL_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "timefoil")


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
