"""HY V4 VL (Hy4): a vision tower whose merged rows each end with a learnt newline token, and a
text model with latent (low-rank) attention, a sparse key selector and routed experts. Its
processor names only the pad tokens (``<|image_pad|>``, ``<|video_pad|>``); the tiny template
puts the video before the text of the user turn, where the processor expands it frame by frame."""
from __future__ import annotations

from . import shrink, tiny_tokenizer

MODEL_TYPE = "hy_v4_vl"
SHOWN_AS = "video"

TOKENS = ["<|im_start|>", "<|im_end|>", "<|image_pad|>", "<|video_pad|>"]
TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }} {% if m['content'] is string %}{{ m['content'] }}"
    "{% else %}{% for c in m['content'] %}{% if c['type'] == 'video' %}<|video_pad|>"
    "{% elif c['type'] == 'image' %}<|image_pad|>{% else %}{{ c['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|> {% endfor %}{% if add_generation_prompt %}<|im_start|>assistant {% endif %}")


def make(folder: str, words: list[str]) -> None:
    import torch
    from transformers import (HYV4VLConfig, HYV4VLForConditionalGeneration, HYV4VLImageProcessor, HYV4VLProcessor,
                              HYV4VLVideoProcessor)

    tok = tiny_tokenizer(words, TOKENS, TEMPLATE)
    # the text config derives its head sizes and per-layer lists when built, so it is built small
    text = dict(vocab_size=len(tok), hidden_size=32, intermediate_size=64, moe_intermediate_size=16,
                num_hidden_layers=2, num_attention_heads=4, q_lora_rank=16, kv_lora_rank=16, qk_nope_head_dim=8,
                qk_rope_head_dim=8, v_head_dim=8, n_routed_experts=4, num_experts_per_tok=2, index_topk=8,
                index_head_dim=8, index_n_heads=2, hc_mult=2, max_position_embeddings=4096,
                rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 1, 1]},
                pad_token_id=tok.pad_token_id, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    config = HYV4VLConfig(text_config=text, image_token_id=tok.convert_tokens_to_ids("<|image_pad|>"),
                          video_token_id=tok.convert_tokens_to_ids("<|video_pad|>"))
    shrink(config.vision_config)
    config.vision_config.num_key_value_heads = config.vision_config.num_attention_heads
    config.vision_config.max_image_size = 128  # an 8 x 8 grid of learnt patch positions
    torch.manual_seed(0)
    HYV4VLForConditionalGeneration(config).save_pretrained(folder)

    # the video's budget is over all its frames: 8 frames of 64 x 96 fit, so 60 x 80 is only rounded to 32
    size = {"shortest_edge": 32 * 32, "longest_edge": 8 * 64 * 96}
    HYV4VLProcessor(image_processor=HYV4VLImageProcessor(size=size), video_processor=HYV4VLVideoProcessor(size=size),
                    tokenizer=tok, chat_template=TEMPLATE).save_pretrained(folder)
