"""Muse Spark: Muse Glimmer's vocabulary, markup and image and video processors, a mixture-of-
experts text model and an audio tower (built tiny; no audio is given, so it is never run)."""
from __future__ import annotations

from .muse_glimmer import MERGE, TEMPLATE, muse_parts, vision_config
from .muse_glimmer import NOTE as GLIMMER_NOTE

MODEL_TYPE = "muse_spark"
SHOWN_AS = "video"
NOTE = GLIMMER_NOTE  # its processor class asks for the frames' metadata no more than Muse Glimmer's does

AUDIO_TOKENS = ["<|audio|>", "<|soft_audio_start|>", "<|soft_audio_end|>"]


def make(folder: str, words: list[str]) -> None:
    from transformers import (MuseSparkConfig, MuseSparkFeatureExtractor, MuseSparkForConditionalGeneration,
                              MuseSparkProcessor)

    tokenizer, images, videos = muse_parts(words, AUDIO_TOKENS)
    processor = MuseSparkProcessor(image_processor=images, video_processor=videos, tokenizer=tokenizer,
                                   feature_extractor=MuseSparkFeatureExtractor(), chat_template=TEMPLATE)
    hidden = 32
    config = MuseSparkConfig(
        # every real layer is a mixture of experts; one dense layer here too, so both kinds of layer run
        text_config=dict(vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, head_dim=8, sliding_window=64,
                         mlp_layer_types=["dense", "sparse"], num_local_experts=4, num_experts_per_tok=2,
                         moe_hidden_size=16, moe_intermediate_size=32, max_position_embeddings=4096,
                         pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id,
                         eos_token_id=tokenizer.eos_token_id),
        vision_config=vision_config(),
        # the stages' downsampling kept (1920 samples a token, the feature extractor's), their widths tiny
        audio_config=dict(hidden_sizes=[8, 8, 16, 16], depths=[1, 1, 1, 1], out_hidden_size=hidden),
        image_token_id=tokenizer.convert_tokens_to_ids("<|patch|>"),
        video_token_id=tokenizer.convert_tokens_to_ids("<|video|>"),
        audio_token_id=tokenizer.convert_tokens_to_ids("<|audio|>"),
        out_hidden_size=32 * MERGE * MERGE, projector_hidden_size=64)
    MuseSparkForConditionalGeneration(config).save_pretrained(folder)
    processor.save_pretrained(folder)
