"""SmolVLM 2: the processor renders a conversation holding a video with its own default template
(``<video>`` where the video is), and writes the video out as an introduction, then each frame's
time and its image tokens."""
from __future__ import annotations

from . import shrink, tiny_tokenizer

MODEL_TYPE = "smolvlm"
SHOWN_AS = "video"

TOKENS = {"image_token": "<image>", "fake_image_token": "<fake_token_around_image>",
          "global_image_token": "<global-img>", "end_of_utterance_token": "<end_of_utterance>",
          "video_token": "<video>"}
# the words of the processor's introduction and frame captions, so they are not unknown tokens
INTRO = "You are provided the following series of eight frames from a video Frame from H MM SS : [ ] 0 00"


def make(folder: str, words: list[str]) -> None:
    from transformers import (SmolVLMConfig, SmolVLMForConditionalGeneration, SmolVLMImageProcessor,
                              SmolVLMProcessor, SmolVLMVideoProcessor)
    from transformers.models.smolvlm.processing_smolvlm import DEFAULT_CHAT_TEMPLATE

    # the template the processor falls back to for a video is the real model's, so it is the one saved
    tokenizer = tiny_tokenizer([*words, INTRO], TOKENS.values(), DEFAULT_CHAT_TEMPLATE, named_tokens=TOKENS)
    side = {"longest_edge": 32}  # every frame is squared to this; 8-pixel patches, merged 2x2: 4 tokens
    processor = SmolVLMProcessor(
        image_processor=SmolVLMImageProcessor(size=side, max_image_size=side, do_image_splitting=False),
        video_processor=SmolVLMVideoProcessor(size=side, max_image_size=side), tokenizer=tokenizer,
        image_seq_len=4, chat_template=DEFAULT_CHAT_TEMPLATE)
    config = SmolVLMConfig(
        text_config=dict(model_type="llama", vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id,
                         bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id),
        vision_config=dict(image_size=32, patch_size=8), scale_factor=2,
        image_token_id=tokenizer.convert_tokens_to_ids(TOKENS["image_token"]), pad_token_id=tokenizer.pad_token_id)
    SmolVLMForConditionalGeneration(shrink(config)).save_pretrained(folder)
    processor.save_pretrained(folder)
