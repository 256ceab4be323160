"""timefoil: does a video-language model understand time?

Python API (the CLI is a thin layer over it)::

    from timefoil import RunConfig, run, score_run, load_run
    report = run(RunConfig("synth", "random", data_dir="suite"), "runs/random")
    report.get("overall/accuracy").value
"""
from .core.items import Item, VideoRef
from .core.paths import __version__
from .execution.config import RunConfig, RunError
from .execution.runner import run
from .execution.stored import load_run, score_run
from .video.sampling import Sampling

__all__ = ["__version__", "Item", "RunConfig", "RunError", "Sampling", "VideoRef", "load_run", "run", "score_run"]
