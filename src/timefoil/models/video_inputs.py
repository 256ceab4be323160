"""Video LLM inputs built by timefoil itself, with torch alone (no torchvision).

transformers' video processors need torchvision, which many machines cannot install, and
they may re-sample frames. Here the frames are timefoil's own sampling, and each family's
official preprocessing is reproduced step by step so that ``pixel_values_videos``,
``video_grid_thw`` and ``input_ids`` are bit-identical to the official processor's. This
module holds what the families share; each family's own steps (its ``VisionBuilder``) live in
``models/families/``:

1. frames (uint8, NCHW, contiguous) are resized with ``torch.nn.functional.interpolate``
   exactly as torchvision's tensor resize does it on the CPU (bicubic or Lanczos with
   antialiasing, native uint8 kernel; a size that does not change is left alone);
2. rescale and normalise are fused (x - mean*255) / (std*255) in float32;
3. Qwen2-VL / Qwen2.5-VL: the size comes from ``smart_resize``, the frame count is padded to a
   multiple of ``temporal_patch_size`` with the last frame, and patches are flattened in the
   model's order; LLaVA-OneVision: a fixed height and width; LLaVA-NeXT-Video and Video-LLaVA:
   the shorter side to a fixed length, then a centre crop;
4. the video placeholder token of the chat template is expanded to the number of vision
   tokens, then the text is tokenised; Qwen gets ``mm_token_type_ids`` and Qwen2.5-VL gets
   ``second_per_grid_ts`` from the rate the frames were really sampled at.

Configuration is read in transformers' order: ``processor_config.json`` (entry
``video_processor``), ``video_preprocessor_config.json``, ``preprocessor_config.json``, with
the class defaults for what is absent. The digests in ``tests/data/processor_digests.json``
were made by the model card's path (the processor's ``apply_chat_template(tokenize=True)``),
batches of unequal prompts included; the tests hold this module to them.
"""
from __future__ import annotations

import contextlib
import contextvars
import math
import os
import platform
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from ..core.jsonfiles import read_json as read_json_file
from .pixel_cache import PixelCache

OPENAI_CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
OPENAI_CLIP_STD = (0.26862954, 0.26130258, 0.27577711)
BICUBIC, BILINEAR, LANCZOS = 3, 2, 1  # PIL resampling codes, as processor configs store them
RESAMPLING_MODES = {BICUBIC: "bicubic", BILINEAR: "bilinear", LANCZOS: "lanczos"}


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
    return read_json_file(full, "model configuration file")


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


@dataclass(frozen=True)
class ProcessorConfig:
    """What a model folder says about its inputs, read in transformers' order: what every
    family's builder is made from."""

    video: dict  # the video processor's settings
    image: dict  # the image processor's settings
    processor: dict  # the processor's own top-level settings (tokens, counts)
    video_token: str | None  # the tokenizer's own placeholder tokens, where it names them
    image_token: str | None

    @staticmethod
    def read(path: str, tokenizer, revision: str | None = None) -> "ProcessorConfig":
        video, processor = processor_settings(path, revision)
        image, _ = processor_settings(path, revision, entry="image_processor")
        return ProcessorConfig(video, image, processor, getattr(tokenizer, "video_token", None),
                               getattr(tokenizer, "image_token", None))

    @property
    def pixels(self) -> "PixelSettings":
        return PixelSettings.read(self.video)


# -- pixel operations ------------------------------------------------------------------------------
# Where the pixels are built: None, on the host by the exact path (torchvision's CPU kernels,
# bit-equal to the official processors); a device (the model's GPU), by the device path: the
# uint8 frames sent from pinned memory, resized in float32 pass by pass as the host's uint8
# kernel does it (``_separable``) and normalised there. The device path's pixels are within two
# uint8 levels of the host path's before normalising, fewer than 5% of them apart at all
# (tests/models/test_pixels_on_device.py).
PIXEL_DEVICE: contextvars.ContextVar = contextvars.ContextVar("timefoil_pixel_device", default=None)


