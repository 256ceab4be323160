"""Cosmos3 Edge: ChatML turns; the template writes a video as
``<|vision_start|><|video_pad|><|vision_end|>`` (the processor's docstring says so), and the
processor replaces that whole wrapper with each frame's time ("<1.0 seconds>") and tokens between
their own delimiters (temporal patches of one frame)."""
from __future__ import annotations

from . import tiny_tokenizer

MODEL_TYPE = "cosmos3_edge"
SHOWN_AS = "video"
# what a researcher must know that the check cannot show: the table prints it
NOTE = (
    "its processor class asks for neither the frames' metadata (return_metadata) it reads the times from nor "
    "the token types (return_mm_token_type_ids) its model needs for multimodal positions: verified with a "
    "saved video processor and tokenizer that ask for them; a checkpoint that does not save both fails "
    "(KeyError: 'video_metadata' in the processor, then ValueError: mm_token_type_ids is missing in the model)")

TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for c in m['content'] %}"
    "{% if c['type'] == 'video' %}<|vision_start|><|video_pad|><|vision_end|>{% elif c['type'] == 'image' %}"
    "<|vision_start|><|image_pad|><|vision_end|>{% else %}{{ c['text'] }}{% endif %}{% endfor %}{% endif %}"
    "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
TOKENS = ["<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>"]
TIME_WORDS = "< . > seconds 0 1 2 3 4 5 6 7 8 9"  # the frames' times are words of the prompt
PATCH, MERGE = 8, 2


def make(folder: str, words: list[str]) -> None:
    from transformers import (Cosmos3EdgeConfig, Cosmos3EdgeForConditionalGeneration, Cosmos3EdgeImageProcessor,
                              Cosmos3EdgeProcessor, Cosmos3EdgeVideoProcessor)

    tokenizer = tiny_tokenizer([*words, TIME_WORDS], TOKENS, TEMPLATE)
    # the model needs the token types for its multimodal positions, and the processor returns them
    # only when asked (its class does not ask, unlike Qwen3-VL's): a tokenizer saved with the flag
    # asks on every call
    tokenizer.init_kwargs["return_mm_token_type_ids"] = True
    ids = dict(zip(TOKENS, tokenizer.convert_tokens_to_ids(TOKENS)))
    factor = PATCH * MERGE
    pixels = dict(patch_size=PATCH, merge_size=MERGE)
    images = Cosmos3EdgeImageProcessor(size={"shortest_edge": factor * factor, "longest_edge": 64 * 80}, **pixels)
    # a budget over the whole clip: 8 frames of 64x80 fit, so the frames are only rounded to 16; the
    # processor reads the frames' times from the metadata, which the video processor returns only
    # when asked (the processor does not ask, unlike Qwen3-VL's)
    videos = Cosmos3EdgeVideoProcessor(size={"shortest_edge": factor * factor, "longest_edge": 8 * 64 * 80},
                                       return_metadata=True, **pixels)
    processor = Cosmos3EdgeProcessor(image_processor=images, tokenizer=tokenizer, video_processor=videos,
                                     chat_template=TEMPLATE)
    hidden = 64
    # head_dim 16: 8 rotary frequencies split 4/2/2 over time, height and width
    text = dict(vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=64, num_hidden_layers=2,
                num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=4096,
                rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [4, 2, 2]},
                pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id,
                eos_token_id=tokenizer.eos_token_id)
    vision = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, patch_size=PATCH,
                  spatial_merge_size=MERGE, num_patches=64)
    config = Cosmos3EdgeConfig(text_config=text, vision_config=vision, projector_hidden_size=64,
                               image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
                               vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"])
    Cosmos3EdgeForConditionalGeneration(config).save_pretrained(folder)
    processor.save_pretrained(folder)
