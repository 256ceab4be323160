"""Cosmos3 Omni (the reasoner of Cosmos3): Qwen3-VL under a model type of its own, loaded with
Qwen3-VL's processor, so it takes the tiny Qwen3-VL processor and template of ``_qwen3_vl``."""
from __future__ import annotations

from ._qwen3_vl import save_processor, token_ids, tokenizer, vision_sizes

MODEL_TYPE = "cosmos3_omni"
SHOWN_AS = "video"


def make(folder: str, words: list[str]) -> None:
    from transformers import Cosmos3OmniConfig, Cosmos3OmniForConditionalGeneration

    tok = tokenizer(words)
    hidden = 64
    # head_dim 16: 8 rotary frequencies interleaved 4/2/2 over time, height and width
    text = dict(vocab_size=len(tok), hidden_size=hidden, intermediate_size=64, num_hidden_layers=2,
                num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=4096,
                rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [4, 2, 2],
                                 "mrope_interleaved": True},
                pad_token_id=tok.pad_token_id, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    vision = dict(depth=2, hidden_size=32, intermediate_size=64, num_heads=4, out_hidden_size=hidden,
                  num_position_embeddings=64, deepstack_visual_indexes=[0], **vision_sizes())
    Cosmos3OmniForConditionalGeneration(Cosmos3OmniConfig(text_config=text, vision_config=vision,
                                                          **token_ids(tok))).save_pretrained(folder)
    save_processor(folder, tok)
