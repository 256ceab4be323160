"""Video LLM inputs built by timefoil itself, with torch alone (no torchvision).

transformers' video processors need torchvision, which many machines cannot install, and
they may re-sample frames. Here the frames are timefoil's own sampling, and each family's
official preprocessing is reproduced step by step so that ``pixel_values_videos``,
``video_grid_thw`` and ``input_ids`` are bit-identical to the official processor's:

1. frames (uint8, NCHW, contiguous) are resized with ``torch.nn.functional.interpolate``
   exactly as torchvision's tensor resize does it on the CPU (bicubic with antialiasing,
   native uint8 kernel; a size that does not change is left alone);
2. rescale and normalise are fused (x - mean*255) / (std*255) in float32;
3. Qwen2-VL / Qwen2.5-VL: the size comes from ``smart_resize``, the frame count is padded to a
   multiple of ``temporal_patch_size`` with the last frame, and patches are flattened in the
   model's order; LLaVA-OneVision: a fixed height and width;
4. the video placeholder token of the chat template is expanded to the number of vision
   tokens, then the text is tokenised; Qwen gets ``mm_token_type_ids`` and Qwen2.5-VL gets
   ``second_per_grid_ts`` from the rate the frames were really sampled at.

Configuration is read in transformers' order: ``processor_config.json`` (entry
``video_processor``), ``video_preprocessor_config.json``, ``preprocessor_config.json``, with
the class defaults for what is absent. The digests in ``tests/data/processor_digests.json``
were made with the official processors; the tests hold this module to them.
"""
from __future__ import annotations

import json
import math
import os
import platform
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

OPENAI_CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
OPENAI_CLIP_STD = (0.26862954, 0.26130258, 0.27577711)
BICUBIC, BILINEAR = 3, 2  # PIL resampling codes, as processor configs store them
SUPPORTED_FAMILIES = ("llava_onevision", "qwen2_vl", "qwen2_5_vl")


class UnsupportedFamily(ValueError):
    """A model type whose video inputs timefoil does not build."""


def _torch():
    import torch

    return torch


# -- configuration ------------------------------------------------------------------------------
def model_file(path: str, filename: str, revision: str | None = None) -> str | None:
    """The local path of a file of a model folder or hub repository, or None when it has none."""
    if os.path.isdir(path):
        full = os.path.join(path, filename)
        return full if os.path.exists(full) else None
    from transformers.utils import cached_file

    return cached_file(path, filename, revision=revision, _raise_exceptions_for_missing_entries=False)


def read_json(path: str, filename: str, revision: str | None = None) -> dict | None:
    """A JSON file of a model folder or hub repository, or None when it has none."""
    full = model_file(path, filename, revision)
    if full is None:
        return None
    with open(full, encoding="utf-8") as handle:
        return json.load(handle)


def processor_settings(path: str, revision: str | None = None, entry: str = "video_processor") -> tuple[dict, dict]:
    """(the video (or image) processor's settings, the processor's own top-level settings),
    looked up in transformers' order."""
    processor = read_json(path, "processor_config.json", revision) or {}
    if entry in processor:
        return dict(processor[entry]), processor
    files = (("video_preprocessor_config.json", "preprocessor_config.json") if entry == "video_processor"
             else ("preprocessor_config.json",))
    for filename in files:
        found = read_json(path, filename, revision)
        if found is not None:
            return found, processor
    return {}, processor


def chat_template(path: str, tokenizer, revision: str | None = None) -> str | None:
    """The processor's chat template (it takes precedence over the tokenizer's)."""
    jinja = model_file(path, "chat_template.jinja", revision)
    if jinja:
        with open(jinja, encoding="utf-8") as handle:
            return handle.read()
    for filename in ("chat_template.json", "processor_config.json"):
        data = read_json(path, filename, revision) or {}
        if isinstance(data.get("chat_template"), str):
            return data["chat_template"]
    return getattr(tokenizer, "chat_template", None)


# -- pixel operations ------------------------------------------------------------------------------
def to_nchw(frames: np.ndarray):
    """uint8 [T, H, W, 3] to a contiguous uint8 tensor [T, 3, H, W], as the processors make it."""
    torch = _torch()
    if frames.dtype != np.uint8 or frames.ndim != 4 or frames.shape[-1] != 3:
        raise ValueError(f"expected uint8 frames [T, H, W, 3], got {frames.dtype} {tuple(frames.shape)}")
    return torch.from_numpy(np.ascontiguousarray(frames)).permute(0, 3, 1, 2).contiguous()


def _native_uint8(resample: int) -> bool:
    """Whether torch resizes uint8 directly (else through float32, then clamp and round)."""
    if resample == BICUBIC:
        return True
    torch = _torch()
    return torch.backends.cpu.get_cpu_capability() in ("AVX2", "AVX512") or platform.machine() in ("aarch64", "arm64")


