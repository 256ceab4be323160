"""Qwen3-VL: 16-pixel patches, 2-frame temporal patches, one pixel budget over the whole clip
(time x height x width), and the time of each temporal patch written into the prompt
(``<0.8 seconds><|vision_start|>...<|vision_end|>`` per patch), from the real times of the
sampled frames."""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ..video_inputs import ProcessorConfig, Timing, UnsupportedFamily, _torch, rescale_and_normalize, resize, to_nchw
from .base import FamilySpec, TinyRecipe
from .qwen2_vl import QwenBuilder, _qwen_text

STANDARD_HALF = (0.5, 0.5, 0.5)  # the video processor's mean and std where the folder names none


def clip_smart_resize(frames: int, height: int, width: int, temporal: int, factor: int, min_pixels: int,
                      max_pixels: int) -> tuple[int, int]:
    """Qwen3-VL's size rule: sides multiples of ``factor`` and the pixels of all the clip's
    temporal patches together (frames rounded to ``temporal``) within the budget."""
    if frames < temporal:
        raise ValueError(f"Qwen3-VL needs at least {temporal} frames per video, got {frames}")
    if height < factor or width < factor:
        scale = max(factor / height, factor / width)
        height, width = int(height * scale), int(width * scale)
    if max(height, width) / min(height, width) > 200:
        raise ValueError(f"aspect ratio {max(height, width) / min(height, width):.0f} is above Qwen's limit of 200")
    h_bar, w_bar = round(height / factor) * factor, round(width / factor) * factor
    t_bar = round(frames / temporal) * temporal
    if t_bar * h_bar * w_bar > max_pixels:
        beta = math.sqrt((frames * height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif t_bar * h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (frames * height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


@dataclass
class Qwen3Builder(QwenBuilder):
    vision_start: str = "<|vision_start|>"
    vision_end: str = "<|vision_end|>"

    def _size(self, frames: int, height: int, width: int, min_pixels: int, max_pixels: int) -> tuple[int, int]:
        factor = self.patch_size * self.merge_size
        if self.cap_pixels_per_frame:  # the budget's even share per frame, at most max_video_tokens patches
            per_frame = max(min(self.max_video_tokens * factor * factor, max_pixels // frames), int(min_pixels * 1.05))
            max_pixels = per_frame * frames
        return clip_smart_resize(frames, height, width, self.temporal_patch_size, factor, min_pixels, max_pixels)

    def video(self, frames, timing):
        torch = _torch()
        clip = to_nchw(frames)
        if self.settings.do_resize:
            height, width = self._size(clip.shape[0], clip.shape[2], clip.shape[3], self.min_pixels, self.max_pixels)
            clip = resize(clip, height, width, self.settings.resample)
        patches, grid = self._patches(rescale_and_normalize(clip, self.settings))
        return {"pixel_values_videos": patches, "video_grid_thw": torch.tensor([grid])}, grid[0] * grid[1] * grid[2] \
            // self.merge_size ** 2

    def images(self, frames):
        raise UnsupportedFamily("timefoil builds Qwen3-VL's video input only (its images go through "
                                "--model-arg preprocess=official)")

    def placeholders(self, token: str, counts, timing: Timing | None) -> list[str]:
        """Per temporal patch: its time (the mean of its frames' times, as the official processor
        averages them), then its tokens between vision start and end."""
        if timing is None or not timing.sampled_fps > 0:
            raise ValueError("Qwen3-VL needs the times of the sampled frames")
        out = []
        for count in counts:
            patches = self._temporal_patches
            times = list(timing.times) or [i / timing.sampled_fps for i in range(patches * self.temporal_patch_size)]
            # the times as the official processor computes them from the metadata timefoil gives
            # it (hf_inputs.video_metadata: index / fps, which is the frame's time itself)
            seconds = list(times)
            seconds += [seconds[-1]] * (-len(seconds) % self.temporal_patch_size)
            per_patch = count // patches
            text = ""
            for p in range(patches):
                first, last = seconds[p * self.temporal_patch_size], seconds[(p + 1) * self.temporal_patch_size - 1]
                text += f"<{(first + last) / 2:.1f} seconds>{self.vision_start}{token * per_patch}{self.vision_end}"
            out.append(text)
        return out

    def _patches(self, video):
        patches, grid = super()._patches(video)
        self._temporal_patches = grid[0]  # read by placeholders, which follows video() for the same frames
        return patches, grid


def vision(spec: FamilySpec, config: ProcessorConfig) -> Qwen3Builder:
    video = config.video
    settings = config.pixels
    if "image_mean" not in video:
        settings = replace(settings, image_mean=STANDARD_HALF, image_std=tuple(video.get("image_std", STANDARD_HALF)))
    size = dict(video.get("size") or {})
    builder = Qwen3Builder(
        family=spec.name, settings=settings, video_token=config.video_token or "<|video_pad|>",
        image_token=config.image_token or "<|image_pad|>", mm_token_types=True,
        min_pixels=int(size.get("shortest_edge", 128 * 32 * 32)),
        max_pixels=int(size.get("longest_edge", 32 * 32 * 768)),
        patch_size=int(video.get("patch_size") or 16), temporal_patch_size=int(video.get("temporal_patch_size") or 2),
        merge_size=int(video.get("merge_size") or 2), cap_pixels_per_frame=bool(video.get("cap_pixels_per_frame")),
        max_video_tokens=int(video.get("max_video_tokens") or 768))
    builder.extras = {k: getattr(builder, k) for k in (
        "min_pixels", "max_pixels", "patch_size", "temporal_patch_size", "merge_size", "cap_pixels_per_frame",
        "max_video_tokens")}
    return builder


def grid_inputs(tower, grid) -> dict:
    """What Qwen3-VL's vision tower (Qwen3.5's and Qwen3-VL-MoE's too) derives from ``grid``
    (a host tensor) in its forward, by the same transformers functions and arguments: the
    position-embedding interpolation, rotary positions and each frame's bounds (sync_free)."""
    from transformers.vision_utils import (get_vision_cu_seqlens, get_vision_interpolation_indices_and_weights,
                                           get_vision_position_ids)

    indices, weights = get_vision_interpolation_indices_and_weights(
        grid, num_grid_per_side=tower.num_grid_per_side, mode=tower.interpolation_mode,
        align_corners=tower.interpolation_align_corners, spatial_merge_size=tower.config.spatial_merge_size)
    return {"interp_indices": indices, "interp_weights": weights,
            "position_ids": get_vision_position_ids(grid, tower.spatial_merge_size),
            "cu_seqlens": get_vision_cu_seqlens(grid)}


def tiny_qwen3_vl(text: dict, ids: dict, hidden: int):
    from transformers import Qwen3VLConfig, Qwen3VLForConditionalGeneration

    text, tokens = _qwen_text(text, ids)
    text = {**text, "head_dim": hidden // text.get("num_attention_heads", 2),
            "rope_parameters": {**text["rope_parameters"], "mrope_interleaved": True}}
    vision_config = dict(depth=2, hidden_size=16, intermediate_size=32, num_heads=2, out_hidden_size=hidden,
                         patch_size=16, temporal_patch_size=2, spatial_merge_size=2, num_position_embeddings=64,
                         deepstack_visual_indexes=[0])
    return Qwen3VLForConditionalGeneration(Qwen3VLConfig(text_config=text, vision_config=vision_config, **tokens))


TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }} {% if m['content'] is string %}{{ m['content'] }}"
    "{% else %}{% for c in m['content'] %}{% if c['type'] == 'video' %}<|vision_start|><|video_pad|><|vision_end|>"
    "{% elif c['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>{% else %}{{ c['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|> {% endfor %}{% if add_generation_prompt %}<|im_start|>assistant {% endif %}")
_PATCHES = {"size": {"shortest_edge": 128 * 32 * 32, "longest_edge": 32 * 32 * 768}, "patch_size": 16,
            "temporal_patch_size": 2, "merge_size": 2, "resample": 3, "image_mean": [0.5, 0.5, 0.5],
            "image_std": [0.5, 0.5, 0.5]}

QWEN3_VL = FamilySpec(
    name="qwen3_vl", title="Qwen3-VL", vision=vision, mrope=True, inputs=("video",), time="text_timestamps",
    grid_inputs=grid_inputs,
    tiny=TinyRecipe(
        chat_template=TEMPLATE,
        video_processor={**_PATCHES, "video_processor_type": "Qwen3VLVideoProcessor", "cap_pixels_per_frame": False,
                         "max_video_tokens": 768},
        image_processor={**_PATCHES, "image_processor_type": "Qwen2VLImageProcessor"},
        processor={"processor_class": "Qwen3VLProcessor"}, model=tiny_qwen3_vl,
        small_video={"size": {"shortest_edge": 32 * 32 * 2, "longest_edge": 64 * 64 * 8}}))
