"""LLaVA-OneVision: every frame resized to a fixed square, a video of frames x 196 + 1 tokens."""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..video_inputs import ProcessorConfig, VisionBuilder, _torch, rescale_and_normalize, resize, to_nchw
from .base import FamilySpec, TinyRecipe


@dataclass
class LlavaOnevisionBuilder(VisionBuilder):
    height: int = 384
    width: int = 384
    num_image_tokens: int = 729

    def video(self, frames, timing):
        torch = _torch()
        video = to_nchw(frames)
        if self.settings.do_resize:
            video = resize(video, self.height, self.width, self.settings.resample)
        pixels = rescale_and_normalize(video, self.settings)
        side = math.ceil(int(math.sqrt(self.num_image_tokens)) / 2)
        count = frames.shape[0] * side * side + 1  # + the newline token
        return {"pixel_values_videos": torch.stack([pixels])}, count


def vision(spec: FamilySpec, config: ProcessorConfig) -> LlavaOnevisionBuilder:
    size = config.video.get("size") or {}
    builder = LlavaOnevisionBuilder(
        family=spec.name, settings=config.pixels,
        video_token=config.video_token or config.processor.get("video_token", "<video>"),
        image_token=config.image_token or config.processor.get("image_token", "<image>"),
        height=int(size.get("height", 384)), width=int(size.get("width", 384)),
        num_image_tokens=int(config.processor.get("num_image_tokens") or 729))
    builder.extras = {"height": builder.height, "width": builder.width, "num_image_tokens": builder.num_image_tokens}
    return builder


def tiny_model(text: dict, ids: dict, hidden: int):
    from transformers import LlavaOnevisionConfig, LlavaOnevisionForConditionalGeneration

    vision_config = dict(model_type="siglip_vision_model", hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, image_size=32, patch_size=8)
    config = LlavaOnevisionConfig(text_config=dict(model_type="qwen2", **text), vision_config=vision_config,
                                  image_token_index=ids["<image>"], video_token_index=ids["<video>"],
                                  vision_feature_select_strategy="full", vision_feature_layer=-1,
                                  image_grid_pinpoints=[[32, 32]])
    return LlavaOnevisionForConditionalGeneration(config)


TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }} {% if m['content'] is string %}{{ m['content'] }}"
    "{% else %}{% for c in m['content'] %}{% if c['type'] == 'video' %}<video> {% elif c['type'] == 'image' %}"
    "<image> {% else %}{{ c['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|> {% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant {% endif %}")

LLAVA_ONEVISION = FamilySpec(
    name="llava_onevision", title="LLaVA-OneVision", vision=vision,
    inputs=("video",),  # its images go through anyres tiling, which timefoil does not build
    tiny=TinyRecipe(
        chat_template=TEMPLATE,
        video_processor={"size": {"height": 384, "width": 384}, "resample": 3, "do_resize": True,
                         "do_rescale": True, "do_normalize": True,
                         "video_processor_type": "LlavaOnevisionVideoProcessor"},
        image_processor={"size": {"height": 384, "width": 384}, "image_processor_type": "LlavaOnevisionImageProcessor",
                         "image_grid_pinpoints": [[384, 384]]},
        processor={"processor_class": "LlavaOnevisionProcessor", "num_image_tokens": 729,
                   "vision_feature_select_strategy": "full", "video_token": "<video>", "image_token": "<image>"},
        model=tiny_model, small_video={"size": {"height": 32, "width": 32}}, small_processor={"num_image_tokens": 16}))
