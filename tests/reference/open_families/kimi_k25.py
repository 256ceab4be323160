"""Kimi K2.5 / K2.6: a video is written as one ``<|kimi_k25_video_placeholder|>``; the processor
cuts it into chunks of 4 frames and writes each as ``HH:MM:SS.mmm<|media_begin|>video<|media_content|>``,
one placeholder per merged patch of a frame, ``<|media_end|>`` (so the tokenizer knows the
two- and three-digit numbers of those times). The text model is DeepSeek-V3's."""
from __future__ import annotations

from . import tiny_tokenizer

MODEL_TYPE = "kimi_k25"
SHOWN_AS = "video"

# the hub template: <|im_user|>user<|im_middle|>...<|im_end|> turns, an image as a media block
# around <|media_pad|>, a video as its placeholder, both before the text of the turn
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_{{ m['role'] }}|>{{ m['role'] }}<|im_middle|>"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for item in m['content'] %}"
    "{% if item['type'] == 'video' %}<|kimi_k25_video_placeholder|>"
    "{% elif item['type'] == 'image' %}<|media_begin|>image<|media_content|><|media_pad|><|media_end|>"
    "{% elif item['type'] == 'text' %}{{ item['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>{% endfor %}"
    "{% if add_generation_prompt %}<|im_assistant|>assistant<|im_middle|>{% endif %}")
SPECIAL = ["<|im_system|>", "<|im_user|>", "<|im_assistant|>", "<|im_middle|>", "<|im_end|>", "<|media_begin|>",
           "<|media_content|>", "<|media_end|>", "<|media_pad|>", "<|kimi_k25_video_placeholder|>"]
# the words of HH:MM:SS.mmm
TIMES = " ".join(f"{n:02d}" for n in range(60)) + " " + " ".join(f"{n:03d}" for n in range(1000)) + " : . image"
PATCH, MERGE = 4, 2


def make(folder: str, words: list[str]) -> None:
    from transformers import (Kimi_K25Config, Kimi_K25ForConditionalGeneration, Kimi_K25ImageProcessor,
                              Kimi_K25Processor, Kimi_K25VideoProcessor)

    tokenizer = tiny_tokenizer(list(words) + [TIMES], SPECIAL, CHAT_TEMPLATE)
    ids = dict(zip(SPECIAL, tokenizer.convert_tokens_to_ids(SPECIAL)))
    # DeepSeek-V3: latent attention (low-rank queries and keys, a rotary part and a plain part of
    # each head), one dense layer then a mixture-of-experts layer
    text = dict(model_type="deepseek_v3", vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id,
                bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id, hidden_size=32,
                intermediate_size=64, moe_intermediate_size=16, num_hidden_layers=2, first_k_dense_replace=1,
                num_attention_heads=2, num_key_value_heads=2, q_lora_rank=16, kv_lora_rank=16, qk_rope_head_dim=8,
                qk_nope_head_dim=8, v_head_dim=8, head_dim=8, n_routed_experts=4, num_experts_per_tok=2,
                n_group=1, topk_group=1, max_position_embeddings=4096)
    vision = dict(patch_size=PATCH, pos_emb_height=16, pos_emb_width=16, pos_emb_time=4, num_attention_heads=2,
                  num_hidden_layers=1, hidden_size=32, intermediate_size=64, merge_kernel_size=[MERGE, MERGE])
    config = Kimi_K25Config(text_config=text, vision_config=vision, projection_hidden_size=32,
                            image_token_id=ids["<|media_pad|>"], video_token_id=ids["<|kimi_k25_video_placeholder|>"],
                            vision_start_token_id=ids["<|media_begin|>"], vision_end_token_id=ids["<|media_end|>"],
                            tie_word_embeddings=True)
    Kimi_K25ForConditionalGeneration(config).save_pretrained(folder)
    # at most 48 patches of 4 pixels a frame: 60x80 becomes 24x32
    budget = {"size": {"max_height": 16, "max_width": 16}, "max_patches": 48, "patch_size": PATCH,
              "merge_size": MERGE}
    Kimi_K25Processor(image_processor=Kimi_K25ImageProcessor(**budget), tokenizer=tokenizer,
                      video_processor=Kimi_K25VideoProcessor(**budget, temporal_patch_size=4),
                      chat_template=CHAT_TEMPLATE).save_pretrained(folder)
