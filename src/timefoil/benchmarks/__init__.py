"""Benchmark registry. Each module declares one ``Benchmark``; none of them names a model."""
from __future__ import annotations

from ..registry import Registry
from . import synth, temporalbench, velociti, vilma, vinoground, vitatecs
from .base import Benchmark, DataError

BENCHMARKS: Registry[Benchmark] = Registry("benchmark", (m.BENCHMARK for m in (synth, vinoground, temporalbench,
                                                                              vitatecs, velociti, vilma)))
get_benchmark = BENCHMARKS.find
register = BENCHMARKS.register

__all__ = ["BENCHMARKS", "Benchmark", "DataError", "get_benchmark", "register"]
