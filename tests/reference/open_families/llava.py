"""LLaVA 1.5 (llava-hf/llava-1.5-7b-hf): a CLIP vision tower, a two-layer projector, Llama.
Its processor takes images only: each frame is an ``<image>`` placeholder the processor widens
to one token per patch (the CLS dropped by the "default" feature selection)."""
from __future__ import annotations

from . import shrink, tiny_tokenizer

MODEL_TYPE = "llava"
SHOWN_AS = "images"

# as the hub template writes a turn: role in capitals, every image first (one per line), then the text
CHAT_TEMPLATE = (
    "{% for message in messages %}{{ message['role'].upper() + ': ' }}"
    "{% if message['content'] is string %}{{ message['content'] + ' ' }}{% else %}"
    "{% for item in message['content'] if item['type'] == 'image' %}{{ '<image>\n' }}{% endfor %}"
    "{% for item in message['content'] if item['type'] == 'text' %}{{ item['text'] + ' ' }}{% endfor %}"
    "{% endif %}{% endfor %}{% if add_generation_prompt %}{{ 'ASSISTANT:' }}{% endif %}")


def make(folder: str, words: list[str]) -> None:
    import torch
    from transformers import (CLIPImageProcessor, CLIPVisionConfig, LlamaConfig, LlavaConfig,
                              LlavaForConditionalGeneration, LlavaProcessor)

    tokenizer = tiny_tokenizer(list(words) + ["USER: ASSISTANT:"], ["<image>"], named_tokens={"image_token": "<image>"},
                               adds_bos=True)
    vision = shrink(CLIPVisionConfig(image_size=28, patch_size=14))
    text = shrink(LlamaConfig(vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id,
                              bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id))
    config = LlavaConfig(vision_config=vision, text_config=text,
                         image_token_index=tokenizer.convert_tokens_to_ids("<image>"), image_seq_length=4)
    torch.manual_seed(0)
    LlavaForConditionalGeneration(config).save_pretrained(folder)
    images = CLIPImageProcessor(size={"shortest_edge": 28}, crop_size={"height": 28, "width": 28})
    LlavaProcessor(image_processor=images, tokenizer=tokenizer, patch_size=14, vision_feature_select_strategy="default",
                   num_additional_image_tokens=1, chat_template=CHAT_TEMPLATE).save_pretrained(folder)
