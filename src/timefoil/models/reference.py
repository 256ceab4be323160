"""Reference models that need no weights: the floor and the sanity checks of every table."""
from __future__ import annotations

import re
from typing import Sequence

import numpy as np

from ..core.colours import COLOURS
from ..core.hashing import seeded_unit
from ..core.options import checked_count
from .requests import Answer, Request
from .base import FrameSource, Model, RanksBySimilarity

class RandomModel(RanksBySimilarity, Model):
    """Answers drawn from the seed and the request's content hash: a resumed or repeated run
    gives the same answers, and identical requests (a shared (video, text) pair) share a
    score, as a real encoder's would."""

    name = "random"

    def __init__(self, seed: int = 0):
        self.seed = int(seed)

    def fingerprint(self) -> dict:
        return {"name": self.name, "seed": self.seed}

    def _draws(self, requests: Sequence[Request]) -> list[float]:
        return [seeded_unit(self.seed, request.key()) for request in requests]

    def answer_similarity(self, requests: Sequence[Request], frames: FrameSource) -> list[Answer]:
        return [Answer(score=u) for u in self._draws(requests)]

    def answer_entailment(self, requests: Sequence[Request], frames: FrameSource) -> list[Answer]:
        return [Answer(raw="Yes" if u > 0.5 else "No", probs={"yes": u, "no": 1 - u}) for u in self._draws(requests)]

    def answer_choice(self, requests: Sequence[Request], frames: FrameSource) -> list[Answer]:
        return [Answer(raw=r.labels[int(u * len(r.labels))], probs={k: 1 / len(r.labels) for k in r.labels})
                for r, u in zip(requests, self._draws(requests))]

    def answer_generation(self, requests: Sequence[Request], frames: FrameSource) -> list[Answer]:
        return [Answer(raw=f"random answer {u:.6f}") for u in self._draws(requests)]


class ConstantModel(RanksBySimilarity, Model):
    """Always the first option, always Yes, the same score for everything (so every
    similarity comparison is a tie): exposes position bias and tie handling."""

    name = "constant"

    def answer_similarity(self, requests: Sequence[Request], frames: FrameSource) -> list[Answer]:
        return [Answer(score=0.0) for _ in requests]

    def answer_entailment(self, requests: Sequence[Request], frames: FrameSource) -> list[Answer]:
        return [Answer(raw="Yes", probs={"yes": 1.0, "no": 0.0}) for _ in requests]

    def answer_choice(self, requests: Sequence[Request], frames: FrameSource) -> list[Answer]:
        return [Answer(raw=request.labels[0]) for request in requests]

    def answer_generation(self, requests: Sequence[Request], frames: FrameSource) -> list[Answer]:
        return [Answer(raw="a video") for _ in requests]


class BagOfFramesModel(RanksBySimilarity, Model):
    """Order-blind by construction: the video is the sum of per-frame colour counts (an
    integer sum, so any reordering of the same frames gives exactly the same feature) and
    the text is a bag of colour words. score = <text colours, video colour shares>."""

    name = "bag-of-frames"

    def __init__(self, tolerance: int = 60):
        self.tolerance = checked_count("tolerance", tolerance, least=0)
        self._palette = np.array(list(COLOURS.values()), np.int32)

    def fingerprint(self) -> dict:
        return {"name": self.name, "tolerance": self.tolerance, "colours": sorted(COLOURS)}

    def video_feature(self, array: np.ndarray) -> np.ndarray:
        """Integer pixel counts per colour, summed over frames."""
        pixels = array.reshape(-1, 3).astype(np.int32)
        dist = np.abs(pixels[:, None, :] - self._palette[None]).max(axis=2)
        nearest = dist.argmin(axis=1)
        close = dist[np.arange(len(pixels)), nearest] <= self.tolerance
        return np.bincount(nearest[close], minlength=len(self._palette)).astype(np.int64)

    @staticmethod
    def text_feature(text: str) -> np.ndarray:
        words = re.findall(r"[a-z]+", text.lower())
        return np.array([words.count(c) for c in COLOURS], np.int64)

    def answer_similarity(self, requests: Sequence[Request], frames: FrameSource) -> list[Answer]:
        out = []
        for request in requests:
            text = self.text_feature(request.text)
            if request.video is None:
                out.append(Answer(score=0.0))
                continue
            shown = frames(request.video, request.sampling)
            counts = self.video_feature(shown.array)
            total = shown.array.shape[0] * shown.array.shape[1] * shown.array.shape[2]
            out.append(Answer(score=float(int(text @ counts)) / total))
        return out
