"""dots3-note: Qwen2-VL's image processor and Qwen3-VL's video processor with one frame per
temporal patch (its vision tower embeds 2-D patches), a placeholder ``<|video_pad|>`` per merged
patch, no times in the prompt. The template follows the dots family's (``<|user|>...<|endofuser|>``,
an image as ``<|img|><|imgpad|><|endofimg|>``); where it puts a video is not published with the
processor, so the video placeholder stands where the image block stands. Its audio tower is
there (tiny) but no audio is given: the processor and model take video and text alone."""
from __future__ import annotations

from . import tiny_tokenizer

MODEL_TYPE = "dots3_note"
SHOWN_AS = "video"

CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for item in m['content'] %}"
    "{% if item['type'] == 'video' %}<|video_pad|>{% elif item['type'] == 'image' %}<|img|><|imgpad|><|endofimg|>"
    "{% elif item['type'] == 'text' %}{{ item['text'] }}{% endif %}{% endfor %}{% endif %}"
    "<|endof{{ m['role'] }}|>{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}")
SPECIAL = ["<|system|>", "<|endofsystem|>", "<|user|>", "<|endofuser|>", "<|assistant|>", "<|endofassistant|>",
           "<|img|>", "<|imgpad|>", "<|endofimg|>", "<|video_pad|>", "<|audio_comp_pad|>"]
PATCH, MERGE = 4, 2


def make(folder: str, words: list[str]) -> None:
    from transformers import (Dots3NoteConfig, Dots3NoteFeatureExtractor, Dots3NoteForConditionalGeneration,
                              Dots3NoteProcessor, Qwen2VLImageProcessor, Qwen3VLVideoProcessor)

    tokenizer = tiny_tokenizer(words, SPECIAL, CHAT_TEMPLATE)
    ids = dict(zip(SPECIAL, tokenizer.convert_tokens_to_ids(SPECIAL)))
    # latent attention in both kinds of layer (indexed sparse and sliding window), a dense then an
    # expert MLP; the config requires as many key/value heads as query heads
    latent = dict(num_attention_heads=2, num_key_value_heads=2, q_lora_rank=16, kv_lora_rank=16, head_dim=16,
                  qk_nope_head_dim=8, v_head_dim=8)
    text = dict(vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id,
                eos_token_id=tokenizer.eos_token_id, hidden_size=32, intermediate_size=64, moe_intermediate_size=16,
                shared_experts_intermediate_size=16, num_hidden_layers=2, first_k_dense_replace=1,
                layer_types=["indexed_attention", "sliding_attention"], sliding_window=16, qk_rope_head_dim=8,
                index_topk=16, index_head_dim=8, index_n_heads=2, n_routed_experts=4, num_experts_per_tok=2,
                n_group=1, topk_group=1, max_position_embeddings=4096, **latent,
                **{f"swa_{name}": value for name, value in latent.items()})
    vision = dict(hidden_size=32, intermediate_size=64, moe_intermediate_size=16, num_hidden_layers=2,
                  num_attention_heads=2, patch_size=PATCH, spatial_merge_size=MERGE, adapter_merge_size=MERGE,
                  adapter_in_dim=32, adapter_out_dim=32, pyramid_num_routed=[-1, 4], num_experts_per_tok=2)
    audio = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
                 downsample_hidden_size=8, adapter_input_size=32, adapter_out_dim=32)
    config = Dots3NoteConfig(text_config=text, vision_config=vision, audio_config=audio,
                             image_token_id=ids["<|imgpad|>"], video_token_id=ids["<|video_pad|>"],
                             audio_token_id=ids["<|audio_comp_pad|>"])
    Dots3NoteForConditionalGeneration(config).save_pretrained(folder)
    pixels = {"patch_size": PATCH, "merge_size": MERGE, "temporal_patch_size": 1}
    # the video budget counts the pixels of all frames: 8 frames of 60x80 become 24x32
    images = Qwen2VLImageProcessor(size={"shortest_edge": 64, "longest_edge": 32 * 32}, **pixels)
    videos = Qwen3VLVideoProcessor(size={"shortest_edge": 64, "longest_edge": 8 * 24 * 32}, **pixels)
    Dots3NoteProcessor(image_processor=images, tokenizer=tokenizer, video_processor=videos,
                       feature_extractor=Dots3NoteFeatureExtractor(), chat_template=CHAT_TEMPLATE,
                       ).save_pretrained(folder)
