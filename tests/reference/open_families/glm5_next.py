"""GLM-5.3-Flash: GLM-4.5V's processor and template before a text model of linear (KDA) and
sparse indexed attention layers without rotary positions, dense and mixture-of-experts MLPs and
several residual streams; the tiny one has one layer of each kind so every path runs."""
from __future__ import annotations

from .glm4v import MERGE, PATCH, glm_tokenizer, save_processor

MODEL_TYPE = "glm5_next"
SHOWN_AS = "video"


def make(folder: str, words: list[str]) -> None:
    from transformers import Glm5NextConfig, Glm5NextForConditionalGeneration

    tokenizer, token_ids = glm_tokenizer(words)
    # the config requires as many key/value heads as query heads, no rotary dims, a query rank,
    # and a top-k that the pool size divides
    text = dict(vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id, hidden_size=32, intermediate_size=64,
                num_hidden_layers=2, layer_types=["linear_attention", "indexed_attention"],
                mlp_layer_types=["dense", "sparse"], indexer_types=["full", "full"],
                num_attention_heads=2, num_key_value_heads=2, kv_lora_rank=16, q_lora_rank=16, qk_rope_head_dim=0,
                qk_nope_head_dim=8, v_head_dim=8, index_topk=16, index_kpool=4, index_head_dim=8, index_n_heads=2,
                linear_head_dim=8, linear_num_heads=2, moe_intermediate_size=16, n_routed_experts=4,
                num_experts_per_tok=2, hc_mult=2, hc_sinkhorn_iters=3, max_position_embeddings=4096)
    vision = dict(depth=1, hidden_size=32, num_heads=2, intermediate_size=64, projection_intermediate_size=64,
                  out_hidden_size=32, patch_size=PATCH, spatial_merge_size=MERGE, image_size=32)
    config = Glm5NextConfig(text_config=text, vision_config=vision, **token_ids)
    Glm5NextForConditionalGeneration(config).save_pretrained(folder)
    # its processors count the budget in tokens (temporal patch x merged patch): 8 frames of 60x80 become 24x32
    save_processor(folder, tokenizer, "Glm5Next", {"min_image_tokens": 4, "max_image_tokens": 12},
                   {"min_image_tokens": 4, "max_image_tokens": 48})
