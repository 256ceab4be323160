"""The CLIP-style video path that LLaVA-NeXT-Video and Video-LLaVA share: each frame's shorter
side resized to a fixed length, a centre crop, then rescale and normalise. The families differ
only in how many tokens a frame becomes (pooling, a class token), which their factories set."""
from __future__ import annotations

from dataclasses import dataclass

from ..video_inputs import (
    ProcessorConfig,
    VisionBuilder,
    _torch,
    center_crop,
    rescale_and_normalize,
    resize,
    shortest_edge_size,
    to_nchw,
)


@dataclass
class CroppedVideoBuilder(VisionBuilder):
    shortest_edge: int | None = 224  # None: a fixed height and width instead (``size``)
    size: tuple[int, int] | None = None
    crop: tuple[int, int] | None = (224, 224)  # None: no centre crop
    patch_size: int = 14
    pool_area: int = 1  # patches averaged into one token (a stride-2 pool: 4)
    extra_tokens: int = 0  # tokens added to each frame's patches (a class token: 1)

    def video(self, frames, timing):
        torch = _torch()
        video = to_nchw(frames)
        if self.settings.do_resize:
            height, width = (shortest_edge_size(*video.shape[-2:], self.shortest_edge) if self.shortest_edge
                             else self.size)
            video = resize(video, height, width, self.settings.resample)
        if self.crop:
            video = center_crop(video, *self.crop)
        pixels = rescale_and_normalize(video, self.settings)
        height, width = pixels.shape[-2:]
        per_frame = (height // self.patch_size) * (width // self.patch_size) // self.pool_area + self.extra_tokens
        return {"pixel_values_videos": torch.stack([pixels])}, frames.shape[0] * per_frame


def cropped_builder(spec, config: ProcessorConfig, *, patch_size: int, pool_area: int,
                    extra_tokens: int) -> CroppedVideoBuilder:
    """The builder of a family on this path, its sizes read from the video processor's settings
    (the class defaults of both families where absent: shorter side 224, a 224 x 224 crop)."""
    size = config.video.get("size") or {"shortest_edge": 224}
    if "longest_edge" in size or ("shortest_edge" not in size and not ("height" in size and "width" in size)):
        raise ValueError(f"{spec.name}: video processor size {size} is neither a shortest edge alone nor a height "
                         "and width")
    crop = config.video.get("crop_size") or {"height": 224, "width": 224}
    do_crop = config.video.get("do_center_crop")
    builder = CroppedVideoBuilder(
        family=spec.name, settings=config.pixels,
        video_token=config.video_token or config.processor.get("video_token", "<video>"),
        image_token=config.image_token or config.processor.get("image_token", "<image>"),
        shortest_edge=int(size["shortest_edge"]) if "shortest_edge" in size else None,
        size=None if "shortest_edge" in size else (int(size["height"]), int(size["width"])),
        crop=None if do_crop is False else (int(crop["height"]), int(crop["width"])),
        patch_size=patch_size, pool_area=pool_area, extra_tokens=extra_tokens)
    builder.extras = {"shortest_edge": builder.shortest_edge, "size": builder.size, "crop": builder.crop,
                      "patch_size": patch_size, "pool_area": pool_area, "extra_tokens": extra_tokens}
    return builder