def resize(video, height: int, width: int, resample: int = BICUBIC):
    """torchvision's tensor resize on the CPU, with torch alone."""
    torch = _torch()
    if resample not in (BICUBIC, BILINEAR):
        raise ValueError(f"resampling mode {resample} is not supported (bicubic=3 and bilinear=2 are)")
    *lead, channels, old_h, old_w = video.shape
    if (old_h, old_w) == (height, width):
        return video
    mode = "bicubic" if resample == BICUBIC else "bilinear"
    flat = video.reshape(-1, channels, old_h, old_w)
    cast = flat.dtype == torch.uint8 and not _native_uint8(resample)
    if cast:
        flat = flat.to(torch.float32)
    out = torch.nn.functional.interpolate(flat, size=[height, width], mode=mode, align_corners=False, antialias=True)
    if cast:
        if resample == BICUBIC:
            out = out.clamp_(0, 255)
        out = out.round_().to(torch.uint8)
    return out.reshape(*lead, channels, height, width)


def rescale_and_normalize(video, settings: "PixelSettings"):
    """The fused step: (x - mean/rescale) / (std/rescale) in float32."""
    torch = _torch()
    if settings.do_rescale and settings.do_normalize:
        mean = torch.tensor(settings.image_mean) * (1.0 / settings.rescale_factor)
        std = torch.tensor(settings.image_std) * (1.0 / settings.rescale_factor)
    else:
        mean, std = torch.tensor(settings.image_mean), torch.tensor(settings.image_std)
    if settings.do_normalize:
        video = video.to(torch.float32)
        return (video - mean.to(torch.float32).view(-1, 1, 1)) / std.to(torch.float32).view(-1, 1, 1)
    if settings.do_rescale:
        return video * settings.rescale_factor
    return video


def smart_resize(height: int, width: int, factor: int, min_pixels: int, max_pixels: int) -> tuple[int, int]:
    """Qwen's size rule: both sides multiples of ``factor``, the area within the pixel budget,
    the aspect ratio kept as closely as possible."""
    if max(height, width) / min(height, width) > 200:
        raise ValueError(f"aspect ratio {max(height, width) / min(height, width):.0f} is above Qwen's limit of 200")
    h_bar, w_bar = round(height / factor) * factor, round(width / factor) * factor
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


@dataclass(frozen=True)
class PixelSettings:
    """What every family's pixel path reads from the processor configuration."""

    do_resize: bool = True
    resample: int = BICUBIC
    do_rescale: bool = True
    rescale_factor: float = 1 / 255
    do_normalize: bool = True
    image_mean: tuple = OPENAI_CLIP_MEAN
    image_std: tuple = OPENAI_CLIP_STD

    @staticmethod
    def read(config: dict) -> "PixelSettings":
        defaults = PixelSettings()
        def pick(key):
            value = config.get(key)
            return getattr(defaults, key) if value is None else value
        return PixelSettings(do_resize=bool(pick("do_resize")), resample=int(pick("resample")),
                             do_rescale=bool(pick("do_rescale")), rescale_factor=float(pick("rescale_factor")),
                             do_normalize=bool(pick("do_normalize")), image_mean=tuple(pick("image_mean")),
                             image_std=tuple(pick("image_std")))


# -- the families ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Timing:
    """When the shown frames were taken: the rate of the sampling, in frames per second."""

    sampled_fps: float


@dataclass
class VisionBuilder(ABC):
    """Pixels and placeholder counts for one model family; subclasses say how."""

    family: str
    settings: PixelSettings
    video_token: str = "<video>"
    image_token: str = "<image>"
    mm_token_types: bool = False  # Qwen's mm_token_type_ids (0 text, 1 image, 2 video)
    extras: dict = field(default_factory=dict)

    @abstractmethod
    def video(self, frames: np.ndarray, timing: Timing | None) -> tuple[dict, int]:
        """(model inputs of one video, its number of placeholder tokens)."""

    def images(self, frames: np.ndarray) -> tuple[dict, list[int]]:
        raise UnsupportedFamily(f"{self.family} takes frames as its video input only (video_as=images is for "
                                f"{', '.join(f for f in SUPPORTED_FAMILIES if f.startswith('qwen'))})")

    def fingerprint(self) -> dict:
        return {"family": self.family, "settings": self.settings.__dict__, "config": self.extras}


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

    def _pixels(self, frames: np.ndarray, min_pixels: int, max_pixels: int):
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


def _qwen_pixels(config: dict) -> tuple[int, int]:
    size = dict(config.get("size") or {})
    low = size.get("shortest_edge", size.get("min_pixels"))
    high = size.get("longest_edge", size.get("max_pixels"))
    low = config.get("min_pixels", low)
    high = config.get("max_pixels", high)
    return low, high


