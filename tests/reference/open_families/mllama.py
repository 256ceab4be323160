"""Llama 3.2 Vision (meta-llama/Llama-3.2-11B-Vision-Instruct): a tiled vision encoder read by
cross-attention layers of the language model. Its processor takes images only; each frame is one
``<|image|>`` token (the text attends to the frame's tiles through a cross-attention mask)."""
from __future__ import annotations

from . import shrink, tiny_tokenizer

MODEL_TYPE = "mllama"
SHOWN_AS = "images"

# as the hub template writes a turn: header, images and texts in order, <|eot_id|>; the template
# writes the begin token itself
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n' }}"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}{% for item in message['content'] %}"
    "{% if item['type'] == 'image' %}{{ '<|image|>' }}{% elif item['type'] == 'text' %}{{ item['text'] }}{% endif %}"
    "{% endfor %}{% endif %}{{ '<|eot_id|>' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}")
TILE = 28  # pixels per tile side (2x2 patches of 14)


def make(folder: str, words: list[str]) -> None:
    import torch
    from transformers import (MllamaConfig, MllamaForConditionalGeneration, MllamaImageProcessor, MllamaProcessor,
                              MllamaTextConfig, MllamaVisionConfig)

    tokenizer = tiny_tokenizer(words, ["<|image|>", "<|python_tag|>", "<|start_header_id|>", "<|end_header_id|>",
                                       "<|eot_id|>"], adds_bos=True)
    # two encoder layers, the first also read out as an intermediate layer, one global layer
    vision = shrink(MllamaVisionConfig(image_size=TILE, patch_size=14, attention_heads=4, num_global_layers=1,
                                       intermediate_layers_indices=[0], vision_output_dim=2 * 32))
    # the second of the two text layers is a cross-attention layer
    text = shrink(MllamaTextConfig(vocab_size=len(tokenizer), cross_attention_layers=[1],
                                   pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id,
                                   eos_token_id=tokenizer.eos_token_id))
    config = MllamaConfig(vision_config=vision, text_config=text,
                          image_token_index=tokenizer.convert_tokens_to_ids("<|image|>"))
    torch.manual_seed(0)
    MllamaForConditionalGeneration(config).save_pretrained(folder)
    images = MllamaImageProcessor(size={"height": TILE, "width": TILE}, max_image_tiles=4)
    MllamaProcessor(image_processor=images, tokenizer=tokenizer, chat_template=CHAT_TEMPLATE).save_pretrained(folder)