@contextlib.contextmanager
def pixels_on(device):
    """Pixels built inside on ``device`` by the device path (None: on the host, exactly)."""
    token = PIXEL_DEVICE.set(device)
    try:
        yield
    finally:
        PIXEL_DEVICE.reset(token)


def to_nchw(frames: np.ndarray):
    """uint8 [T, H, W, 3] to a contiguous uint8 tensor [T, 3, H, W], as the processors make it
    (on the device of ``pixels_on``, where one is set)."""
    torch = _torch()
    if frames.dtype != np.uint8 or frames.ndim != 4 or frames.shape[-1] != 3:
        raise ValueError(f"expected uint8 frames [T, H, W, 3], got {frames.dtype} {tuple(frames.shape)}")
    # torch.tensor copies where from_numpy would share: a frame store's arrays are read-only
    # (one array for every request of a video), and the permuted copy below is made anyway
    shared = np.ascontiguousarray(frames)
    tensor = torch.from_numpy(shared) if shared.flags.writeable else torch.tensor(shared)
    device = PIXEL_DEVICE.get()
    if device is not None and torch.device(device).type != "cpu":  # uint8 crosses: a quarter of float32's bytes
        tensor = tensor.pin_memory().to(device, non_blocking=True)
    return tensor.permute(0, 3, 1, 2).contiguous()


def _native_uint8(resample: int) -> bool:
    """Whether torch resizes uint8 directly on the host (else through float32, then clamp and round)."""
    if resample in (BICUBIC, LANCZOS):
        return True
    torch = _torch()
    return torch.backends.cpu.get_cpu_capability() in ("AVX2", "AVX512") or platform.machine() in ("aarch64", "arm64")


def resize(video, height: int, width: int, resample: int = BICUBIC):
    """torchvision's tensor resize on the CPU, with torch alone."""
    torch = _torch()
    if resample not in RESAMPLING_MODES:
        raise ValueError(f"resampling mode {resample} is not supported (bicubic=3, bilinear=2 and lanczos=1 are)")
    *lead, channels, old_h, old_w = video.shape
    if (old_h, old_w) == (height, width):
        return video
    mode = RESAMPLING_MODES[resample]
    flat = video.reshape(-1, channels, old_h, old_w)
    if flat.dtype == torch.uint8 and PIXEL_DEVICE.get() is not None and _native_uint8(resample):
        return _separable(flat, height, width, mode).reshape(*lead, channels, height, width)
    cast = flat.dtype == torch.uint8 and not _native_uint8(resample)
    if cast:
        flat = flat.to(torch.float32)
    out = torch.nn.functional.interpolate(flat, size=[height, width], mode=mode, align_corners=False, antialias=True)
    if cast:
        if resample != BILINEAR:
            out = out.clamp_(0, 255)
        out = out.round_().to(torch.uint8)
    return out.reshape(*lead, channels, height, width)


def _separable(flat, height: int, width: int, mode: str):
    """The host's uint8 resize in float32, for a device without that kernel: the rows first,
    then the columns, each pass clamped and rounded to uint8 values as the uint8 kernel stores
    its intermediate (one pass in float32 would keep the overshoot of a sharp edge that the
    uint8 kernel clips between its passes: up to 25 levels apart). Within two levels of it
    (the uint8 kernel's weights are integers)."""
    torch = _torch()
    out = flat.to(torch.float32)
    for size in ([out.shape[-2], width], [height, width]):
        if list(out.shape[-2:]) != size:
            out = torch.nn.functional.interpolate(out, size=size, mode=mode, align_corners=False, antialias=True)
            out = out.clamp_(0, 255).round_()
    return out.to(torch.uint8)