def build_vision(model_type: str, path: str, tokenizer, revision: str | None = None) -> VisionBuilder:
    """The builder of ``model_type`` configured from the model folder or hub id ``path``."""
    if model_type not in SUPPORTED_FAMILIES:
        raise UnsupportedFamily(f"timefoil builds video inputs for {', '.join(SUPPORTED_FAMILIES)}; "
                                f"{model_type!r} is not one of them (text-only models load as causal LMs)")
    video_config, processor = processor_settings(path, revision)
    settings = PixelSettings.read(video_config)
    video_token = getattr(tokenizer, "video_token", None)
    image_token = getattr(tokenizer, "image_token", None)
    if model_type == "llava_onevision":
        size = video_config.get("size") or {}
        builder = LlavaOnevisionBuilder(
            family=model_type, settings=settings,
            video_token=video_token or processor.get("video_token", "<video>"),
            image_token=image_token or processor.get("image_token", "<image>"),
            height=int(size.get("height", 384)), width=int(size.get("width", 384)),
            num_image_tokens=int(processor.get("num_image_tokens") or 729))
        builder.extras = {"height": builder.height, "width": builder.width,
                          "num_image_tokens": builder.num_image_tokens}
        return builder
    defaults = QwenBuilder(family=model_type, settings=settings)
    low, high = _qwen_pixels(video_config)
    image_config, _ = processor_settings(path, revision, entry="image_processor")
    image_low, image_high = _qwen_pixels(image_config)
    builder = QwenBuilder(
        family=model_type, settings=settings,
        video_token=video_token or "<|video_pad|>", image_token=image_token or "<|image_pad|>", mm_token_types=True,
        min_pixels=int(low if low is not None else defaults.min_pixels),
        max_pixels=int(high if high is not None else defaults.max_pixels),
        patch_size=int(video_config.get("patch_size") or defaults.patch_size),
        temporal_patch_size=int(video_config.get("temporal_patch_size") or defaults.temporal_patch_size),
        merge_size=int(video_config.get("merge_size") or defaults.merge_size),
        cap_pixels_per_frame=bool(video_config.get("cap_pixels_per_frame") or False),
        max_video_tokens=int(video_config.get("max_video_tokens") or defaults.max_video_tokens),
        image_min_pixels=int(image_low if image_low is not None else defaults.image_min_pixels),
        image_max_pixels=int(image_high if image_high is not None else defaults.image_max_pixels),
        timed=model_type == "qwen2_5_vl")
    builder.extras = {k: getattr(builder, k) for k in (
        "min_pixels", "max_pixels", "patch_size", "temporal_patch_size", "merge_size", "cap_pixels_per_frame",
        "max_video_tokens", "image_min_pixels", "image_max_pixels", "timed")}
    return builder


# -- text and batches ------------------------------------------------------------------------------
def _one(video: tuple[dict, int]) -> tuple[dict, list[int]]:
    inputs, count = video
    return inputs, [count]


def expand_placeholders(text: str, token: str, counts: Sequence[int]) -> str:
    """Replace the i-th ``token`` in ``text`` with ``counts[i]`` copies of it."""
    pieces = text.split(token)
    if len(pieces) - 1 != len(counts):
        raise ValueError(f"the prompt holds {len(pieces) - 1} {token} placeholders for {len(counts)} inputs")
    out = [pieces[0]]
    for count, piece in zip(counts, pieces[1:]):
        out.append(token * count + piece)
    return "".join(out)


def build_batch(builder: VisionBuilder, tokenizer, texts: Sequence[str], videos: Sequence[np.ndarray | None],
                timings: Sequence[Timing | None] = (), as_images: bool = False, memo: dict | None = None) -> dict:
    """Model inputs for ``texts`` (each holding one placeholder per visual input) and their
    frames, as the official processor returns them (``padding=True``, tensors).

    The pixels of a frames array are computed once, however many texts show it; ``memo``
    carries the last one across calls (the captions of one video, asked one by one)."""
    torch = _torch()
    timings = list(timings) or [None] * len(texts)
    memo = {} if memo is None else memo
    expanded, pieces = [], []
    for text, frames, timing in zip(texts, videos, timings):
        if frames is None:
            expanded.append(text)
            continue
        key = (id(frames), timing, as_images)
        if key in memo and memo[key][0] is frames:  # the array itself is held, so its id is not reused
            inputs, counts = memo[key][1]
        else:
            inputs, counts = builder.images(frames) if as_images else _one(builder.video(frames, timing))
            memo.clear()
            memo[key] = (frames, (inputs, counts))
        expanded.append(expand_placeholders(text, builder.image_token if as_images else builder.video_token, counts))
        pieces.append(inputs)
    batch = dict(tokenizer(list(expanded), return_tensors="pt", padding=True))
    if builder.mm_token_types:
        ids = batch["input_ids"]
        types = torch.zeros_like(ids)
        types[ids == tokenizer.convert_tokens_to_ids(builder.image_token)] = 1
        types[ids == tokenizer.convert_tokens_to_ids(builder.video_token)] = 2
        batch["mm_token_type_ids"] = types
    for key in (pieces[0] if pieces else {}):
        values = [p[key] for p in pieces]
        if key == "second_per_grid_ts":
            batch[key] = torch.tensor([v for vs in values for v in vs])
        else:
            batch[key] = torch.cat(values)
    return batch


__all__ = ["SUPPORTED_FAMILIES", "Timing", "UnsupportedFamily", "VisionBuilder", "build_batch", "build_vision",
           "chat_template", "expand_placeholders", "processor_settings", "resize", "smart_resize"]
