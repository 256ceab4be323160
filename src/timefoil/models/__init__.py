"""Model registry: ``--model SPEC`` strings to model objects.

A spec is ``name`` or ``name:argument``, plus ``key=value`` adapter options. Adapters with
heavy dependencies register a loader that imports them only when asked for.
"""
from __future__ import annotations

from typing import Callable

from .base import FrameSource, Model
from .reference import BagOfFramesModel, ConstantModel, RandomModel

Loader = Callable[[str | None, dict], Model]


def _random(arg: str | None, options: dict) -> Model:
    return RandomModel(seed=int(options.get("seed", arg or 0)))


MODELS: dict[str, tuple[Loader, str]] = {
    "random": (_random, "answers drawn from the seed and the request's hash (chance floor)"),
    "constant": (lambda arg, options: ConstantModel(), "first option, always Yes, equal scores"),
    "bag-of-frames": (lambda arg, options: BagOfFramesModel(**options),
                      "order-blind colour features: ties on order/direction/state pairs"),
}


def load_model(spec: str, options: dict | None = None) -> Model:
    name, _, arg = spec.partition(":")
    if name not in MODELS:
        raise ValueError(f"unknown model {spec!r}; available: {', '.join(sorted(MODELS))}")
    return MODELS[name][0](arg or None, dict(options or {}))


__all__ = ["FrameSource", "MODELS", "Model", "load_model"]
