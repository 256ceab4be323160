"""LFM2-VL (LiquidAI/LFM2-VL-450M): a SigLIP2 NaFlex tower (native aspect ratio) whose patches are
pixel-unshuffled 2x2, and LFM2 (convolution and attention blocks). Its processor takes images
only: each frame's ``<image>`` becomes its tokens between ``<|image_start|>`` and
``<|image_end|>`` (large frames are tiled, ``<|img_row_i_col_j|>`` before each tile and a
``<|img_thumbnail|>`` view)."""
from __future__ import annotations

from . import shrink, tiny_tokenizer

MODEL_TYPE = "lfm2_vl"
SHOWN_AS = "images"

# as the hub template writes a turn (ChatML): <|im_start|>role, images and texts in order,
# <|im_end|>; the template writes the begin token itself
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' }}"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}{% for item in message['content'] %}"
    "{% if item['type'] == 'image' %}{{ '<image>' }}{% elif item['type'] == 'text' %}{{ item['text'] }}{% endif %}"
    "{% endfor %}{% endif %}{{ '<|im_end|>\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")
PATCH, TILE, MAX_TILES = 16, 64, 4  # a tile: 4x4 patches, 2x2 tokens after the unshuffle
SPECIAL = (["<image>", "<|image_start|>", "<|image_end|>", "<|img_thumbnail|>", "<|im_start|>", "<|im_end|>"]
           + [f"<|img_row_{i}_col_{j}|>" for i in range(1, MAX_TILES + 1) for j in range(1, MAX_TILES + 1)])


def make(folder: str, words: list[str]) -> None:
    import torch
    from transformers import (Lfm2Config, Lfm2VlConfig, Lfm2VlForConditionalGeneration, Lfm2VlImageProcessor,
                              Lfm2VlProcessor, Siglip2VisionConfig)

    tokenizer = tiny_tokenizer(words, SPECIAL, named_tokens={"image_token": "<image>"}, adds_bos=True)
    # position embeddings for up to 8x8 patches, resized to each frame's patch grid
    vision = shrink(Siglip2VisionConfig(patch_size=PATCH, num_patches=64, vision_use_head=False))
    # layer_types (convolution or attention) are laid out for the layer count given here: one of each
    text = shrink(Lfm2Config(vocab_size=len(tokenizer), num_hidden_layers=2, full_attn_idxs=[1],
                             pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id,
                             eos_token_id=tokenizer.eos_token_id))
    config = Lfm2VlConfig(vision_config=vision, text_config=text, downsample_factor=2, projector_hidden_size=32,
                          image_token_id=tokenizer.convert_tokens_to_ids("<image>"))
    torch.manual_seed(0)
    Lfm2VlForConditionalGeneration(config).save_pretrained(folder)
    images = Lfm2VlImageProcessor(encoder_patch_size=PATCH, tile_size=TILE, downsample_factor=2, min_image_tokens=4,
                                  max_image_tokens=16, min_tiles=2, max_tiles=MAX_TILES,
                                  size={"height": TILE, "width": TILE})
    Lfm2VlProcessor(image_processor=images, tokenizer=tokenizer, chat_template=CHAT_TEMPLATE).save_pretrained(folder)
