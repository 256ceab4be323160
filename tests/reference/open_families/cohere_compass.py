"""Cohere Compass (North Vision): Qwen3-VL's processor and multimodal positions on a Cohere text
model. The template is Cohere's turn markup with Qwen3-VL's placement of a video,
``<|VISION_START|><|VIDEO_PAD|><|VISION_END|>`` before the text; the processor writes each
temporal patch's time ("<1.2 seconds>") and its tokens in place of the pad."""
from __future__ import annotations

from . import tiny_tokenizer

MODEL_TYPE = "cohere_compass"
SHOWN_AS = "video"

TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|START_OF_TURN_TOKEN|>"
    "{{ {'user': '<|USER_TOKEN|>', 'assistant': '<|CHATBOT_TOKEN|>', 'system': '<|SYSTEM_TOKEN|>'}[m['role']] }}"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for c in m['content'] %}"
    "{% if c['type'] == 'video' %}<|VISION_START|><|VIDEO_PAD|><|VISION_END|>{% elif c['type'] == 'image' %}"
    "<|VISION_START|><|IMAGE_PAD|><|VISION_END|>{% else %}{{ c['text'] }}{% endif %}{% endfor %}{% endif %}"
    "<|END_OF_TURN_TOKEN|>{% endfor %}{% if add_generation_prompt %}<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>"
    "{% endif %}")
TOKENS = ["<|START_OF_TURN_TOKEN|>", "<|END_OF_TURN_TOKEN|>", "<|USER_TOKEN|>", "<|CHATBOT_TOKEN|>",
          "<|SYSTEM_TOKEN|>", "<|VISION_START|>", "<|VISION_END|>", "<|IMAGE_PAD|>", "<|VIDEO_PAD|>"]
TIME_WORDS = "< . > seconds 0 1 2 3 4 5 6 7 8 9"  # the frames' times are words of the prompt
PATCH, MERGE, TEMPORAL = 8, 2, 2


def make(folder: str, words: list[str]) -> None:
    from transformers import (CohereCompassConfig, CohereCompassForConditionalGeneration,
                              CohereCompassImageProcessor, CohereCompassProcessor, CohereCompassVideoProcessor)

    # the real tokenizer puts <BOS_TOKEN> first; here it is the word tokenizer's <s>
    tokenizer = tiny_tokenizer([*words, TIME_WORDS], TOKENS, TEMPLATE, adds_bos=True)
    ids = dict(zip(TOKENS, tokenizer.convert_tokens_to_ids(TOKENS)))
    pixels = dict(patch_size=PATCH, merge_size=MERGE, temporal_patch_size=TEMPORAL)
    factor = PATCH * MERGE
    images = CohereCompassImageProcessor(size={"shortest_edge": factor * factor, "longest_edge": 64 * 80}, **pixels)
    # a budget over the whole clip: 8 frames of 64x80 fit, so the frames are only rounded to 16
    videos = CohereCompassVideoProcessor(size={"shortest_edge": 2 * factor * factor, "longest_edge": 8 * 64 * 80},
                                         **pixels)
    processor = CohereCompassProcessor(image_processor=images, tokenizer=tokenizer, video_processor=videos,
                                       chat_template=TEMPLATE)
    hidden = 64
    # a sliding layer with M-RoPE (head_dim 16: 8 frequencies split 4/2/2 over time, height, width)
    # and a full-attention layer without positions, as the real model alternates them
    text = dict(vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=64, num_hidden_layers=2,
                num_attention_heads=4, num_key_value_heads=2, sliding_window=64, max_position_embeddings=4096,
                layer_types=["sliding_attention", "full_attention"],
                rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0,
                                                       "mrope_section": [4, 2, 2]},
                                 "full_attention": None},
                pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id,
                eos_token_id=tokenizer.eos_token_id)
    vision = dict(depth=2, hidden_size=32, intermediate_size=64, num_heads=4, out_hidden_size=hidden,
                  num_position_embeddings=64, deepstack_visual_indexes=[0], patch_size=PATCH,
                  temporal_patch_size=TEMPORAL, spatial_merge_size=MERGE)
    config = CohereCompassConfig(text_config=text, vision_config=vision, image_token_id=ids["<|IMAGE_PAD|>"],
                                 video_token_id=ids["<|VIDEO_PAD|>"], vision_start_token_id=ids["<|VISION_START|>"],
                                 vision_end_token_id=ids["<|VISION_END|>"])
    CohereCompassForConditionalGeneration(config).save_pretrained(folder)
    processor.save_pretrained(folder)
