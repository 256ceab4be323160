"""Command line: a thin layer over the Python API, one module per group of commands."""
from __future__ import annotations

from . import building, caches, catalogue, reading, running  # noqa: F401  (each adds its commands)
from .app import main
from .common import FiniteRange, frames_list

__all__ = ["FiniteRange", "frames_list", "main"]
