"""Video-LLaVA: CLIP-style frames (shorter side, centre crop), each frame's patches kept whole
with their class token: (crop / patch)^2 + 1 tokens a frame, 257 for the 7B model's 224-pixel
crop and 14-pixel patches. The 7B model was trained on 8 frames; the processor and the model
take any count, so timefoil shows what its sampling gives."""
from __future__ import annotations

from ..video_inputs import ProcessorConfig
from .base import FamilySpec, TinyRecipe
from .cropped import CroppedVideoBuilder, cropped_builder
from .llava_next_video import TEMPLATE


def vision(spec: FamilySpec, config: ProcessorConfig) -> CroppedVideoBuilder:
    # the processor adds num_additional_image_tokens (the class token) to every frame's patches
    # and, unlike for images, takes none away for vision_feature_select_strategy="default"
    extra = config.processor.get("num_additional_image_tokens")
    return cropped_builder(spec, config, patch_size=int(config.processor.get("patch_size") or 14), pool_area=1,
                           extra_tokens=1 if extra is None else int(extra))


def tiny_model(text: dict, ids: dict, hidden: int):
    from transformers import VideoLlavaConfig, VideoLlavaForConditionalGeneration

    vision_config = dict(model_type="clip_vision_model", hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, image_size=32, patch_size=8)
    config = VideoLlavaConfig(text_config=dict(model_type="llama", **text), vision_config=vision_config,
                              image_token_index=ids["<image>"], video_token_index=ids["<video>"],
                              vision_feature_select_strategy="default", vision_feature_layer=-1,
                              image_seq_length=16, video_seq_length=8 * 17)
    return VideoLlavaForConditionalGeneration(config)


VIDEO_LLAVA = FamilySpec(
    name="video_llava", title="Video-LLaVA", vision=vision,
    inputs=("video",),  # its image processor works in PIL and numpy, a path timefoil does not build
    tiny=TinyRecipe(
        chat_template=TEMPLATE,
        video_processor={"size": {"shortest_edge": 224}, "crop_size": {"height": 224, "width": 224}, "resample": 3,
                         "do_resize": True, "do_center_crop": True, "do_rescale": True, "do_normalize": True,
                         "video_processor_type": "VideoLlavaVideoProcessor"},
        image_processor={"size": {"shortest_edge": 224}, "crop_size": {"height": 224, "width": 224},
                         "image_processor_type": "VideoLlavaImageProcessor"},
        processor={"processor_class": "VideoLlavaProcessor", "patch_size": 14,
                   "vision_feature_select_strategy": "default", "num_additional_image_tokens": 1,
                   "video_token": "<video>", "image_token": "<image>"},
        model=tiny_model, small_video={"size": {"shortest_edge": 32}, "crop_size": {"height": 32, "width": 32}},
        small_processor={"patch_size": 8}, adds_bos=True))
