"""timefoil: does a video-language model understand time?

Python API (the CLI is a thin layer over it)::

    from timefoil import RunConfig, run, score_run, load_run
    report = run(RunConfig("synth", "random", data_dir="suite"), "runs/random")
    report.get("overall/accuracy").value
"""
__version__ = "0.1.0"

from .items import Item, VideoRef  # noqa: E402
from .runner import RunConfig, RunError, load_run, run, score_run  # noqa: E402
from .video.sampling import Sampling  # noqa: E402

__all__ = ["Item", "RunConfig", "RunError", "Sampling", "VideoRef", "load_run", "run", "score_run"]
