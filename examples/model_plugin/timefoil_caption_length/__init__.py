"""A model defined outside timefoil: the caption-length baseline, as a plugin.

It never looks at the video. A similarity score is the caption's word count (``prefer=longer``)
or its negation (``prefer=shorter``), and a choice is the option with the most (fewest) words.
A counterfactual benchmark whose true captions are systematically longer or shorter than their
foils lets this blind rule score above chance: the length bias every table should rule out.

timefoil finds it through the ``timefoil.models`` entry point group, which names ``MODEL``
below (see pyproject.toml, or the dist-info folder beside this package, which is what
installing it writes). Then ``timefoil run synth --model caption-length --model-arg
prefer=shorter ...`` runs it like any built-in model.
"""
from __future__ import annotations

from typing import Sequence

from timefoil.models import FrameSource, Model, ModelLoader
from timefoil.models.base import RanksBySimilarity
from timefoil.core.options import typed_options
from timefoil.models.requests import Answer, Request

PREFERENCES = ("longer", "shorter")


def words(text: str) -> int:
    return len(text.split())


class CaptionLength(RanksBySimilarity, Model):
    name = "caption-length"

    def __init__(self, prefer: str = "longer"):
        if prefer not in PREFERENCES:
            raise ValueError(f"prefer must be one of {', '.join(PREFERENCES)}, got {prefer!r}")
        self.prefer = prefer
        self.sign = 1 if prefer == "longer" else -1

    def fingerprint(self) -> dict:
        return {"name": self.name, "prefer": self.prefer}

    def answer_similarity(self, requests: Sequence[Request], frames: FrameSource) -> list[Answer]:
        return [Answer(score=float(self.sign * words(r.text))) for r in requests]

    def answer_choice(self, requests: Sequence[Request], frames: FrameSource) -> list[Answer]:
        answers = []
        for request in requests:
            lengths = [self.sign * words(text) for text in request.option_texts]
            if len(lengths) != len(request.labels) or not lengths:
                answers.append(Answer(error="a choice without the texts of its options"))
                continue
            best = max(range(len(lengths)), key=lambda i: (lengths[i], -i))  # ties: the first shown
            answers.append(Answer(raw=request.labels[best]))
        return answers


def load(arg: str | None, options: dict, cache_dir: str) -> Model:
    """``caption-length`` takes no argument after a colon; ``--model-arg prefer=shorter``."""
    if arg:
        raise ValueError("caption-length takes no argument (caption-length, not caption-length:...)")
    return CaptionLength(**typed_options(CaptionLength, options))


MODEL = ModelLoader("caption-length", load, "blind: prefers the longer (or shorter) caption; a length-bias probe "
                                            "(examples/model_plugin)")
