"""Cosmos3 Omni (the reasoner of Cosmos3): Qwen3-VL under a model type of its own, loaded with
Qwen3-VL's processor. The template is Qwen3-VL's: ChatML, a video written
``<|vision_start|><|video_pad|><|vision_end|>`` before the text; the processor writes each
temporal patch's time ("<1.2 seconds>") and its tokens in place of the pad."""
from __future__ import annotations

from . import tiny_tokenizer

MODEL_TYPE = "cosmos3_omni"
SHOWN_AS = "video"

TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for c in m['content'] %}"
    "{% if c['type'] == 'video' %}<|vision_start|><|video_pad|><|vision_end|>{% elif c['type'] == 'image' %}"
    "<|vision_start|><|image_pad|><|vision_end|>{% else %}{{ c['text'] }}{% endif %}{% endfor %}{% endif %}"
    "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
TOKENS = ["<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>"]
TIME_WORDS = "< . > seconds 0 1 2 3 4 5 6 7 8 9"  # the frames' times are words of the prompt
PATCH, MERGE, TEMPORAL = 8, 2, 2


def make(folder: str, words: list[str]) -> None:
    from transformers import (Cosmos3OmniConfig, Cosmos3OmniForConditionalGeneration, Qwen2VLImageProcessor,
                              Qwen3VLProcessor, Qwen3VLVideoProcessor)

    tokenizer = tiny_tokenizer([*words, TIME_WORDS], TOKENS, TEMPLATE)
    ids = dict(zip(TOKENS, tokenizer.convert_tokens_to_ids(TOKENS)))
    pixels = dict(patch_size=PATCH, merge_size=MERGE, temporal_patch_size=TEMPORAL)
    factor = PATCH * MERGE
    images = Qwen2VLImageProcessor(size={"shortest_edge": factor * factor, "longest_edge": 64 * 80}, **pixels)
    # a budget over the whole clip: 8 frames of 64x80 fit, so the frames are only rounded to 16
    videos = Qwen3VLVideoProcessor(size={"shortest_edge": 2 * factor * factor, "longest_edge": 8 * 64 * 80}, **pixels)
    processor = Qwen3VLProcessor(image_processor=images, tokenizer=tokenizer, video_processor=videos,
                                 chat_template=TEMPLATE)
    hidden = 64
    # head_dim 16: 8 rotary frequencies split 4/2/2 over time, height and width
    text = dict(vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=64, num_hidden_layers=2,
                num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=4096,
                rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [4, 2, 2],
                                 "mrope_interleaved": True},
                pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id,
                eos_token_id=tokenizer.eos_token_id)
    vision = dict(depth=2, hidden_size=32, intermediate_size=64, num_heads=4, out_hidden_size=hidden,
                  num_position_embeddings=64, deepstack_visual_indexes=[0], patch_size=PATCH,
                  temporal_patch_size=TEMPORAL, spatial_merge_size=MERGE)
    config = Cosmos3OmniConfig(text_config=text, vision_config=vision, image_token_id=ids["<|image_pad|>"],
                               video_token_id=ids["<|video_pad|>"], vision_start_token_id=ids["<|vision_start|>"],
                               vision_end_token_id=ids["<|vision_end|>"])
    Cosmos3OmniForConditionalGeneration(config).save_pretrained(folder)
    processor.save_pretrained(folder)
