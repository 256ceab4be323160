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


__all__ = ["BENCHMARKS", "Benchmark", "DataError", "get_benchmark"]
