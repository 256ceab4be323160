"""Benchmark registry. Each module declares one ``Benchmark``; none of them names a model."""
from __future__ import annotations

from . import synth, temporalbench, velociti, vilma, vinoground, vitatecs
from .base import Benchmark, DataError

BENCHMARKS: dict[str, Benchmark] = {m.BENCHMARK.name: m.BENCHMARK
                                    for m in (synth, vinoground, temporalbench, vitatecs, velociti, vilma)}


def get_benchmark(name: str) -> Benchmark:
    if name not in BENCHMARKS:
        raise ValueError(f"unknown benchmark {name!r}; available: {', '.join(sorted(BENCHMARKS))}")
    return BENCHMARKS[name]


def register(benchmark: Benchmark) -> Benchmark:
    """Add (or replace) a benchmark declared outside timefoil, e.g. one allowing a new protocol."""
    BENCHMARKS[benchmark.name] = benchmark
    return benchmark


__all__ = ["BENCHMARKS", "Benchmark", "DataError", "get_benchmark", "register"]
