"""Mistral Small 3.1 (mistralai/Mistral-Small-3.1-24B-Instruct-2503): a Pixtral vision tower
whose patches are merged 2x2, and Mistral. Its processor (Pixtral's) takes images only; each
frame's ``[IMG]`` becomes a row of image tokens per merged patch row, ``[IMG_BREAK]`` after each
row and ``[IMG_END]`` last."""
from __future__ import annotations

from . import shrink, tiny_tokenizer

MODEL_TYPE = "mistral3"
SHOWN_AS = "images"

# as the hub template writes a user turn: [INST], texts and images in order, [/INST]; the
# template writes the begin token itself
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "{% if message['role'] == 'system' %}{{ '[SYSTEM_PROMPT]' }}{% elif message['role'] == 'user' %}{{ '[INST]' }}"
    "{% endif %}{% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for item in message['content'] %}{% if item['type'] == 'text' %}{{ item['text'] }}"
    "{% elif item['type'] == 'image' %}{{ '[IMG]' }}{% endif %}{% endfor %}{% endif %}"
    "{% if message['role'] == 'system' %}{{ '[/SYSTEM_PROMPT]' }}{% elif message['role'] == 'user' %}{{ '[/INST]' }}"
    "{% else %}{{ eos_token }}{% endif %}{% endfor %}")
PATCH, MERGE = 14, 2


def make(folder: str, words: list[str]) -> None:
    import torch
    from transformers import (Mistral3Config, Mistral3ForConditionalGeneration, MistralConfig, PixtralImageProcessor,
                              PixtralProcessor, PixtralVisionConfig)

    tokenizer = tiny_tokenizer(words, ["[IMG]", "[IMG_BREAK]", "[IMG_END]", "[INST]", "[/INST]", "[SYSTEM_PROMPT]",
                                       "[/SYSTEM_PROMPT]"], adds_bos=True)
    vision = shrink(PixtralVisionConfig(image_size=56, patch_size=PATCH))
    text = shrink(MistralConfig(vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id,
                                bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id))
    config = Mistral3Config(vision_config=vision, text_config=text, spatial_merge_size=MERGE,
                            image_token_index=tokenizer.convert_tokens_to_ids("[IMG]"))
    torch.manual_seed(0)
    Mistral3ForConditionalGeneration(config).save_pretrained(folder)
    images = PixtralImageProcessor(size={"longest_edge": 56}, patch_size={"height": PATCH, "width": PATCH})
    PixtralProcessor(image_processor=images, tokenizer=tokenizer, patch_size=PATCH, spatial_merge_size=MERGE,
                     chat_template=CHAT_TEMPLATE).save_pretrained(folder)
