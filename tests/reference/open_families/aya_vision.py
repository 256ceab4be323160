"""Aya Vision (CohereLabs/aya-vision-8b): a SigLIP tower whose patches are pixel-shuffled 2x2, and
Cohere 2. Its processor takes images only: each frame is cut into tiles plus a global view, each
``TILE_i`` / ``TILE_GLOBAL`` followed by its ``<|IMG_PATCH|>`` tokens, between
``<|START_OF_IMG|>`` and ``<|END_OF_IMG|>``."""
from __future__ import annotations

from . import shrink, tiny_tokenizer

MODEL_TYPE = "aya_vision"
SHOWN_AS = "images"

# as the hub template writes a turn: <|START_OF_TURN_TOKEN|>, the role's token, images and texts
# in order, <|END_OF_TURN_TOKEN|>; the template writes the begin token itself
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}{{ '<|START_OF_TURN_TOKEN|>' }}"
    "{% if message['role'] == 'user' %}{{ '<|USER_TOKEN|>' }}{% elif message['role'] == 'system' %}"
    "{{ '<|SYSTEM_TOKEN|>' }}{% else %}{{ '<|CHATBOT_TOKEN|>' }}{% endif %}"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}{% for item in message['content'] %}"
    "{% if item['type'] == 'image' %}{{ '<image>' }}{% elif item['type'] == 'text' %}{{ item['text'] }}{% endif %}"
    "{% endfor %}{% endif %}{{ '<|END_OF_TURN_TOKEN|>' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>' }}{% endif %}")
TILE, PATCH, SHUFFLE = 56, 14, 2  # each tile: 4x4 patches, 2x2 tokens after the shuffle
SPECIAL = ["<image>", "<|START_OF_IMG|>", "<|END_OF_IMG|>", "<|IMG_PATCH|>", "<|IMG_LINE_BREAK|>",
           "<|START_OF_TURN_TOKEN|>", "<|END_OF_TURN_TOKEN|>", "<|USER_TOKEN|>", "<|CHATBOT_TOKEN|>",
           "<|SYSTEM_TOKEN|>"]


def make(folder: str, words: list[str]) -> None:
    import torch
    from transformers import (AyaVisionConfig, AyaVisionForConditionalGeneration, AyaVisionProcessor, Cohere2Config,
                              GotOcr2ImageProcessor, SiglipVisionConfig)

    # the tiles are named in plain text (TILE_1 ... TILE_6, TILE_GLOBAL), which splits at the underscore
    tile_words = ["TILE _ GLOBAL 1 2 3 4 5 6"]
    tokenizer = tiny_tokenizer(list(words) + tile_words, SPECIAL, adds_bos=True)
    vision = shrink(SiglipVisionConfig(image_size=TILE, patch_size=PATCH, vision_use_head=False))
    # layer_types (sliding or full attention) are laid out for the layer count given here
    text = shrink(Cohere2Config(vocab_size=len(tokenizer), num_hidden_layers=2, pad_token_id=tokenizer.pad_token_id,
                                bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id))
    config = AyaVisionConfig(vision_config=vision, text_config=text, downsample_factor=SHUFFLE,
                             image_token_index=tokenizer.convert_tokens_to_ids("<|IMG_PATCH|>"))
    torch.manual_seed(0)
    AyaVisionForConditionalGeneration(config).save_pretrained(folder)
    images = GotOcr2ImageProcessor(size={"height": TILE, "width": TILE}, crop_to_patches=True, min_patches=1,
                                   max_patches=6)
    AyaVisionProcessor(image_processor=images, tokenizer=tokenizer, patch_size=PATCH, img_size=TILE,
                       downsample_factor=SHUFFLE, chat_template=CHAT_TEMPLATE).save_pretrained(folder)
