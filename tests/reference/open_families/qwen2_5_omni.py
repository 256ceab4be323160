"""Qwen2.5-Omni: a thinker (Qwen2.5-VL's vision tower, a Whisper-like audio tower, a text
model) that answers in text, and a talker that speaks the answer. The tiny one has no talker
(``enable_audio_output=False``, as the model card's text-only use); a video is shown without
its sound (the processor's ``load_audio_from_video`` stays off), so the audio tower is built
but never runs."""
from __future__ import annotations

from . import shrink, tiny_tokenizer

MODEL_TYPE = "qwen2_5_omni"
SHOWN_AS = "video"
NOTE = ("answered by its thinker (the talker that speaks is not used); its processor spaces the video's temporal "
        "positions by its own fps argument (default 2.0), not the frames' metadata: timefoil passes the sampling rate")

# the real patches: the processor's own defaults (which outrank the video processor's settings)
# ask for at least 128 * 28 * 28 pixels a frame, 512 tokens for 8 frames of 28-pixel merged patches
PATCH, MERGE, TEMPORAL = 14, 2, 2
NAMED = {"image_token": "<|IMAGE|>", "video_token": "<|VIDEO|>", "audio_token": "<|AUDIO|>",
         "vision_bos_token": "<|vision_bos|>", "vision_eos_token": "<|vision_eos|>",
         "audio_bos_token": "<|audio_bos|>", "audio_eos_token": "<|audio_eos|>"}
# the hub template's placement: <|vision_bos|><|VIDEO|><|vision_eos|> before the text of the
# user turn, after a system turn the template adds when the conversation has none
TEMPLATE = (
    "{% if messages[0]['role'] != 'system' %}<|im_start|>system a video caption<|im_end|> {% endif %}"
    "{% for m in messages %}<|im_start|>{{ m['role'] }} {% if m['content'] is string %}{{ m['content'] }}"
    "{% else %}{% for c in m['content'] %}{% if c['type'] == 'video' %}<|vision_bos|><|VIDEO|><|vision_eos|>"
    "{% elif c['type'] == 'image' %}<|vision_bos|><|IMAGE|><|vision_eos|>"
    "{% elif c['type'] == 'audio' %}<|audio_bos|><|AUDIO|><|audio_eos|>{% else %}{{ c['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|> {% endfor %}{% if add_generation_prompt %}<|im_start|>assistant {% endif %}")


def make(folder: str, words: list[str]) -> None:
    import torch
    from transformers import (Qwen2_5OmniConfig, Qwen2_5OmniForConditionalGeneration, Qwen2_5OmniProcessor,
                              Qwen2VLImageProcessor, Qwen2VLVideoProcessor, WhisperFeatureExtractor)

    tok = tiny_tokenizer(words, ["<|im_start|>", "<|im_end|>", *NAMED.values()], TEMPLATE, named_tokens=NAMED)
    ids = {name: tok.convert_tokens_to_ids(token) for name, token in NAMED.items()}
    config = shrink(Qwen2_5OmniConfig(enable_audio_output=False))
    for sub in (config.thinker_config.text_config, config.talker_config):  # as many layer types as layers
        sub.layer_types = sub.layer_types[:sub.num_hidden_layers]
    thinker = config.thinker_config
    thinker.image_token_index, thinker.video_token_index = ids["image_token"], ids["video_token"]
    thinker.audio_token_index = ids["audio_token"]
    thinker.vision_start_token_id, thinker.vision_end_token_id = ids["vision_bos_token"], ids["vision_eos_token"]
    thinker.audio_start_token_id, thinker.audio_end_token_id = ids["audio_bos_token"], ids["audio_eos_token"]
    thinker.user_token_id = tok.convert_tokens_to_ids("user")
    text = thinker.text_config
    text.vocab_size = len(tok)
    text.rope_parameters = {**text.rope_parameters, "mrope_section": [2, 1, 1]}  # 4 frequencies per head of 8
    text.pad_token_id, text.bos_token_id, text.eos_token_id = tok.pad_token_id, tok.bos_token_id, tok.eos_token_id
    vision = thinker.vision_config
    vision.patch_size, vision.spatial_merge_size, vision.temporal_patch_size = PATCH, MERGE, TEMPORAL
    vision.window_size, vision.fullatt_block_indexes = 2 * PATCH * MERGE, [1]
    thinker.audio_config.output_dim = text.hidden_size
    torch.manual_seed(0)
    Qwen2_5OmniForConditionalGeneration(config).save_pretrained(folder)
    torch.save({"Chelsie": {"bos_token": 0}}, f"{folder}/spk_dict.pt")  # the speakers file loading asks for

    factor = PATCH * MERGE
    pixels = dict(patch_size=PATCH, merge_size=MERGE, temporal_patch_size=TEMPORAL,
                  size={"shortest_edge": factor * factor, "longest_edge": 128 * factor * factor})
    Qwen2_5OmniProcessor(
        image_processor=Qwen2VLImageProcessor(**pixels), video_processor=Qwen2VLVideoProcessor(**pixels),
        feature_extractor=WhisperFeatureExtractor(feature_size=thinker.audio_config.num_mel_bins),
        tokenizer=tok, chat_template=TEMPLATE).save_pretrained(folder)
