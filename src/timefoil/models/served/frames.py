"""What a served model is shown, encoded once per sample: base64 images (or a clip), kept for
every request that shows the same sample."""
from __future__ import annotations

import base64
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

from ...core.imaging import png
from ...core.once import OnceEach

IMAGE_FORMATS = ("jpeg", "png", "webp")


@dataclass(frozen=True)
class Encoded:
    """One shown medium: its MIME type and its bytes in base64."""

    mime: str
    data: str

    @property
    def url(self) -> str:
        return f"data:{self.mime};base64,{self.data}"


def encode_image(array, image_format: str, quality: int = 90) -> Encoded:
    """One frame. PNG is lossless (and written without Pillow); JPEG and WebP are lossy at ``quality``."""
    if image_format == "png":
        return Encoded("image/png", base64.b64encode(png(array)).decode())
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(array).save(buffer, format=image_format.upper(), quality=int(quality))
    return Encoded(f"image/{image_format}", base64.b64encode(buffer.getvalue()).decode())


def image_url(array, image_format: str, quality: int = 90) -> str:
    """One frame as a data URL."""
    return encode_image(array, image_format, quality).url


class NotSendable(ValueError):
    """A request the provider cannot be sent as asked (more images than it takes, a clip it
    cannot be shown): that request's one-line error, never cut short or sent otherwise."""


class EncodedFrames:
    """The encoded media of each shown sample, built once per (video, sampling, format) and
    reused by every request that shows it (both option orders, every caption of a video),
    within a memory bound (least recently used out first)."""

    def __init__(self, max_bytes: int = 256 * 1024**2):
        self.max_bytes, self.used = max_bytes, 0
        self.entries: OrderedDict[str, list[Encoded]] = OrderedDict()
        self.building = OnceEach()
        self.lock = threading.Lock()
        self.last_encoded = 0.0  # monotonic time of the latest encoding (when the last sample was ready)
        self.encodes = 0

    def get(self, key: str, build) -> list[Encoded]:
        """The sample's media; a thread asking for one another thread is building waits for it."""
        return self._cached(key) or self.building.run(key, lambda: self._cached(key) or self._keep(key, build()))

    def _cached(self, key: str) -> list[Encoded] | None:
        with self.lock:
            if key in self.entries:
                self.entries.move_to_end(key)
                return self.entries[key]
        return None

    def _keep(self, key: str, media: list[Encoded]) -> list[Encoded]:
        with self.lock:
            self.encodes += 1
            self.last_encoded = time.monotonic()
            self.entries[key] = media
            self.used += sum(len(m.data) for m in media)
            while self.used > self.max_bytes and len(self.entries) > 1:
                _, old = self.entries.popitem(last=False)
                self.used -= sum(len(m.data) for m in old)
        return media
