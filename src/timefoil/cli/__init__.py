"""Command line: a thin layer over the Python API, one module per group of commands.

The commands are imported on first use of a name below, not when this package loads: the
``timefoil`` entry point (``entry.run``) must have its Ctrl-C handler in place before the
commands bring in numpy and the benchmarks (so not even ``from __future__`` runs before it)."""
__all__ = ["FiniteRange", "frames_list", "main"]


def __getattr__(name: str):
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from . import building, caches, catalogue, reading, running  # noqa: F401  (each adds its commands)
    from .app import main
    from .common import FiniteRange, frames_list

    globals().update(FiniteRange=FiniteRange, frames_list=frames_list, main=main)
    return globals()[name]
