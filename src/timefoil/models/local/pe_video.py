"""PE-Video (transformers' ``PeVideoModel``): a video-text encoder that scores the clip as a whole.

Its frame encoder embeds every sampled frame, then a temporal transformer reads all of them
together and pools one clip embedding; the text side pools its first token. Scores are the
cosine of those two embeddings (``contrastive.Contrastive`` caches and ranks them).

The pixels are built here with torch alone, from timefoil's own frames as they were sampled:
transformers' ``PeVideoVideoProcessor`` needs torchvision, and it would re-sample frames. Its
steps (``BaseVideoProcessor._preprocess`` in transformers 5.24) are reproduced in order: resize
(bilinear by default, antialiased, as torchvision's tensor resize), optional centre crop, then
the fused rescale and normalise. The class sets no defaults but bilinear resampling and a
1/255 rescale factor, so a step the configuration does not turn on is not done.
"""
from __future__ import annotations

import contextlib
import io
import re
import sys
from dataclasses import dataclass

import numpy as np

from .placement import torch_dtype
from ..torchvision_match import advice
from ..video_inputs import BILINEAR, PixelSettings, center_crop, processor_settings, resize, shortest_edge_size, \
    to_nchw

PE_VIDEO_TYPES = ("pe_video",)


@dataclass(frozen=True)
class PeVideoPixels:
    """The video processor's configured steps, read from the model folder."""

    settings: PixelSettings
    size: dict | None  # {"height", "width"} or {"shortest_edge"}; None: no resize
    crop: dict | None  # {"height", "width"}; None: no centre crop
    convert_rgb: bool

    @staticmethod
    def read(path: str, revision: str | None = None) -> "PeVideoPixels":
        config, _ = processor_settings(path, revision)
        flags = {key: bool(config.get(key)) for key in ("do_resize", "do_center_crop", "do_rescale", "do_normalize")}
        settings = PixelSettings(do_resize=flags["do_resize"], resample=int(config.get("resample") or BILINEAR),
                                 do_rescale=flags["do_rescale"],
                                 rescale_factor=float(config.get("rescale_factor") or 1 / 255),
                                 do_normalize=flags["do_normalize"], image_mean=_triple(config, "image_mean"),
                                 image_std=_triple(config, "image_std"))
        size = _size(config.get("size"), "size") if flags["do_resize"] else None
        crop = _size(config.get("crop_size"), "crop_size") if flags["do_center_crop"] else None
        if crop is not None and "height" not in crop:
            raise ValueError(f"PE-Video's crop_size must give height and width, not {crop}")
        return PeVideoPixels(settings, size, crop, bool(config.get("do_convert_rgb")))

    def __call__(self, frames: np.ndarray):
        """uint8 frames [T, H, W, 3] to ``pixel_values_videos`` [1, T, 3, H', W'] (float32)."""
        from ..video_inputs import rescale_and_normalize

        video = to_nchw(frames)
        if self.size is not None:
            height, width = video.shape[-2:]
            target = ((self.size["height"], self.size["width"]) if "height" in self.size
                      else shortest_edge_size(height, width, self.size["shortest_edge"]))
            video = resize(video, *target, resample=self.settings.resample)
        if self.crop is not None:
            video = center_crop(video, self.crop["height"], self.crop["width"])
        return rescale_and_normalize(video, self.settings).to(_torch().float32)[None]

    def fingerprint(self) -> dict:
        return {"size": self.size, "crop": self.crop, "resample": self.settings.resample,
                "mean": list(self.settings.image_mean), "std": list(self.settings.image_std),
                "rescale": self.settings.rescale_factor if self.settings.do_rescale else None,
                "normalize": self.settings.do_normalize}


class PeVideoInputs:
    """What ``Contrastive`` asks of a processor: the tokenizer, and pixels built by timefoil."""

    image_processor = None

    def __init__(self, path: str, tokenizer, pixels: PeVideoPixels):
        self.path, self.tokenizer, self.pixels = path, tokenizer, pixels

    def __call__(self, text, return_tensors="pt", padding=True, truncation=True):
        return self.tokenizer(text, return_tensors=return_tensors, padding=padding, truncation=truncation)


def video_embedding(model, pixels):
    """The clip embedding: every frame through the video encoder at once, then the video head
    (as ``PeVideoModel.forward`` computes ``video_embeds``)."""
    return model.video_head(model.video_encoder(pixel_values_videos=pixels).pooler_output)


def text_embeddings(model, input_ids, attention_mask):
    """The first token of the text model's last hidden states through the text head (as
    ``PeVideoModel.forward`` computes ``text_video_embeds``)."""
    output = model.text_model(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=True)
    return model.text_video_head(output.hidden_states[-1][:, 0])


def load_pe_video(path: str, dtype: str = "float32"):
    """The model and its inputs; neither the processor nor its torchvision is needed. The frame
    encoder is a timm model: without timm (which needs torchvision) it is refused in one line."""
    from transformers import AutoModel, AutoTokenizer

    pixels = PeVideoPixels.read(path)  # a bad configuration is refused before the weights load
    tokenizer = AutoTokenizer.from_pretrained(path)
    tokenizer.padding_side = "right"  # the text embedding is read at the first position: never a pad
    try:
        with _docstring_notices_dropped():
            model = AutoModel.from_pretrained(path, dtype=torch_dtype(dtype))
    except ImportError as exc:
        reason = " ".join(str(exc).split()).split(". ")[0] or type(exc).__name__
        raise ImportError(f"PE-Video's frame encoder cannot be built here ({reason}); it is a timm model: "
                          f"install timm, which needs a torchvision built for your torch: {advice()}") from None
    return model, PeVideoInputs(path, tokenizer, pixels)


@contextlib.contextmanager
def _docstring_notices_dropped():
    """transformers 5.24 decorates two functions inside ``PeVideoModel.__init__``, so every model
    it builds prints a notice for its own developers ("[ERROR] ... is part of ...'s signature, but
    not documented") on stdout, where a command's output goes. Those lines are dropped; anything
    else printed while the model loads goes to stderr."""
    captured = io.StringIO()
    try:
        with contextlib.redirect_stdout(captured):
            yield
    finally:
        for line in captured.getvalue().splitlines():
            if not re.match(r"\[ERROR\] `\w+` is part of .* but not documented", line):
                print(line, file=sys.stderr)


def _size(value, key: str) -> dict:
    if isinstance(value, int):  # transformers makes an int size square for video processors
        return {"height": value, "width": value}
    if isinstance(value, dict) and ("height" in value and "width" in value):
        return {"height": int(value["height"]), "width": int(value["width"])}
    if isinstance(value, dict) and set(value) == {"shortest_edge"}:
        return {"shortest_edge": int(value["shortest_edge"])}
    raise ValueError(f"PE-Video's video processor {key} must be an integer, height and width, or shortest_edge; "
                     f"got {value!r}")


def _triple(config: dict, key: str) -> tuple:
    value = config.get(key)
    if config.get("do_normalize") and value is None:
        raise ValueError(f"PE-Video's video processor normalises but names no {key}")
    if value is None:
        return (0.0, 0.0, 0.0)
    return tuple(float(v) for v in (value if isinstance(value, (list, tuple)) else [value] * 3))


def _torch():
    import torch

    return torch
