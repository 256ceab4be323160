"""Benchmark registry. Each module declares one ``Benchmark``; none of them names a model."""
from __future__ import annotations

from ..core.registry import Registry
from . import folder, synth, temporalbench, velociti, vilma, vinoground, vitatecs
from .base import Benchmark, DataError

ENTRY_POINTS = "timefoil.benchmarks"  # how a package outside timefoil adds its benchmarks

BENCHMARKS: Registry[Benchmark] = Registry("benchmark", (m.BENCHMARK for m in (synth, vinoground, temporalbench,
                                                                              vitatecs, velociti, vilma, folder)))
get_benchmark = BENCHMARKS.find
register = BENCHMARKS.register
# The five papers' benchmarks ("run all"), in the one order every command and report lists them
PAPERS = ("vinoground", "temporalbench", "vitatecs", "velociti", "vilma")


def paper_order(name: str) -> tuple[int, str]:
    """Sort key of a benchmark's name: the papers' order, then any other benchmark by name."""
    return (PAPERS.index(name), "") if name in PAPERS else (len(PAPERS), name)


def load_plugins() -> list[str]:
    """Register the benchmarks other installed packages declare under the ``timefoil.benchmarks``
    entry point group (each a ``Benchmark``, or a module with a ``BENCHMARK``); a broken one is
    named on stderr and skipped."""
    return BENCHMARKS.load_plugins(ENTRY_POINTS, Benchmark, "BENCHMARK")


load_plugins()

__all__ = ["BENCHMARKS", "Benchmark", "DataError", "PAPERS", "get_benchmark", "load_plugins", "paper_order",
           "register"]
