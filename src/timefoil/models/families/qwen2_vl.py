"""Qwen2-VL and Qwen2.5-VL: ``smart_resize`` sizes, 2-frame temporal patches, 3-D rotary
positions; Qwen2.5-VL also hears the seconds each temporal patch spans."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..video_inputs import ProcessorConfig, VisionBuilder, _torch, rescale_and_normalize, resize, smart_resize, to_nchw
from .base import FamilySpec, TinyRecipe


@dataclass
class QwenBuilder(VisionBuilder):
    min_pixels: int = 128 * 28 * 28
    max_pixels: int = 28 * 28 * 768
    patch_size: int = 14
    temporal_patch_size: int = 2
    merge_size: int = 2
    cap_pixels_per_frame: bool = False
    max_video_tokens: int = 128000
    image_min_pixels: int = 56 * 56
    image_max_pixels: int = 28 * 28 * 1280
    timed: bool = False  # Qwen2.5-VL: temporal positions follow second_per_grid_ts

    def _size(self, frames: int, height: int, width: int, min_pixels: int, max_pixels: int) -> tuple[int, int]:
        factor = self.patch_size * self.merge_size
        if self.cap_pixels_per_frame:
            budget = int(self.max_video_tokens * factor * factor * 0.9)
            max_pixels = max(min(max_pixels, budget * self.temporal_patch_size // frames), int(min_pixels * 1.05))
        return smart_resize(height, width, factor, min_pixels, max_pixels)

    def _patches(self, video) -> tuple[Any, list[int]]:
        """[T, C, H, W] float to [(T/tp) * (H/p) * (W/p), C * tp * p * p] in the model's order."""
        torch = _torch()
        frames, channels, height, width = video.shape
        if pad := -frames % self.temporal_patch_size:
            video = torch.cat((video, video[-1:].expand(pad, -1, -1, -1)), dim=0)
            frames += pad
        p, m, tp = self.patch_size, self.merge_size, self.temporal_patch_size
        t, h, w = frames // tp, height // p, width // p
        patches = video.reshape(1, t, tp, channels, h // m, m, p, w // m, m, p)
        patches = patches.permute(0, 1, 4, 7, 5, 8, 3, 2, 6, 9)
        return patches.reshape(t * h * w, channels * tp * p * p), [t, h, w]

    def _pixels(self, frames, min_pixels: int, max_pixels: int):
        video = to_nchw(frames)
        if self.settings.do_resize:
            height, width = self._size(video.shape[0], video.shape[2], video.shape[3], min_pixels, max_pixels)
            video = resize(video, height, width, self.settings.resample)
        return self._patches(rescale_and_normalize(video, self.settings))

    def video(self, frames, timing):
        torch = _torch()
        patches, grid = self._pixels(frames, self.min_pixels, self.max_pixels)
        out = {"pixel_values_videos": patches, "video_grid_thw": torch.tensor([grid])}
        if self.timed:
            if timing is None or not timing.sampled_fps > 0:
                raise ValueError("Qwen2.5-VL needs the rate the frames were sampled at")
            out["second_per_grid_ts"] = [self.temporal_patch_size / timing.sampled_fps]
        return out, grid[0] * grid[1] * grid[2] // self.merge_size ** 2

    def images(self, frames):
        torch = _torch()
        parts, grids = [], []
        for frame in frames:
            patches, grid = self._pixels(frame[None], self.image_min_pixels, self.image_max_pixels)
            parts.append(patches)
            grids.append(grid)
        counts = [t * h * w // self.merge_size ** 2 for t, h, w in grids]
        return {"pixel_values": torch.cat(parts), "image_grid_thw": torch.tensor(grids)}, counts


def _pixel_budget(config: dict) -> tuple[int | None, int | None]:
    size = dict(config.get("size") or {})
    low = size.get("shortest_edge", size.get("min_pixels"))
    high = size.get("longest_edge", size.get("max_pixels"))
    return config.get("min_pixels", low), config.get("max_pixels", high)


def vision(spec: FamilySpec, config: ProcessorConfig) -> QwenBuilder:
    defaults = QwenBuilder(family=spec.name, settings=config.pixels)
    video = config.video
    low, high = _pixel_budget(video)
    image_low, image_high = _pixel_budget(config.image)
    builder = QwenBuilder(
        family=spec.name, settings=config.pixels, video_token=config.video_token or "<|video_pad|>",
        image_token=config.image_token or "<|image_pad|>", mm_token_types=True,
        min_pixels=int(low if low is not None else defaults.min_pixels),
        max_pixels=int(high if high is not None else defaults.max_pixels),
        patch_size=int(video.get("patch_size") or defaults.patch_size),
        temporal_patch_size=int(video.get("temporal_patch_size") or defaults.temporal_patch_size),
        merge_size=int(video.get("merge_size") or defaults.merge_size),
        cap_pixels_per_frame=bool(video.get("cap_pixels_per_frame") or False),
        max_video_tokens=int(video.get("max_video_tokens") or defaults.max_video_tokens),
        image_min_pixels=int(image_low if image_low is not None else defaults.image_min_pixels),
        image_max_pixels=int(image_high if image_high is not None else defaults.image_max_pixels),
        timed=spec.time == "second_per_grid_ts")
    builder.extras = {k: getattr(builder, k) for k in (
        "min_pixels", "max_pixels", "patch_size", "temporal_patch_size", "merge_size", "cap_pixels_per_frame",
        "max_video_tokens", "image_min_pixels", "image_max_pixels", "timed")}
    return builder


def grid_inputs(tower, grid) -> dict:
    """What Qwen2-VL's and Qwen2.5-VL's vision towers derive from ``grid`` (a host tensor) in
    their forward, by the same transformers functions and arguments: rotary positions, each
    frame's bounds and, for Qwen2.5-VL, its windows' order and bounds (sync_free)."""
    from transformers.vision_utils import get_vision_cu_seqlens, get_vision_position_ids, get_vision_window_index

    inputs = {"position_ids": get_vision_position_ids(grid, tower.spatial_merge_size),
              "cu_seqlens": get_vision_cu_seqlens(grid)}
    if hasattr(tower, "fullatt_block_indexes"):  # Qwen2.5-VL: windowed attention between its full ones
        inputs["window_index"], inputs["cu_window_seqlens"] = get_vision_window_index(
            grid, spatial_merge_size=tower.spatial_merge_size, window_size=tower.window_size,
            patch_size=tower.patch_size)
    return inputs


def _qwen_text(text: dict, ids: dict) -> tuple[dict, dict]:
    """The text config with m-RoPE sections, and the vision token ids."""
    text = {**text, "rope_parameters": {"rope_type": "default", "mrope_section": [2, 1, 1], "rope_theta": 10000.0}}
    tokens = dict(image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
                  vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"])
    return text, tokens


def tiny_qwen2_vl(text: dict, ids: dict, hidden: int):
    from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration

    text, tokens = _qwen_text(text, ids)
    vision_config = dict(depth=1, embed_dim=16, hidden_size=hidden, num_heads=2, mlp_ratio=2)
    return Qwen2VLForConditionalGeneration(Qwen2VLConfig(text_config=text, vision_config=vision_config, **tokens))


def tiny_qwen2_5_vl(text: dict, ids: dict, hidden: int):
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration

    text, tokens = _qwen_text(text, ids)
    vision_config = dict(depth=1, hidden_size=16, intermediate_size=32, num_heads=2, out_hidden_size=hidden,
                         window_size=56, fullatt_block_indexes=[0], tokens_per_second=2)
    return Qwen2_5_VLForConditionalGeneration(Qwen2_5_VLConfig(text_config=text, vision_config=vision_config,
                                                               **tokens))


TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }} {% if m['content'] is string %}{{ m['content'] }}"
    "{% else %}{% for c in m['content'] %}{% if c['type'] == 'video' %}<|vision_start|><|video_pad|><|vision_end|>"
    "{% elif c['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>{% else %}{{ c['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|> {% endfor %}{% if add_generation_prompt %}<|im_start|>assistant {% endif %}")
