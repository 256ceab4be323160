"""Qwen3-VL-MoE: Qwen3-VL (its processor, deepstack vision features fed into the first text
layers) with a mixture of experts in the text layers; the tiny one has 4 experts, 2 per token."""
from __future__ import annotations

from . import shrink
from ._qwen3_vl import save_processor, token_ids, tokenizer, vision_sizes

MODEL_TYPE = "qwen3_vl_moe"
SHOWN_AS = "video"


def make(folder: str, words: list[str]) -> None:
    import torch
    from transformers import Qwen3VLMoeConfig, Qwen3VLMoeForConditionalGeneration

    tok = tokenizer(words)
    config = shrink(Qwen3VLMoeConfig(**token_ids(tok)))
    text = config.text_config
    text.vocab_size = len(tok)
    text.num_experts, text.num_experts_per_tok, text.moe_intermediate_size = 4, 2, 32
    # 4 rotary frequencies per head of 8, interleaved over time, height and width as the real one does
    text.rope_parameters = {**text.rope_parameters, "mrope_section": [2, 1, 1], "mrope_interleaved": True}
    text.pad_token_id, text.bos_token_id, text.eos_token_id = tok.pad_token_id, tok.bos_token_id, tok.eos_token_id
    vision = config.vision_config
    for name, value in vision_sizes().items():
        setattr(vision, name, value)
    vision.num_position_embeddings, vision.deepstack_visual_indexes = 64, [0]
    torch.manual_seed(0)
    Qwen3VLMoeForConditionalGeneration(config).save_pretrained(folder)
    save_processor(folder, tok)
