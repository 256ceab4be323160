"""Idefics3 (HuggingFaceM4/Idefics3-8B-Llama3): a SigLIP tower whose patches are pixel-shuffled
(scale factor 2), and Llama 3. Its processor takes images only: each frame is split into tiles
(``<row_i_col_j>`` tags) plus a global view (``<global-img>``), each between
``<fake_token_around_image>`` tokens."""
from __future__ import annotations

from . import shrink, tiny_tokenizer

MODEL_TYPE = "idefics3"
SHOWN_AS = "images"

# as the hub template writes a turn: "User:" (a colon without space before an image), images and
# texts in order, <end_of_utterance> and a newline; the begin token is written by the template
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}{{ message['role'] | capitalize }}"
    "{% if message['content'][0]['type'] == 'image' %}{{ ':' }}{% else %}{{ ': ' }}{% endif %}"
    "{% for line in message['content'] %}{% if line['type'] == 'text' %}{{ line['text'] }}"
    "{% elif line['type'] == 'image' %}{{ '<image>' }}{% endif %}{% endfor %}<end_of_utterance>\n{% endfor %}"
    "{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}")
TILE = 56  # the vision tower's image size: each tile is 4x4 patches of 14, 4 tokens after the shuffle
SPECIAL = (["<fake_token_around_image>", "<image>", "<end_of_utterance>", "<global-img>"]
           + [f"<row_{i}_col_{j}>" for i in range(1, 7) for j in range(1, 7)])


def make(folder: str, words: list[str]) -> None:
    import torch
    from transformers import (Idefics3Config, Idefics3ForConditionalGeneration, Idefics3ImageProcessor,
                              Idefics3Processor, Idefics3VisionConfig, LlamaConfig)

    tokenizer = tiny_tokenizer(list(words) + ["User: Assistant:"], SPECIAL, adds_bos=True)
    vision = shrink(Idefics3VisionConfig(image_size=TILE, patch_size=14))
    text = shrink(LlamaConfig(vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id,
                              bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id))
    config = Idefics3Config(vision_config=vision, text_config=text, scale_factor=2,
                            image_token_id=tokenizer.convert_tokens_to_ids("<image>"),
                            pad_token_id=tokenizer.pad_token_id)
    torch.manual_seed(0)
    Idefics3ForConditionalGeneration(config).save_pretrained(folder)
    images = Idefics3ImageProcessor(size={"longest_edge": 2 * TILE}, max_image_size={"longest_edge": TILE})
    Idefics3Processor(image_processor=images, tokenizer=tokenizer, image_seq_len=(TILE // 14) ** 2 // 4,
                      chat_template=CHAT_TEMPLATE).save_pretrained(folder)
