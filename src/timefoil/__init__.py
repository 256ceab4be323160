"""timefoil: does a video-language model understand time?

Python API (the CLI is a thin layer over it)::

    from timefoil import RunConfig, run, score_run, load_run
    report = run(RunConfig("synth", "random", data_dir="suite"), "runs/random")
    report.get("overall/accuracy").value

The names below, ``__version__`` too, are imported on first use: loading the package itself
imports nothing, so the ``timefoil`` command (which starts by loading it) can catch Ctrl-C from its
first moment.
"""

_API = {"__version__": "core.paths", "Item": "core.items", "VideoRef": "core.items", "RunConfig": "execution.config",
        "RunError": "execution.config", "run": "execution.runner", "load_run": "execution.stored",
        "score_run": "execution.stored", "Sampling": "video.sampling"}

__all__ = ["__version__", "Item", "RunConfig", "RunError", "Sampling", "VideoRef", "load_run", "run", "score_run"]


def __getattr__(name: str):
    if name not in _API:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f"{__name__}.{_API[name]}"), name)
    globals()[name] = value
    return value
