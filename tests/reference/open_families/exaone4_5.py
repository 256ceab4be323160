"""EXAONE 4.5: Qwen2-VL's image and video processors (a ``<|video_pad|>`` per merged patch, no
times in the prompt), a Qwen2.5-VL-style vision tower with window attention, EXAONE 4.0's text
model. The template is EXAONE's (``[|user|]...[|endofturn|]``, ``[|assistant|]`` last); how it
wraps a video is not published with the processor, so the placeholder stands alone before the
text of the turn."""
from __future__ import annotations

from . import tiny_tokenizer

MODEL_TYPE = "exaone4_5"
SHOWN_AS = "video"

CHAT_TEMPLATE = (
    "{% for m in messages %}[|{{ m['role'] }}|]"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for item in m['content'] %}"
    "{% if item['type'] == 'video' %}<|video_pad|>{% elif item['type'] == 'image' %}<|image_pad|>"
    "{% elif item['type'] == 'text' %}{{ item['text'] }}{% endif %}{% endfor %}{% endif %}[|endofturn|]\n"
    "{% endfor %}{% if add_generation_prompt %}[|assistant|]{% endif %}")
SPECIAL = ["[|system|]", "[|user|]", "[|assistant|]", "[|endofturn|]", "<|image_pad|>", "<|video_pad|>"]
PATCH, MERGE = 4, 2


def make(folder: str, words: list[str]) -> None:
    from transformers import (Exaone4_5_Config, Exaone4_5_ForConditionalGeneration, Exaone4_5_Processor,
                              Qwen2VLImageProcessor, Qwen2VLVideoProcessor)

    tokenizer = tiny_tokenizer(words, SPECIAL, CHAT_TEMPLATE)
    ids = dict(zip(SPECIAL, tokenizer.convert_tokens_to_ids(SPECIAL)))
    # one sliding-window and one full-attention layer, as EXAONE 4.0 interleaves them
    text = dict(model_type="exaone4", vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id,
                bos_token_id=tokenizer.bos_token_id, eos_token_id=ids["[|endofturn|]"], hidden_size=32,
                intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                layer_types=["sliding_attention", "full_attention"], sliding_window=16, max_position_embeddings=4096)
    # windows of 2x2 merged patches, the second block attending over the whole frame
    vision = dict(depth=2, hidden_size=32, intermediate_size=64, num_heads=4, num_key_value_heads=2, patch_size=PATCH,
                  spatial_merge_size=MERGE, temporal_patch_size=2, window_size=2 * PATCH * MERGE,
                  fullatt_block_indexes=[1], out_hidden_size=32)
    config = Exaone4_5_Config(text_config=text, vision_config=vision, image_token_id=ids["<|image_pad|>"],
                              video_token_id=ids["<|video_pad|>"])
    Exaone4_5_ForConditionalGeneration(config).save_pretrained(folder)
    pixels = {"patch_size": PATCH, "merge_size": MERGE, "temporal_patch_size": 2}
    # pixels of one frame: 60x80 becomes 24x32
    images = Qwen2VLImageProcessor(size={"shortest_edge": 64, "longest_edge": 32 * 32}, **pixels)
    videos = Qwen2VLVideoProcessor(size={"shortest_edge": 64, "longest_edge": 24 * 32}, **pixels)
    Exaone4_5_Processor(image_processor=images, tokenizer=tokenizer, video_processor=videos,
                        chat_template=CHAT_TEMPLATE).save_pretrained(folder)
