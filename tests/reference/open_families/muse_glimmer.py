"""Muse Glimmer: a Llama 4 vocabulary and turn markup; the template writes a video as
``<|video|>`` in the user turn before its text, and the processor writes it out between
``<|vid_start|>`` and ``<|vid_end|>``, each temporal patch after its time ("Time: 1.0s") and
separated by ``<|vid_frame_separator|>``."""
from __future__ import annotations

from . import tiny_tokenizer

MODEL_TYPE = "muse_glimmer"
SHOWN_AS = "video"
# what a researcher must know that the check cannot show: the table prints it
NOTE = (
    "its processor reads the frames' times from metadata its video processor returns only when asked "
    "(return_metadata), which the processor class does not ask for: verified with a saved video processor "
    "that returns it; a checkpoint that does not save it fails in the processor (KeyError: 'video_metadata')")

# Llama 4's markup: <|begin_of_text|>, then <|header_start|>role<|header_end|>\n\n ... <|eot|> per message
TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|header_start|>{{ m['role'] }}<|header_end|>\n\n"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for c in m['content'] %}"
    "{% if c['type'] == 'video' %}<|video|>{% elif c['type'] == 'image' %}<|patch|>"
    "{% else %}{{ c['text'] }}{% endif %}{% endfor %}{% endif %}<|eot|>{% endfor %}"
    "{% if add_generation_prompt %}<|header_start|>assistant<|header_end|>\n\n{% endif %}")
TOKENS = ["<|header_start|>", "<|header_end|>", "<|eot|>", "<|patch|>", "<|image_start|>", "<|image_end|>",
          "<|video|>", "<|vid_frame_separator|>", "<|vid_start|>", "<|vid_end|>"]
TIME_WORDS = "Time : . " + " ".join(f"{d} {d}s" for d in range(10))  # "Time: 1.5s" is words of the prompt
PATCH, MERGE, TEMPORAL = 8, 2, 2


def make(folder: str, words: list[str]) -> None:
    from transformers import MuseGlimmerConfig, MuseGlimmerForConditionalGeneration, MuseGlimmerProcessor

    tokenizer, images, videos = muse_parts(words)
    processor = MuseGlimmerProcessor(image_processor=images, video_processor=videos, tokenizer=tokenizer,
                                     chat_template=TEMPLATE)
    config = MuseGlimmerConfig(
        text_config=dict(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, head_dim=8, sliding_window=64,
                         pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id,
                         eos_token_id=tokenizer.eos_token_id, max_position_embeddings=4096),
        vision_config=vision_config(),
        image_token_id=tokenizer.convert_tokens_to_ids("<|patch|>"),
        video_token_id=tokenizer.convert_tokens_to_ids("<|video|>"),
        out_hidden_size=32 * MERGE * MERGE, projector_hidden_size=64)
    MuseGlimmerForConditionalGeneration(config).save_pretrained(folder)
    processor.save_pretrained(folder)


def muse_parts(words, extra_tokens=()):
    """The tokenizer and the image and video processors that Muse Glimmer and Muse Spark share."""
    from transformers import MuseGlimmerImageProcessor, MuseGlimmerVideoProcessor

    # the real tokenizer puts <|begin_of_text|> first; here it is the word tokenizer's <s>
    tokenizer = tiny_tokenizer([*words, TIME_WORDS], [*TOKENS, *extra_tokens], TEMPLATE, adds_bos=True)
    pixels = dict(patch_size=PATCH, merge_size=MERGE, temporal_patch_size=TEMPORAL)
    # at most 20 merged tokens a frame: 60x80 becomes 64x80, 4x5 tokens per temporal patch; the
    # processor reads the frames' times from the video processor's metadata, which it returns only
    # when asked (the processor does not ask, unlike Qwen3-VL's)
    videos = MuseGlimmerVideoProcessor(max_video_frame_tokens=20, return_metadata=True, **pixels)
    return tokenizer, MuseGlimmerImageProcessor(max_image_tokens=20, **pixels), videos


def vision_config() -> dict:
    # pos_emb 8x8 patches: the 8x10 grid of a frame is interpolated from it, as the real 32x32 table is
    return dict(patch_size=PATCH, merge_size=MERGE, patch_temporal=TEMPORAL, hidden_size=32, intermediate_size=64,
                num_hidden_layers=2, num_attention_heads=4, pos_emb_height=8, pos_emb_width=8,
                max_position_embeddings=64)
