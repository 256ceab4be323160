"""InternVL (transformers' native layout, the InternVL3/3.5 "-hf" checkpoints): a video is
shown as its frames, each one image tile squashed to a fixed size (no crop, no tiling), and
written into the prompt as ``Frame<i>: <img><IMG_CONTEXT>...</img>``, one line per frame."""
from __future__ import annotations

from dataclasses import dataclass

from ..video_inputs import (
    OPENAI_CLIP_MEAN,
    OPENAI_CLIP_STD,
    ProcessorConfig,
    VisionBuilder,
    rescale_and_normalize,
    resize,
    to_nchw,
)
from .base import TINY_SPECIAL, FamilySpec, TinyRecipe

IMAGENET_MEAN = [0.485, 0.456, 0.406]
IMAGENET_STD = [0.229, 0.224, 0.225]
# what the tokenizer names its image tokens by (tokenizer_config.json's extra_special_tokens)
NAMED_TOKENS = {"start_image_token": "<img>", "end_image_token": "</img>", "context_image_token": "<IMG_CONTEXT>",
                "video_token": "<video>"}


@dataclass
class InternVLBuilder(VisionBuilder):
    height: int = 448
    width: int = 448
    image_seq_length: int = 256  # context tokens per tile (per frame)
    start_image_token: str = "<img>"
    end_image_token: str = "</img>"
    context_token: str = "<IMG_CONTEXT>"

    def video(self, frames, timing):
        video = to_nchw(frames)
        if self.settings.do_resize:
            video = resize(video, self.height, self.width, self.settings.resample)
        # the frames go in as image tiles: pixel_values [frames, 3, H, W], one tile each
        return {"pixel_values": rescale_and_normalize(video, self.settings)}, frames.shape[0]

    def placeholders(self, token, counts, timing):
        tile = f"{self.start_image_token}{self.context_token * self.image_seq_length}{self.end_image_token}"
        return ["\n".join(f"Frame{i + 1}: {tile}" for i in range(count)) for count in counts]


def vision(spec: FamilySpec, config: ProcessorConfig) -> InternVLBuilder:
    if config.video.get("do_center_crop"):  # the checkpoints leave it off; built without it, inputs would differ
        raise ValueError("InternVL's video processor is set to centre-crop, which timefoil does not build "
                         "(--model-arg preprocess=official uses the model's own processor)")
    size = config.video.get("size") or {}
    builder = InternVLBuilder(
        family=spec.name, settings=config.pixels, video_token=config.video_token or NAMED_TOKENS["video_token"],
        image_token=config.image_token or NAMED_TOKENS["context_image_token"],
        height=int(size.get("height", 384)), width=int(size.get("width", 384)),  # the class default is 384
        image_seq_length=int(config.processor.get("image_seq_length") or 256))
    builder.extras = {"height": builder.height, "width": builder.width, "image_seq_length": builder.image_seq_length}
    return builder


def tiny_model(text: dict, ids: dict, hidden: int):
    from transformers import InternVLConfig, InternVLForConditionalGeneration

    # 32x32 tiles of 8x8 patches: 16 patches, pixel-shuffled by 0.5 to 4 context tokens
    vision_config = dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                         image_size=[32, 32], patch_size=[8, 8])
    config = InternVLConfig(text_config=dict(model_type="qwen2", **text), vision_config=vision_config,
                            image_token_id=ids["<IMG_CONTEXT>"], image_seq_length=4, downsample_ratio=0.5)
    return InternVLForConditionalGeneration(config)


TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }} {% if m['content'] is string %}{{ m['content'] }}"
    "{% else %}{% for c in m['content'] %}{% if c['type'] == 'video' %}<video> {% elif c['type'] == 'image' %}"
    "<IMG_CONTEXT> {% else %}{{ c['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|> {% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant {% endif %}")

PIXELS = {"do_resize": True, "resample": 3, "do_rescale": True, "rescale_factor": 1 / 255, "do_normalize": True,
          "image_mean": IMAGENET_MEAN, "image_std": IMAGENET_STD}

INTERNVL = FamilySpec(
    name="internvl", title="InternVL", vision=vision,
    inputs=("video",),  # its images are tiled into a variable number of crops, which timefoil does not build
    # on: positions are plain 1-D counts and attention is causal, so the KV cache of a shared prefix
    # (the frames and the instruction before the caption) is the same whatever suffix follows
    prefix_reuse_off=None,
    tiny=TinyRecipe(
        chat_template=TEMPLATE,
        # as the "-hf" checkpoints ship it: the video processor keeps its class defaults (384 square,
        # CLIP mean and std) while the image processor has the 448 tiles and ImageNet statistics
        video_processor={**PIXELS, "size": {"height": 384, "width": 384}, "image_mean": list(OPENAI_CLIP_MEAN),
                         "image_std": list(OPENAI_CLIP_STD), "do_sample_frames": False, "initial_shift": True,
                         "video_processor_type": "InternVLVideoProcessor"},
        image_processor={**PIXELS, "size": {"height": 448, "width": 448}, "crop_to_patches": False,
                         "min_patches": 1, "max_patches": 12, "image_processor_type": "GotOcr2ImageProcessorFast"},
        processor={"processor_class": "InternVLProcessor", "image_seq_length": 256},
        model=tiny_model, small_video={"size": {"height": 32, "width": 32}}, small_processor={"image_seq_length": 4},
        special_tokens=TINY_SPECIAL + ("<img>", "</img>", "<IMG_CONTEXT>"), named_tokens=NAMED_TOKENS))
