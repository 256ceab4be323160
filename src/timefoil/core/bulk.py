"""Building many small objects at once (loading and planning a benchmark of 100,000 items)."""
from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def no_cycle_passes() -> Iterator[None]:
    """Python's cycle collector paused while the block runs. Loading and planning make millions
    of small objects that all live on (items, requests, records) and form no cycle; each of the
    collector's passes walks every one of them again, and the passes come more often the more
    there are, so a benchmark of 100,000 items spent two thirds of its time there. Reference
    counting still frees everything dropped; a cycle made inside waits for the next pass after."""
    if not gc.isenabled():  # an outer block (or the caller) has it paused already
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
