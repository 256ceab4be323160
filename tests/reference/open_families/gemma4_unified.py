"""Gemma 4 unified (one transformer over text and patch embeddings, no vision encoder): the
same turn markup and ``<|video|>`` placeholder as Gemma 4, written out the same way."""
from __future__ import annotations

from . import tiny_tokenizer

MODEL_TYPE = "gemma4_unified"
SHOWN_AS = "video"

# the turn markup of the real template: <bos>, then <|turn>role\n ... <turn|>\n per message
TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|turn>{{ 'model' if m['role'] == 'assistant' else m['role'] }}\n"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for c in m['content'] %}"
    "{% if c['type'] == 'image' %}<|image|>{% elif c['type'] == 'video' %}<|video|>"
    "{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}{% endfor %}{% endif %}<turn|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|turn>model\n{% endif %}")
TOKENS = {"image_token": "<|image|>", "boi_token": "<|image>", "eoi_token": "<image|>",
          "audio_token": "<|audio|>", "boa_token": "<|audio>", "eoa_token": "<audio|>"}


def make(folder: str, words: list[str]) -> None:
    from transformers import (Gemma4UnifiedConfig, Gemma4UnifiedAudioFeatureExtractor,
                              Gemma4UnifiedForConditionalGeneration, Gemma4UnifiedImageProcessor,
                              Gemma4UnifiedProcessor, Gemma4UnifiedVideoProcessor)

    special = [*TOKENS.values(), "<|video|>", "<|turn>", "<turn|>"]
    tokenizer = tiny_tokenizer(words, special, TEMPLATE, named_tokens=TOKENS, adds_bos=True)
    ids = {name: tokenizer.convert_tokens_to_ids(token) for name, token in TOKENS.items()}
    # the smallest budget the processor accepts (70 soft tokens a frame) at 4-pixel patches
    pixels = dict(patch_size=4, pooling_kernel_size=2, max_soft_tokens=70)
    processor = Gemma4UnifiedProcessor(
        feature_extractor=Gemma4UnifiedAudioFeatureExtractor(), image_processor=Gemma4UnifiedImageProcessor(**pixels),
        video_processor=Gemma4UnifiedVideoProcessor(**pixels), tokenizer=tokenizer, chat_template=TEMPLATE,
        image_seq_length=70)
    text = dict(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                num_attention_heads=4, num_key_value_heads=2, head_dim=8, global_head_dim=8, sliding_window=64,
                layer_types=["sliding_attention", "full_attention"], max_position_embeddings=4096,
                pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id,
                eos_token_id=tokenizer.eos_token_id)
    vision = dict(patch_size=4, pooling_kernel_size=2, mm_embed_dim=32, mm_posemb_size=64, output_proj_dims=32)
    config = Gemma4UnifiedConfig(text_config=text, vision_config=vision, audio_config=None,
                                 image_token_id=ids["image_token"], boi_token_id=ids["boi_token"],
                                 eoi_token_id=ids["eoi_token"], audio_token_id=ids["audio_token"],
                                 boa_token_id=ids["boa_token"], eoa_token_index=ids["eoa_token"],
                                 video_token_id=processor.video_token_id)
    Gemma4UnifiedForConditionalGeneration(config).save_pretrained(folder)
    processor.save_pretrained(folder)
