"""The next call's host inputs, built while the device answers this one.

The runner decodes the coming batches' videos on worker threads while the model answers the
current batch (``decodes_ahead``, on every device); the workers also build each video's pixels
(resize and normalise: ``InputEncoder.pixels_ahead``) and, for a model that runs each video's
prefix once, encode its prompts (tokens, positions: ``InputEncoder.encode_shared``), so that the
answering thread finds the next video's inputs ready rather than making them."""
from __future__ import annotations

import threading
from collections import OrderedDict
from concurrent.futures import Future
from typing import Sequence

import numpy as np

from ..base import FrameSource
from ..requests import Request

# encodings kept ready: the videos the decode-ahead workers run ahead by (each is taken when
# answered; an encoding never asked for is dropped oldest first)
KEPT = 32


class PreparesAhead:
    """Mixed into ``HFGenerative``: ``prepare_ahead`` on the runner's decode-ahead thread,
    ``_encoded`` where the prefix forward needs a video's encoding."""

    _ahead: OrderedDict
    _ahead_lock = threading.Lock()  # the workers add encodings while the answering thread takes them

    def prepare_ahead(self, requests: Sequence[Request], frames: FrameSource) -> None:
        """Each video's pixels among ``requests`` built (on the calling thread: the runner's
        decode-ahead worker), and, where its prefix runs once, its prompts encoded, to be taken
        by the call that answers them. A failure is left for that call to meet again and record."""
        if not self.multimodal:
            return
        self.inputs.defer_check = True  # the answering thread is not held up by the official processor's check
        groups: dict[tuple, list[Request]] = {}
        for request in requests:
            if request.video is not None:
                groups.setdefault((request.video.key(), str(request.sampling), request.kind), []).append(request)
        for group in groups.values():
            caption = group[0].kind == "similarity"
            if caption and self.score_mode == "perplexity":
                continue  # the caption alone is scored, as text: no frames are shown
            video = self._video(group[0], frames)
            self.inputs.pixels_ahead(video)  # apart from the encoding's lock: workers build side by side
            if len(group) < 2 or not self.prefix_reuse:
                continue
            texts = tuple(p + c for p, c in (self._prompt(r, video, caption) for r in group))
            made: Future = Future()
            with self._ahead_lock:
                self._ahead[texts] = (video.array, made)
                while len(self._ahead) > KEPT:
                    self._ahead.popitem(last=False)
            try:
                made.set_result(self.inputs.encode_shared(self.model, list(texts), video))
            except Exception as exc:  # noqa: BLE001 - the answering call encodes again and records it
                made.set_exception(exc)

    def finish_ahead(self) -> None:
        """At a run's normal end: the official processor's comparison, where one runs, finished
        (so run.json says its outcome). Never called after a Ctrl-C."""
        if self.inputs.check_thread is not None:
            self.inputs.check_thread.join()

    def _encoded(self, texts: list[str], video):
        """The encoding of ``texts`` over ``video``: made ahead where it was (and for these very
        frames), else now."""
        with self._ahead_lock:
            ready = self._ahead.pop(tuple(texts), None) if video is not None else None
        if ready is not None:
            array, made = ready
            if array is video.array or np.array_equal(array, video.array):
                try:
                    encoded = made.result()
                except Exception:  # noqa: BLE001 - made again below, where it fails for the record
                    encoded = None
                if encoded is not None:
                    self.stats["prepared_ahead"] += 1
                    return encoded
        return self.inputs.encode_shared(self.model, texts, video)


__all__ = ["KEPT", "PreparesAhead"]
