"""Small image helpers with the standard library only."""
from __future__ import annotations

import base64
import struct
import zlib

import numpy as np


def png(array) -> bytes:
    """A lossless PNG of an RGB uint8 array, with the standard library only."""
    height, width, _ = array.shape
    raw = b"".join(b"\x00" + array[y].tobytes() for y in range(height))

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b"")


def png_data_url(array) -> str:
    return "data:image/png;base64," + base64.b64encode(png(array)).decode()


def thumbnail(array: np.ndarray, height: int = 56) -> np.ndarray:
    """Nearest-neighbour downscale to ``height`` pixels, keeping the aspect ratio."""
    h, w = array.shape[:2]
    if h <= height:
        return array
    width = max(1, round(w * height / h))
    rows = (np.arange(height) * h / height).astype(int)
    cols = (np.arange(width) * w / width).astype(int)
    return np.ascontiguousarray(array[rows][:, cols])
