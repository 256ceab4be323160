"""Qwen3.5-MoE: Qwen3.5 (Qwen3-VL's processor, linear and full attention layers) with a
mixture of experts in every layer; the tiny one has 4 experts, 2 per token."""
from __future__ import annotations

from . import shrink
from ._qwen3_vl import save_processor, small_hybrid_text, token_ids, tokenizer, vision_sizes

MODEL_TYPE = "qwen3_5_moe"
SHOWN_AS = "video"


def make(folder: str, words: list[str]) -> None:
    import torch
    from transformers import Qwen3_5MoeConfig, Qwen3_5MoeForConditionalGeneration

    tok = tokenizer(words, byte_level=True)
    config = shrink(Qwen3_5MoeConfig(**token_ids(tok)))
    text = config.text_config
    small_hybrid_text(text, tok)
    text.num_experts, text.num_experts_per_tok = 4, 2
    text.moe_intermediate_size = text.shared_expert_intermediate_size = 32
    for name, value in vision_sizes().items():
        setattr(config.vision_config, name, value)
    config.vision_config.num_position_embeddings = 64
    torch.manual_seed(0)
    Qwen3_5MoeForConditionalGeneration(config).save_pretrained(folder)
    save_processor(folder, tok)
