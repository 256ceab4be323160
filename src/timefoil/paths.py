"""The version and where timefoil keeps its caches: read by every layer, importing nothing."""
from __future__ import annotations

import os

__version__ = "0.1.0"


def default_cache_dir() -> str:
    """Frames, responses and converted weights: TIMEFOIL_CACHE, else ~/.cache/timefoil."""
    return os.environ.get("TIMEFOIL_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "timefoil")
