"""Benchmark registry. Each module declares one ``Benchmark``; none of them names a model."""
from __future__ import annotations

import sys
from importlib import metadata

from ..registry import Registry
from . import folder, synth, temporalbench, velociti, vilma, vinoground, vitatecs
from .base import Benchmark, DataError

ENTRY_POINTS = "timefoil.benchmarks"  # how a package outside timefoil adds its benchmarks

BENCHMARKS: Registry[Benchmark] = Registry("benchmark", (m.BENCHMARK for m in (synth, vinoground, temporalbench,
                                                                              vitatecs, velociti, vilma, folder)))
get_benchmark = BENCHMARKS.find
register = BENCHMARKS.register


def load_plugins() -> list[str]:
    """Register the benchmarks other installed packages declare under the ``timefoil.benchmarks``
    entry point group (each a ``Benchmark``, or a module with a ``BENCHMARK``). A plugin that
    fails to load is named on stderr and skipped: it never stops timefoil itself."""
    added = []
    for entry in metadata.entry_points(group=ENTRY_POINTS):
        try:
            declared = entry.load()
            declared = getattr(declared, "BENCHMARK", declared)
            if not isinstance(declared, Benchmark):
                raise TypeError(f"{entry.value} is a {type(declared).__name__}, not a Benchmark")
        except Exception as exc:
            print(f"timefoil: benchmark plugin {entry.name!r} could not be loaded ({type(exc).__name__}: {exc})",
                  file=sys.stderr)
            continue
        register(declared)
        added.append(declared.name)
    return added


load_plugins()

__all__ = ["BENCHMARKS", "Benchmark", "DataError", "get_benchmark", "load_plugins", "register"]