def shortest_edge_size(height: int, width: int, shortest_edge: int) -> tuple[int, int]:
    """The size that brings the shorter side to ``shortest_edge`` keeping the aspect ratio, the
    longer side truncated (not rounded), as torchvision's and transformers' resize compute it."""
    short, long = (width, height) if width <= height else (height, width)
    new_long = int(shortest_edge * long / short)
    return (new_long, shortest_edge) if width <= height else (shortest_edge, new_long)


def center_crop(video, height: int, width: int):
    """transformers' centre crop of a tensor: a side shorter than the crop is first padded with
    zeros (the odd pixel after), then the window starts at the truncated half of the excess."""
    torch = _torch()
    old_h, old_w = video.shape[-2:]
    if height > old_h or width > old_w:
        grow_w, grow_h = max(width - old_w, 0), max(height - old_h, 0)
        video = torch.nn.functional.pad(video, [grow_w // 2, (grow_w + 1) // 2, grow_h // 2, (grow_h + 1) // 2])
        old_h, old_w = video.shape[-2:]
    top, left = int((old_h - height) / 2.0), int((old_w - width) / 2.0)
    return video[..., top:top + height, left:left + width]


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
        mean, std = (v.to(device=video.device, dtype=torch.float32).view(-1, 1, 1) for v in (mean, std))
        return (video - mean) / std
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


# -- what a family's builder does ------------------------------------------------------------------
@dataclass(frozen=True)
class Timing:
    """When the shown frames were taken: the rate of the sampling, in frames per second, and
    each frame's time in seconds (for families that state time in the text)."""

    sampled_fps: float
    times: tuple = ()
    duration: float | None = None  # the clip's length, for a family that states it

@dataclass
class VisionBuilder:
    """Pixels and placeholder counts for one model family; each family's subclass says how,
    for the inputs its ``FamilySpec`` declares (video, images or both)."""

    family: str
    settings: PixelSettings
    video_token: str = "<video>"
    image_token: str = "<image>"
    mm_token_types: bool = False  # Qwen's mm_token_type_ids (0 text, 1 image, 2 video)
    extras: dict = field(default_factory=dict)

    def video(self, frames: np.ndarray, timing: Timing | None) -> tuple[dict, int]:
        """(model inputs of one video, its number of placeholder tokens)."""
        raise UnsupportedFamily(f"timefoil builds no video input for {self.family} (video_as=images shows frames)")

    def images(self, frames: np.ndarray) -> tuple[dict, list[int]]:
        """(model inputs of the frames as images, each one's number of placeholder tokens)."""
        raise UnsupportedFamily(f"{self.family} takes frames as its video input only")

    def placeholders(self, token: str, counts: Sequence[int], timing: Timing | None) -> list[str]:
        """The text standing for each visual input: its placeholder token, repeated. A family
        that states time in its text (timestamps) writes them around the tokens here."""
        return [token * count for count in counts]

    def token_types(self, ids, tokenizer) -> dict:
        """The per-token type inputs the model reads, from the expanded ``input_ids``: Qwen's
        ``mm_token_type_ids`` (0 text, 1 image, 2 video) where ``mm_token_types``, else none."""
        if not self.mm_token_types:
            return {}
        types = _torch().zeros_like(ids)
        types[ids == tokenizer.convert_tokens_to_ids(self.image_token)] = 1
        types[ids == tokenizer.convert_tokens_to_ids(self.video_token)] = 2
        return {"mm_token_type_ids": types}

    def fingerprint(self) -> dict:
        return {"family": self.family, "settings": self.settings.__dict__, "config": self.extras}


# -- text and batches ------------------------------------------------------------------------------
def _one(video: tuple[dict, int]) -> tuple[dict, list[int]]:
    inputs, count = video
    return inputs, [count]


def expand_placeholders(text: str, token: str, counts: Sequence[int]) -> str:
    """Replace the i-th ``token`` in ``text`` with ``counts[i]`` copies of it."""
    return substitute_placeholders(text, token, [token * count for count in counts])


def substitute_placeholders(text: str, token: str, replacements: Sequence[str]) -> str:
    """Replace the i-th ``token`` in ``text`` with ``replacements[i]``."""
    pieces = text.split(token)
    if len(pieces) - 1 != len(replacements):
        raise ValueError(f"the prompt holds {len(pieces) - 1} {token} placeholders for {len(replacements)} inputs")
    out = [pieces[0]]
    for replacement, piece in zip(replacements, pieces[1:]):
        out.append(replacement + piece)
    return "".join(out)


def adds_special_tokens(tokenizer, prompts: Sequence[str]) -> bool:
    """Whether rendered chat prompts are tokenised with the tokenizer's special tokens, as the
    path a model card gives (the processor's ``apply_chat_template(..., tokenize=True)``) does
    it: yes, unless the template already wrote the begin token (Gemma's ``<bos>``), which would
    then stand twice."""
    bos = getattr(tokenizer, "bos_token", None)
    return not (bos and prompts and prompts[0].startswith(bos))


def video_pixels(builder: VisionBuilder, frames: np.ndarray, timing: Timing | None, as_images: bool = False):
    """(model inputs of one video's frames, their placeholder counts): the pixel build."""
    return builder.images(frames) if as_images else _one(builder.video(frames, timing))


def build_batch(builder: VisionBuilder, tokenizer, texts: Sequence[str], videos: Sequence[np.ndarray | None],
                timings: Sequence[Timing | None] = (), as_images: bool = False, memo: PixelCache | None = None,
                token_memo: dict | None = None) -> dict:
    """Model inputs for ``texts`` (each holding one placeholder per visual input) and their
    frames, as the official processor returns them (``padding=True``, tensors).

    The pixels of a frames array are computed once, however many texts show it; ``memo`` (a
    ``PixelCache``) keeps them across calls and threads (the captions of one video, asked one
    by one; the pixels the decode-ahead workers built).
    ``token_memo`` keeps the tokens of texts already tokenised once expanded: a video's
    thousands of placeholder tokens, the same for every video of one shape and sampling."""
    torch = _torch()
    timings = list(timings) or [None] * len(texts)
    memo = PixelCache() if memo is None else memo
    expanded, pieces = [], []
    for text, frames, timing in zip(texts, videos, timings):
        if frames is None:
            expanded.append(text)
            continue
        inputs, counts = memo.get(frames, (timing, as_images), lambda frames=frames, timing=timing: video_pixels(
            builder, frames, timing, as_images))
        token = builder.image_token if as_images else builder.video_token
        expanded.append(substitute_placeholders(text, token, builder.placeholders(token, counts, timing)))
        pieces.append(inputs)
    key = tuple(expanded)
    if token_memo is not None and key in token_memo:
        batch = dict(token_memo[key])
    else:
        batch = dict(tokenizer(list(expanded), return_tensors="pt", padding=True,
                               add_special_tokens=adds_special_tokens(tokenizer, expanded)))
        batch.update(builder.token_types(batch["input_ids"], tokenizer))
        if token_memo is not None:
            if len(token_memo) >= 8:  # a few shapes and samplings at a time
                token_memo.clear()
            token_memo[key] = dict(batch)
    for key in (pieces[0] if pieces else {}):
        values = [p[key] for p in pieces]
        if key == "second_per_grid_ts":
            batch[key] = torch.tensor([v for vs in values for v in vs])
        else:  # one video's pixels as they are: a copy of a 7B model's input is some 28 MB
            batch[key] = values[0] if len(values) == 1 else torch.cat(values)
    return batch


__all__ = ["PixelSettings", "ProcessorConfig", "Timing", "UnsupportedFamily", "VisionBuilder", "adds_special_tokens",
           "build_batch", "LANCZOS", "PIXEL_DEVICE", "pixels_on",
           "center_crop", "chat_template", "expand_placeholders", "processor_settings", "rescale_and_normalize",
           "resize", "shortest_edge_size", "smart_resize", "substitute_placeholders", "to_nchw", "video_pixels"]
