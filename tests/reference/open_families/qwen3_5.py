"""Qwen3.5: Qwen3-VL's processor in front of a text model that mixes linear (gated delta)
and full attention layers; the tiny one has one of each."""
from __future__ import annotations

from . import shrink
from ._qwen3_vl import save_processor, small_hybrid_text, token_ids, tokenizer, vision_sizes

MODEL_TYPE = "qwen3_5"
SHOWN_AS = "video"


def make(folder: str, words: list[str]) -> None:
    import torch
    from transformers import Qwen3_5Config, Qwen3_5ForConditionalGeneration

    tok = tokenizer(words, byte_level=True)
    config = shrink(Qwen3_5Config(**token_ids(tok)))
    small_hybrid_text(config.text_config, tok)
    for name, value in vision_sizes().items():
        setattr(config.vision_config, name, value)
    config.vision_config.num_position_embeddings = 64
    torch.manual_seed(0)
    Qwen3_5ForConditionalGeneration(config).save_pretrained(folder)
    save_processor(folder, tok)
