"""LLaVA-NeXT (llava-hf/llava-v1.6-mistral-7b-hf): LLaVA with any-resolution tiles (a base view
plus the crops of the best grid pinpoint, a newline token per row) and Mistral. Its processor
takes images only; each frame's ``<image>`` is widened to its tiles' patch count."""
from __future__ import annotations

from . import shrink, tiny_tokenizer

MODEL_TYPE = "llava_next"
SHOWN_AS = "images"

# as the hub template writes a user turn: [INST], every image first (one per line), the text, [/INST]
CHAT_TEMPLATE = (
    "{% for message in messages %}{% if message['role'] == 'system' %}"
    "{{ '<<SYS>>\n' + message['content'][0]['text'] + '\n<</SYS>>\n\n' }}"
    "{% elif message['role'] == 'user' %}{{ '[INST] ' }}"
    "{% for item in message['content'] if item['type'] == 'image' %}{{ '<image>\n' }}{% endfor %}"
    "{% for item in message['content'] if item['type'] == 'text' %}{{ item['text'] }}{% endfor %}{{ ' [/INST]' }}"
    "{% else %}{% for item in message['content'] if item['type'] == 'text' %}{{ ' ' + item['text'] }}{% endfor %}"
    "{{ eos_token }}{% endif %}{% endfor %}")
PINPOINTS = [[28, 28], [28, 56], [56, 28], [56, 56]]  # the tiny tiling grid, in pixels (tiles of 28)


def make(folder: str, words: list[str]) -> None:
    import torch
    from transformers import (CLIPVisionConfig, LlavaNextConfig, LlavaNextForConditionalGeneration,
                              LlavaNextImageProcessor, LlavaNextProcessor, MistralConfig)

    tokenizer = tiny_tokenizer(list(words) + ["[INST] [/INST] <<SYS>> <</SYS>>"], ["<image>"],
                               named_tokens={"image_token": "<image>"}, adds_bos=True)
    vision = shrink(CLIPVisionConfig(image_size=28, patch_size=14))
    text = shrink(MistralConfig(vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id,
                                bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id))
    config = LlavaNextConfig(vision_config=vision, text_config=text, image_grid_pinpoints=PINPOINTS,
                             image_token_index=tokenizer.convert_tokens_to_ids("<image>"))
    torch.manual_seed(0)
    LlavaNextForConditionalGeneration(config).save_pretrained(folder)
    images = LlavaNextImageProcessor(size={"shortest_edge": 28}, crop_size={"height": 28, "width": 28},
                                     image_grid_pinpoints=PINPOINTS)
    LlavaNextProcessor(image_processor=images, tokenizer=tokenizer, patch_size=14,
                       vision_feature_select_strategy="default", num_additional_image_tokens=1,
                       chat_template=CHAT_TEMPLATE).save_pretrained(folder)
