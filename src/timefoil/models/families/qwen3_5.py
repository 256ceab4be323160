"""Qwen3.5 and Qwen3-VL-MoE: transformers gives both Qwen3-VL's processor and video processor
unchanged (the same size rule, patches, per-patch timestamps in the text and
``mm_token_type_ids``), so their inputs are Qwen3-VL's builder's as they are. What differs is
the language model behind the same inputs: Qwen3.5's mixes gated delta (linear attention)
layers with full attention layers, Qwen3-VL-MoE's routes each token through a few experts.
Both compute their own 3-D rope index."""
from __future__ import annotations

from dataclasses import replace

from .qwen2_vl import _qwen_text
from .qwen3_vl import QWEN3_VL


def _interleaved(text: dict, ids: dict, hidden: int) -> tuple[dict, dict]:
    """Qwen3-VL's text settings: m-RoPE sections interleaved over the head's rotary dimensions."""
    text, tokens = _qwen_text(text, ids)
    text = {**text, "head_dim": hidden // text.get("num_attention_heads", 2),
            "rope_parameters": {**text["rope_parameters"], "mrope_interleaved": True}}
    return text, tokens


def tiny_qwen3_5(text: dict, ids: dict, hidden: int):
    """A hybrid text model: a gated delta layer first, then a full attention layer (the real
    model has three linear layers to each full one), so both kinds of cache are exercised."""
    from transformers import Qwen3_5Config, Qwen3_5ForConditionalGeneration

    text, tokens = _interleaved(text, ids, hidden)
    layers = text["num_hidden_layers"]
    text = {**text, "head_dim": 2 * text["head_dim"],  # half of it rotary, as partial_rotary_factor says
            "rope_parameters": {**text["rope_parameters"], "partial_rotary_factor": 0.5},
            "layer_types": ["linear_attention" if i % 2 == 0 else "full_attention" for i in range(layers)],
            "linear_conv_kernel_dim": 4, "linear_key_head_dim": 8, "linear_value_head_dim": 8,
            "linear_num_key_heads": 2, "linear_num_value_heads": 4}
    vision_config = dict(depth=2, hidden_size=16, intermediate_size=32, num_heads=2, out_hidden_size=hidden,
                         patch_size=16, temporal_patch_size=2, spatial_merge_size=2, num_position_embeddings=64)
    return Qwen3_5ForConditionalGeneration(Qwen3_5Config(text_config=text, vision_config=vision_config, **tokens))


def tiny_qwen3_vl_moe(text: dict, ids: dict, hidden: int):
    from transformers import Qwen3VLMoeConfig, Qwen3VLMoeForConditionalGeneration

    text, _tokens = _interleaved(text, ids, hidden)
    text = {**text, "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": hidden,
            "decoder_sparse_step": 1}
    vision_config = dict(depth=2, hidden_size=16, intermediate_size=32, num_heads=2, out_hidden_size=hidden,
                         patch_size=16, temporal_patch_size=2, spatial_merge_size=2, num_position_embeddings=64,
                         deepstack_visual_indexes=[0])
    return Qwen3VLMoeForConditionalGeneration(Qwen3VLMoeConfig(text_config=text, vision_config=vision_config,
                                                               **_tokens))


QWEN3_5 = replace(QWEN3_VL, name="qwen3_5", title="Qwen3.5",
                  tiny=replace(QWEN3_VL.tiny, model=tiny_qwen3_5, tokenizer_class="Qwen3_5Tokenizer"))
QWEN3_VL_MOE = replace(QWEN3_VL, name="qwen3_vl_moe", title="Qwen3-VL-MoE",
                       tiny=replace(QWEN3_VL.tiny, model=tiny_qwen3_vl_moe))
