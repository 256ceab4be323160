"""PaliGemma (google/paligemma-3b-mix-224): a SigLIP tower and Gemma, prompted without chat roles.
Its processor takes images only: the ``<image>`` tokens come first, and the processor itself puts
the begin token after the last of them and a newline after the text."""
from __future__ import annotations

from . import shrink, tiny_tokenizer

MODEL_TYPE = "paligemma"
SHOWN_AS = "images"

# PaliGemma is prompted as "<image>...<image><bos>{prompt}\n" (the processor adds <bos> and the
# newline): the template writes every image, then the texts, with no roles or turn markers
CHAT_TEMPLATE = (
    "{% for message in messages %}{% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for item in message['content'] if item['type'] == 'image' %}{{ '<image>' }}{% endfor %}"
    "{% for item in message['content'] if item['type'] == 'text' %}{{ item['text'] }}{% endfor %}"
    "{% endif %}{% endfor %}")
TOKENS = 4  # per image: 28x28 pixels in patches of 14


def make(folder: str, words: list[str]) -> None:
    import torch
    from transformers import (GemmaConfig, PaliGemmaConfig, PaliGemmaForConditionalGeneration, PaliGemmaProcessor,
                              SiglipImageProcessor, SiglipVisionConfig)

    tokenizer = tiny_tokenizer(words, ["<image>"], named_tokens={"image_token": "<image>"}, adds_bos=True)
    images = SiglipImageProcessor(size={"height": 28, "width": 28})
    images.image_seq_length = TOKENS
    # the processor adds the location and segmentation tokens to the vocabulary: the model is sized after it
    processor = PaliGemmaProcessor(image_processor=images, tokenizer=tokenizer, chat_template=CHAT_TEMPLATE)
    vision = shrink(SiglipVisionConfig(image_size=28, patch_size=14))
    text = shrink(GemmaConfig(vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id,
                              bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id))
    config = shrink(PaliGemmaConfig(vision_config=vision, text_config=text,
                                    image_token_index=tokenizer.convert_tokens_to_ids("<image>")),
                    vocab_size=len(tokenizer))
    config.vision_config.projection_dim = text.hidden_size
    torch.manual_seed(0)
    PaliGemmaForConditionalGeneration(config).save_pretrained(folder)
    processor.save_pretrained(folder)
