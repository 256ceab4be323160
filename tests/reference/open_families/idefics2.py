"""Idefics2 (HuggingFaceM4/idefics2-8b): a SigLIP tower, a perceiver resampler (a fixed number of
latents per image) and Mistral. Its processor takes images only: each frame's ``<image>`` becomes
the latents' tokens between ``<fake_token_around_image>`` tokens, five times with image splitting."""
from __future__ import annotations

from . import shrink, tiny_tokenizer

MODEL_TYPE = "idefics2"
SHOWN_AS = "images"

# as the hub template writes a turn: "User:" (no space before an image), images and texts in
# order, <end_of_utterance> and a newline; the tokenizer adds the begin token
CHAT_TEMPLATE = (
    "{% for message in messages %}{{ message['role'] | capitalize }}"
    "{% if message['content'][0]['type'] == 'image' %}{{ ':' }}{% else %}{{ ': ' }}{% endif %}"
    "{% for line in message['content'] %}{% if line['type'] == 'text' %}{{ line['text'] }}"
    "{% elif line['type'] == 'image' %}{{ '<image>' }}{% endif %}{% endfor %}<end_of_utterance>\n{% endfor %}"
    "{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}")
LATENTS = 4  # tokens per image (per crop with splitting)


def make(folder: str, words: list[str]) -> None:
    import torch
    from transformers import (Idefics2Config, Idefics2ForConditionalGeneration, Idefics2ImageProcessor,
                              Idefics2PerceiverConfig, Idefics2Processor, Idefics2VisionConfig, MistralConfig)

    tokenizer = tiny_tokenizer(list(words) + ["User: Assistant:"],
                               ["<fake_token_around_image>", "<image>", "<end_of_utterance>"], adds_bos=True)
    vision = shrink(Idefics2VisionConfig(image_size=56, patch_size=14))
    perceiver = shrink(Idefics2PerceiverConfig(resampler_n_latents=LATENTS, resampler_depth=1, resampler_n_heads=4,
                                               resampler_head_dim=8))
    text = shrink(MistralConfig(vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id,
                                bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id))
    config = Idefics2Config(vision_config=vision, perceiver_config=perceiver, text_config=text,
                            image_token_id=tokenizer.convert_tokens_to_ids("<image>"),
                            pad_token_id=tokenizer.pad_token_id)
    torch.manual_seed(0)
    Idefics2ForConditionalGeneration(config).save_pretrained(folder)
    images = Idefics2ImageProcessor(size={"shortest_edge": 28, "longest_edge": 56}, do_image_splitting=True)
    Idefics2Processor(image_processor=images, tokenizer=tokenizer, image_seq_len=LATENTS,
                      chat_template=CHAT_TEMPLATE).save_pretrained(folder)
