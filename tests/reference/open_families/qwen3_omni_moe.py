"""Qwen3-Omni-MoE: a thinker (Qwen3-VL's vision tower with deepstack, an audio tower, a
mixture-of-experts text model) that answers in text, and a talker that speaks the answer. The
tiny one has no talker (``enable_audio_output=False``, as the model card's text-only use); a
video is shown without its sound (the processor's ``load_audio_from_video`` stays off), so the
audio tower is built but never runs."""
from __future__ import annotations

from . import shrink, tiny_tokenizer

MODEL_TYPE = "qwen3_omni_moe"
SHOWN_AS = "video"
NOTE = ("answered by its thinker (the talker that speaks is not used); its processor spaces the video's temporal "
        "positions by its own fps argument (default 1.0), not the frames' metadata: timefoil passes the sampling rate")

# the real patches: the processor's own defaults (which outrank the video processor's settings)
# ask for at least 128 * 32 * 32 pixels a frame, 512 tokens for 8 frames of 32-pixel merged patches
PATCH, MERGE, TEMPORAL = 16, 2, 2
NAMED = {"image_token": "<|image_pad|>", "video_token": "<|video_pad|>", "audio_token": "<|audio_pad|>",
         "vision_bos_token": "<|vision_start|>", "vision_eos_token": "<|vision_end|>",
         "audio_bos_token": "<|audio_start|>", "audio_eos_token": "<|audio_end|>"}
# the hub template's placement: <|vision_start|><|video_pad|><|vision_end|> before the text of
# the user turn
TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }} {% if m['content'] is string %}{{ m['content'] }}"
    "{% else %}{% for c in m['content'] %}{% if c['type'] == 'video' %}<|vision_start|><|video_pad|><|vision_end|>"
    "{% elif c['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif c['type'] == 'audio' %}<|audio_start|><|audio_pad|><|audio_end|>{% else %}{{ c['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|> {% endfor %}{% if add_generation_prompt %}<|im_start|>assistant {% endif %}")


def make(folder: str, words: list[str]) -> None:
    import torch
    from transformers import (Qwen2VLImageProcessor, Qwen2VLVideoProcessor, Qwen3OmniMoeConfig,
                              Qwen3OmniMoeForConditionalGeneration, Qwen3OmniMoeProcessor, WhisperFeatureExtractor)

    tok = tiny_tokenizer(words, ["<|im_start|>", "<|im_end|>", *NAMED.values()], TEMPLATE, named_tokens=NAMED)
    ids = {name: tok.convert_tokens_to_ids(token) for name, token in NAMED.items()}
    config = shrink(Qwen3OmniMoeConfig(enable_audio_output=False))
    predictor = config.talker_config.code_predictor_config  # as many layer types as layers
    predictor.layer_types = predictor.layer_types[:predictor.num_hidden_layers]
    config.im_start_token_id, config.im_end_token_id = (tok.convert_tokens_to_ids(t) for t in ("<|im_start|>",
                                                                                               "<|im_end|>"))
    config.system_token_id, config.user_token_id, config.assistant_token_id = (
        tok.convert_tokens_to_ids(t) for t in ("system", "user", "assistant"))
    thinker = config.thinker_config
    thinker.image_token_id, thinker.video_token_id, thinker.audio_token_id = (
        ids["image_token"], ids["video_token"], ids["audio_token"])
    thinker.vision_start_token_id, thinker.audio_start_token_id = ids["vision_bos_token"], ids["audio_bos_token"]
    thinker.user_token_id = config.user_token_id
    text = thinker.text_config
    text.vocab_size = len(tok)
    text.num_experts, text.num_experts_per_tok, text.moe_intermediate_size = 4, 2, 32
    # 4 rotary frequencies per head of 8, interleaved over time, height and width
    text.rope_parameters = {**text.rope_parameters, "mrope_section": [2, 1, 1], "mrope_interleaved": True}
    text.pad_token_id, text.bos_token_id, text.eos_token_id = tok.pad_token_id, tok.bos_token_id, tok.eos_token_id
    vision = thinker.vision_config
    vision.patch_size, vision.spatial_merge_size, vision.temporal_patch_size = PATCH, MERGE, TEMPORAL
    vision.num_position_embeddings, vision.deepstack_visual_indexes = 64, [0]
    audio = thinker.audio_config
    audio.output_dim, audio.downsample_hidden_size = text.hidden_size, 16
    torch.manual_seed(0)
    Qwen3OmniMoeForConditionalGeneration(config).save_pretrained(folder)

    factor = PATCH * MERGE
    pixels = dict(patch_size=PATCH, merge_size=MERGE, temporal_patch_size=TEMPORAL,
                  size={"shortest_edge": factor * factor, "longest_edge": 128 * factor * factor})
    Qwen3OmniMoeProcessor(
        image_processor=Qwen2VLImageProcessor(**pixels), video_processor=Qwen2VLVideoProcessor(**pixels),
        feature_extractor=WhisperFeatureExtractor(feature_size=audio.num_mel_bins),
        tokenizer=tok, chat_template=TEMPLATE).save_pretrained(folder)
