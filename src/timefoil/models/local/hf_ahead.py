"""The next call's host inputs, built while the device answers this one.

On a GPU the runner decodes the next batch's videos on a thread of its own while the model
answers the current batch (``decodes_ahead``); a generative model that runs each video's
prefix once also has that thread encode the next videos' prompts (pixels, tokens, positions:
``InputEncoder.encode_shared``), so that the device, once it has answered one video, finds the
next one's inputs ready rather than waiting for the host to make them."""
from __future__ import annotations

from collections import OrderedDict
from concurrent.futures import Future
from typing import Sequence

import numpy as np

from ..base import FrameSource
from ..requests import Request

KEPT = 8  # encodings kept ready: the next call's videos (one whole video, or a few small ones)


class PreparesAhead:
    """Mixed into ``HFGenerative``: ``prepare_ahead`` on the runner's decode-ahead thread,
    ``_encoded`` where the prefix forward needs a video's encoding."""

    _ahead: OrderedDict

    def prepare_ahead(self, requests: Sequence[Request], frames: FrameSource) -> None:
        """Each video's prompts among ``requests`` encoded for its prefix, to be taken by the
        call that answers them. A failure is left for that call to meet again and record."""
        if not (self.prefix_reuse and self.multimodal):
            return
        groups: dict[tuple, list[Request]] = {}
        for request in requests:
            if request.video is not None:
                groups.setdefault((request.video.key(), str(request.sampling), request.kind), []).append(request)
        for group in groups.values():
            caption = group[0].kind == "similarity"
            if len(group) < 2 or (caption and self.score_mode == "perplexity"):
                continue
            video = self._video(group[0], frames)
            texts = tuple(p + c for p, c in (self._prompt(r, video, caption) for r in group))
            made: Future = Future()
            self._ahead[texts] = (video.array, made)
            while len(self._ahead) > KEPT:
                self._ahead.popitem(last=False)
            try:
                made.set_result(self.inputs.encode_shared(self.model, list(texts), video))
            except Exception as exc:  # noqa: BLE001 - the answering call encodes again and records it
                made.set_exception(exc)

    def _encoded(self, texts: list[str], video):
        """The encoding of ``texts`` over ``video``: made ahead where it was (and for these very
        frames), else now."""
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
