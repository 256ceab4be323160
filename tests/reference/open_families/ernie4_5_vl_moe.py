"""ERNIE 4.5 VL MoE: a vision tower whose frames are merged 2 by 2 in time, a text model
with separate text and vision experts, and a video processor that draws each frame's time
("time: 00:00:01.25") in its corner with a TrueType font saved beside the processor. The tiny
one draws with a system font (DejaVu or Liberation Sans); without one it cannot be made."""
from __future__ import annotations

import os

from . import shrink, tiny_tokenizer

MODEL_TYPE = "ernie4_5_vl_moe"
SHOWN_AS = "video"

FONTS = ["/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
         "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf"]
NAMED = {"image_token": "<|IMAGE_PLACEHOLDER|>", "image_start_token": "<|IMAGE_START|>",
         "image_end_token": "<|IMAGE_END|>", "video_token": "<|VIDEO_PLACEHOLDER|>",
         "video_start_token": "<|VIDEO_START|>", "video_end_token": "<|VIDEO_END|>"}
# the hub template's placement: its begin token, "User: ", each video numbered and wrapped
# ("Video 1:<|VIDEO_START|><|VIDEO_PLACEHOLDER|><|VIDEO_END|>") where it stands in the content,
# then "Assistant: " and an empty thought
TEMPLATE = (
    "<s>{% set videos = namespace(n=0) %}{% set images = namespace(n=0) %}{% for m in messages %}"
    "{% if m['role'] == 'user' %}User: {% elif m['role'] == 'assistant' %}Assistant: {% endif %}"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for c in m['content'] %}"
    "{% if c['type'] == 'video' %}{% set videos.n = videos.n + 1 %}"
    "Video {{ videos.n }}:<|VIDEO_START|><|VIDEO_PLACEHOLDER|><|VIDEO_END|>"
    "{% elif c['type'] == 'image' %}{% set images.n = images.n + 1 %}"
    "Picture {{ images.n }}:<|IMAGE_START|><|IMAGE_PLACEHOLDER|><|IMAGE_END|>"
    "{% else %}{{ c['text'] }}{% endif %}{% endfor %}{% endif %} {% endfor %}"
    "{% if add_generation_prompt %}Assistant: <think> </think> {% endif %}")
TEMPLATE_WORDS = "User Assistant : Video Picture 1 2 3 4 5 6 7 8 9 <think> </think>"


def make(folder: str, words: list[str]) -> None:
    import torch
    from transformers import (Ernie4_5_VLMoeConfig, Ernie4_5_VLMoeForConditionalGeneration,
                              Ernie4_5_VLMoeImageProcessor, Ernie4_5_VLMoeProcessor, Ernie4_5_VLMoeVideoProcessor)

    font = next((path for path in FONTS if os.path.isfile(path)), None)
    if font is None:
        raise FileNotFoundError(f"ERNIE 4.5 VL's video processor draws with a TrueType font; none of {FONTS} is here")
    tok = tiny_tokenizer(list(words) + [TEMPLATE_WORDS], list(NAMED.values()), TEMPLATE, named_tokens=NAMED)
    ids = {name: tok.convert_tokens_to_ids(token) for name, token in NAMED.items()}
    config = shrink(Ernie4_5_VLMoeConfig(**{f"{name}_id": value for name, value in ids.items()}))
    text = config.text_config
    text.vocab_size = len(tok)
    text.mlp_layer_types = ["dense", "sparse"]
    text.moe_num_experts, text.moe_k, text.moe_num_shared_experts = 4, 2, 1
    text.moe_intermediate_size = [32, 16]  # the text experts', the vision experts'
    # 4 rotary frequencies per head of 8: height and width share 2, time has 2
    text.rope_parameters = {**text.rope_parameters, "mrope_section": [1, 1, 2]}
    text.pad_token_id, text.bos_token_id, text.eos_token_id = tok.pad_token_id, tok.bos_token_id, tok.eos_token_id
    torch.manual_seed(0)
    Ernie4_5_VLMoeForConditionalGeneration(config).save_pretrained(folder)

    factor = 14 * 2
    size = {"shortest_edge": factor * factor, "longest_edge": 16 * factor * factor}
    Ernie4_5_VLMoeProcessor(image_processor=Ernie4_5_VLMoeImageProcessor(size=size),
                            video_processor=Ernie4_5_VLMoeVideoProcessor(size=size, font=font),
                            tokenizer=tok, chat_template=TEMPLATE).save_pretrained(folder)
