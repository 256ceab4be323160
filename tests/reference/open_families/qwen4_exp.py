"""Qwen4-Exp: Qwen3.5-MoE's layout (Qwen3-VL's processor, linear and indexed attention layers,
experts) with hyper-connections between layers and a token indexer choosing, per query, the
blocks of keys a full-attention layer reads; the tiny one has 4 experts, 2 per token, an indexer
of 2 heads choosing 8 tokens in blocks of 2, and no per-layer n-gram embeddings (optional)."""
from __future__ import annotations

from . import shrink
from ._qwen3_vl import save_processor, small_hybrid_text, token_ids, tokenizer, vision_sizes

MODEL_TYPE = "qwen4_exp"
SHOWN_AS = "video"


def make(folder: str, words: list[str]) -> None:
    import torch
    from transformers import Qwen4ExpConfig, Qwen4ExpForConditionalGeneration

    tok = tokenizer(words, byte_level=True)
    config = shrink(Qwen4ExpConfig(**token_ids(tok)))
    text = config.text_config
    small_hybrid_text(text, tok)
    text.layer_types = ["linear_attention", "indexed_attention"]  # its name for full attention
    text.num_experts, text.num_experts_per_tok = 4, 2
    text.moe_intermediate_size = text.shared_expert_intermediate_size = 32
    text.hc_lowrank, text.ple_embed_dim = 8, 32
    text.indexer_n_heads, text.indexer_kv_heads, text.indexer_head_dim = 2, 1, 8
    text.indexer_budget, text.indexer_compress_ratio = 8, 2
    for name, value in vision_sizes().items():
        setattr(config.vision_config, name, value)
    config.vision_config.num_position_embeddings = 64
    torch.manual_seed(0)
    Qwen4ExpForConditionalGeneration(config).save_pretrained(folder)
    save_processor(folder, tok)
