"""LLaVA-NeXT-Video: CLIP-style frames (shorter side, centre crop), each frame's patches
average-pooled with stride 2 after its class token is dropped: ((crop / patch) / 2)^2 tokens a
frame, 144 for the 7B model's 336-pixel crop and 14-pixel patches."""
from __future__ import annotations

from ..video_inputs import ProcessorConfig
from .base import FamilySpec, TinyRecipe
from .cropped import CroppedVideoBuilder, cropped_builder


def vision(spec: FamilySpec, config: ProcessorConfig) -> CroppedVideoBuilder:
    # the processor counts a frame's tokens as (h // patch) * (w // patch) // 4, whatever its
    # num_additional_image_tokens (which only its images count)
    return cropped_builder(spec, config, patch_size=int(config.processor.get("patch_size") or 14), pool_area=4,
                           extra_tokens=0)


def tiny_model(text: dict, ids: dict, hidden: int):
    from transformers import LlavaNextVideoConfig, LlavaNextVideoForConditionalGeneration

    vision_config = dict(model_type="clip_vision_model", hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, image_size=32, patch_size=8)
    config = LlavaNextVideoConfig(text_config=dict(model_type="llama", **text), vision_config=vision_config,
                                  image_token_index=ids["<image>"], video_token_index=ids["<video>"],
                                  vision_feature_select_strategy="default", vision_feature_layer=-1,
                                  spatial_pool_mode="average", spatial_pool_stride=2, image_grid_pinpoints=[[32, 32]])
    return LlavaNextVideoForConditionalGeneration(config)


# the hub template's layout: "USER: <video>\n{text} ASSISTANT:"
TEMPLATE = (
    "{% for m in messages %}{{ m['role'] | upper }}: {% if m['content'] is string %}{{ m['content'] }}"
    "{% else %}{% for c in m['content'] %}{% if c['type'] == 'video' %}<video>\n{% elif c['type'] == 'image' %}"
    "<image>\n{% else %}{{ c['text'] }}{% endif %}{% endfor %}{% endif %} {% endfor %}"
    "{% if add_generation_prompt %}ASSISTANT: {% endif %}")

CLIP_VIDEO = {"size": {"shortest_edge": 336}, "crop_size": {"height": 336, "width": 336}, "resample": 3,
              "do_resize": True, "do_center_crop": True, "do_rescale": True, "do_normalize": True}

LLAVA_NEXT_VIDEO = FamilySpec(
    name="llava_next_video", title="LLaVA-NeXT-Video", vision=vision,
    inputs=("video",),  # its images go through anyres tiling, which timefoil does not build
    tiny=TinyRecipe(
        chat_template=TEMPLATE,
        video_processor={**CLIP_VIDEO, "video_processor_type": "LlavaNextVideoVideoProcessor"},
        image_processor={"size": {"shortest_edge": 336}, "crop_size": {"height": 336, "width": 336},
                         "image_processor_type": "LlavaNextImageProcessor", "image_grid_pinpoints": [[336, 336]]},
        processor={"processor_class": "LlavaNextVideoProcessor", "patch_size": 14,
                   "vision_feature_select_strategy": "default", "num_additional_image_tokens": 1,
                   "video_token": "<video>", "image_token": "<image>"},
        model=tiny_model, small_video={"size": {"shortest_edge": 32}, "crop_size": {"height": 32, "width": 32}},
        small_processor={"patch_size": 8}, adds_bos=True))
