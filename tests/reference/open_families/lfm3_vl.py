"""LFM3-VL: Qwen2-VL's image processor and Qwen3-VL's video processor under a processor of its
own, which writes each temporal patch as its time ("<1.2 seconds>") and its tokens between
``<|vision_start|>`` and ``<|vision_end|>``. The hub template cannot be read offline: the video
is written as the bare ``<|video_pad|>`` in the user turn before its text, as LFM2-VL's template
writes its placeholder bare and this expansion brings its own delimiters (an image, expanded
without them, keeps its ``<|vision_start|>...<|vision_end|>``)."""
from __future__ import annotations

from . import shrink, tiny_tokenizer

MODEL_TYPE = "lfm3_vl"
SHOWN_AS = "video"

TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for c in m['content'] %}"
    "{% if c['type'] == 'video' %}<|video_pad|>{% elif c['type'] == 'image' %}"
    "<|vision_start|><|image_pad|><|vision_end|>{% else %}{{ c['text'] }}{% endif %}{% endfor %}{% endif %}"
    "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
TOKENS = ["<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>"]
TIME_WORDS = "< . > seconds 0 1 2 3 4 5 6 7 8 9"  # the frames' times are words of the prompt
PATCH, MERGE, TEMPORAL = 8, 2, 2


def make(folder: str, words: list[str]) -> None:
    from transformers import (Lfm3VlConfig, Lfm3VlForConditionalGeneration, Lfm3VlProcessor, Qwen2VLImageProcessor,
                              Qwen3VLVideoProcessor)

    # the real tokenizer puts <|startoftext|> first; here it is the word tokenizer's <s>
    tokenizer = tiny_tokenizer([*words, TIME_WORDS], TOKENS, TEMPLATE, adds_bos=True)
    ids = dict(zip(TOKENS, tokenizer.convert_tokens_to_ids(TOKENS)))
    pixels = dict(patch_size=PATCH, merge_size=MERGE, temporal_patch_size=TEMPORAL)
    factor = PATCH * MERGE
    images = Qwen2VLImageProcessor(size={"shortest_edge": factor * factor, "longest_edge": 64 * 80}, **pixels)
    # a budget over the whole clip: 8 frames of 64x80 fit, so the frames are only rounded to 16
    videos = Qwen3VLVideoProcessor(size={"shortest_edge": 2 * factor * factor, "longest_edge": 8 * 64 * 80}, **pixels)
    processor = Lfm3VlProcessor(image_processor=images, tokenizer=tokenizer, video_processor=videos,
                                chat_template=TEMPLATE)
    config = Lfm3VlConfig(
        text_config=dict(model_type="lfm3", vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id,
                         bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                         num_hidden_layers=2, layer_types=["conv", "full_attention"]),
        vision_config=dict(patch_size=PATCH, spatial_merge_size=MERGE, temporal_patch_size=TEMPORAL,
                           num_hidden_layers=2, layer_types=["conv", "full_attention"]),
        image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"],
        projector_hidden_size=64)
    Lfm3VlForConditionalGeneration(shrink(config)).save_pretrained(folder)
    processor.save_pretrained(folder)
