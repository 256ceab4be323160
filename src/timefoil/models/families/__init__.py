"""The table of video-LLM families whose inputs timefoil builds itself, one ``FamilySpec`` each.

Adding a family is one module here (its ``VisionBuilder``, its factory from the model folder's
processor settings, its tiny-model recipe and its ``FamilySpec``) and one line below. The
tests then build its inputs, run a tiny model of it through every protocol, and hold its
inputs to the official processor's committed digests.
"""
from __future__ import annotations

from ...core.registry import Registry
from ..video_inputs import ProcessorConfig, UnsupportedFamily, VisionBuilder
from . import (gemma3, gemma4, internvl, llava_next_video, llava_onevision, qwen2_vl, qwen3_5, qwen3_vl, smolvlm,
               video_llava)
from .base import INPUT_KINDS, TIME_ORIGINS, TIME_STATEMENTS, TINY_SPECIAL, FamilySpec, TinyRecipe

FAMILIES: Registry[FamilySpec] = Registry("video LLM family", [
    llava_onevision.LLAVA_ONEVISION,
    llava_next_video.LLAVA_NEXT_VIDEO,
    qwen2_vl.QWEN2_VL,
    qwen2_vl.QWEN2_5_VL,
    qwen3_vl.QWEN3_VL,
    qwen3_5.QWEN3_5, qwen3_5.QWEN3_VL_MOE,
    video_llava.VIDEO_LLAVA,
    internvl.INTERNVL,
    gemma3.GEMMA3,
    smolvlm.SMOLVLM,
    gemma4.GEMMA4,
])


def family_spec(model_type: str) -> FamilySpec:
    """The family of ``model_type``; one that is not in the table is refused naming those that are."""
    if model_type not in FAMILIES:
        raise UnsupportedFamily(f"timefoil builds video inputs for {', '.join(FAMILIES)}; {model_type!r} is not one "
                                "of them (leave preprocess unset, or =official, to show it through the model's own "
                                "processor; text-only models load as causal LMs)")
    return FAMILIES[model_type]


def taking(kind: str) -> list[str]:
    """The families whose frames timefoil can show as ``kind`` (video or images)."""
    return [name for name, spec in FAMILIES.items() if kind in spec.inputs]


def build_vision(model_type: str, path: str, tokenizer, revision: str | None = None) -> VisionBuilder:
    """The builder of ``model_type`` configured from the model folder or hub id ``path``."""
    spec = family_spec(model_type)
    return spec.vision(spec, ProcessorConfig.read(path, tokenizer, revision))


__all__ = ["FAMILIES", "INPUT_KINDS", "TIME_ORIGINS", "TIME_STATEMENTS", "TINY_SPECIAL", "FamilySpec", "TinyRecipe",
           "build_vision", "family_spec", "taking"]
