"""A model that decodes the next batch's videos ahead, as a local model on a GPU does, and a
Ctrl-C sent to the process a set time after answering starts: made inside a timefoil process
started with this folder on PYTHONPATH and DECODE_AHEAD_SIGINT set (seconds; empty: no Ctrl-C). The signal comes
from a timer inside the process, so its moment counts from the same point in every try, where a
parent's timer would count from a process whose imports take a varying time.

DECODE_AHEAD_STUCK makes the decode-ahead thread stay stuck: ``decode`` in its work, ``import``
in its first import of PyAV (holding that import's lock, which the main thread then waits on)."""
import os
import signal
import sys
import threading
import time

DELAY, STUCK = os.environ.get("DECODE_AHEAD_SIGINT"), os.environ.get("DECODE_AHEAD_STUCK")
STUCK_S = 120


class StuckImport:
    """A finder that holds the decode-ahead thread in PyAV's import (the main thread goes on)."""

    def find_spec(self, name, path=None, target=None):
        if name == "av" and threading.current_thread() is not threading.main_thread():
            time.sleep(STUCK_S)
        return None


def install() -> None:
    from timefoil.execution.answering import Answerer
    from timefoil.models import ModelLoader, register
    from timefoil.models.reference import BagOfFramesModel

    class DecodingAhead(BagOfFramesModel):
        name = "decoding-ahead"
        batch_size = 1  # a batch per video: the next video decodes while this one is answered
        decodes_ahead = True

    entries, decode_ahead = Answerer.entries, Answerer.decode_ahead

    def interrupted_entries(self, keys, requests):
        if not DELAY:
            yield from entries(self, keys, requests)
            return
        timer = threading.Timer(float(DELAY), os.kill, (os.getpid(), signal.SIGINT))
        timer.daemon = True  # a run that ends first is not held open by it
        timer.start()
        yield from entries(self, keys, requests)

    def stuck_decode_ahead(self, requests):
        time.sleep(STUCK_S)
        decode_ahead(self, requests)

    Answerer.entries = interrupted_entries
    if STUCK == "decode":
        Answerer.decode_ahead = stuck_decode_ahead
    if STUCK == "import":
        sys.meta_path.insert(0, StuckImport())
    register(ModelLoader("decoding-ahead", lambda arg, options, cache_dir: DecodingAhead(), "decodes ahead"))


if DELAY is not None:
    install()