_CLIP_NORMALISATION = {"image_mean": [0.48145466, 0.4578275, 0.40821073],
                       "image_std": [0.26862954, 0.26130258, 0.27577711]}
_PATCHES = {"min_pixels": 3136, "max_pixels": 28 * 28 * 256, "patch_size": 14, "temporal_patch_size": 2,
            "merge_size": 2, "resample": 3, **_CLIP_NORMALISATION}


def _recipe(processor_class: str, model) -> TinyRecipe:
    return TinyRecipe(
        chat_template=TEMPLATE,
        video_processor={**_PATCHES, "video_processor_type": "Qwen2VLVideoProcessor", "cap_pixels_per_frame": False},
        image_processor={**_PATCHES, "image_processor_type": "Qwen2VLImageProcessor"},
        processor={"processor_class": processor_class}, model=model,
        small_video={"min_pixels": 28 * 28, "max_pixels": 56 * 56})


QWEN2_VL = FamilySpec(name="qwen2_vl", title="Qwen2-VL", vision=vision, mrope=True, inputs=("video", "images"),
                      tiny=_recipe("Qwen2VLProcessor", tiny_qwen2_vl), grid_inputs=grid_inputs)
QWEN2_5_VL = FamilySpec(name="qwen2_5_vl", title="Qwen2.5-VL", vision=vision, mrope=True, inputs=("video", "images"),
                        time="second_per_grid_ts", tiny=_recipe("Qwen2_5_VLProcessor", tiny_qwen2_5_vl),
                        grid_inputs=grid_inputs)
