"""Qwen3.5: Qwen3-VL's processor in front of a text model that mixes linear (gated delta)
and full attention layers; the tiny one has one of each."""
from __future__ import annotations

from . import shrink
from ._qwen3_vl import save_processor, token_ids, tokenizer, vision_sizes

MODEL_TYPE = "qwen3_5"
SHOWN_AS = "video"


def make(folder: str, words: list[str]) -> None:
    import torch
    from transformers import Qwen3_5Config, Qwen3_5ForConditionalGeneration

    tok = tokenizer(words, byte_level=True)
    config = shrink(Qwen3_5Config(**token_ids(tok)))
    text = config.text_config
    text.vocab_size = len(tok)
    text.layer_types = ["linear_attention", "full_attention"]
    text.linear_key_head_dim = text.linear_value_head_dim = 8
    text.linear_num_key_heads, text.linear_num_value_heads = 2, 4
    text.pad_token_id, text.bos_token_id, text.eos_token_id = tok.pad_token_id, tok.bos_token_id, tok.eos_token_id
    # 4 rotary frequencies per head (16 * 0.5 / 2), shared out over time, height and width
    text.head_dim = 16
    text.rope_parameters = {**text.rope_parameters, "partial_rotary_factor": 0.5, "mrope_section": [2, 1, 1]}
    for name, value in vision_sizes().items():
        setattr(config.vision_config, name, value)
    config.vision_config.num_position_embeddings = 64
    torch.manual_seed(0)
    Qwen3_5ForConditionalGeneration(config).save_pretrained(folder)
    save_processor(folder, tok)
