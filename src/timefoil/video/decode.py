"""Frame-exact decoding with PyAV, and the typed errors a run records per item."""
from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass
from fractions import Fraction
from typing import Sequence

import numpy as np


class VideoError(Exception):
    """A video that cannot be used; the runner records ``str(error)`` for each item."""

    kind = "video"

    def __init__(self, path: str, reason: str):
        super().__init__(f"{self.kind}: {path}: {reason}")
        self.path, self.reason = path, reason


class VideoMissing(VideoError):
    kind = "missing video"


class VideoEmpty(VideoError):
    kind = "empty video"


class VideoUndecodable(VideoError):
    kind = "undecodable video"


@dataclass(frozen=True)
class VideoInfo:
    n_frames: int
    fps: float
    width: int
    height: int
    rate_guessed: bool = False  # no timestamps (a raw elementary stream): the rate is the decoder's guess


# Elementary streams carry no timestamps: their rate is a guess (FFmpeg assumes 25 fps).
RAW_FORMATS = {"h264", "hevc", "m4v", "mjpeg", "rawvideo", "mpegvideo", "vc1", "av1", "obu", "ivf"}


def _open(path: str):
    import av

    if not os.path.exists(path):
        raise VideoMissing(path, "no such file")
    if os.path.getsize(path) == 0:
        raise VideoEmpty(path, "file has 0 bytes")
    try:
        container = av.open(path)
    except Exception as exc:  # PyAV raises several FFmpeg error classes
        raise VideoUndecodable(path, f"cannot open ({type(exc).__name__}: {exc})") from None
    if not container.streams.video:
        container.close()
        raise VideoUndecodable(path, "no video stream")
    return container


def _frame_rate(stream) -> Fraction:
    rate = stream.average_rate or stream.guessed_rate or stream.base_rate
    if not rate:
        raise VideoUndecodable(str(stream.container.name), "unknown frame rate")
    return Fraction(rate)


@contextmanager
def _opened(path: str):
    """An open container; any decoder failure inside becomes a ``VideoUndecodable``."""
    container = _open(path)
    try:
        yield container
    except VideoError:
        raise
    except Exception as exc:
        raise VideoUndecodable(path, f"{type(exc).__name__}: {exc}") from None
    finally:
        container.close()


def probe(path: str) -> VideoInfo:
    """Frame count and rate; counts by demuxing when the container does not say."""
    with _opened(path) as container:
        stream = container.streams.video[0]
        rate = _frame_rate(stream)
        n = stream.frames
        if not n:
            n = sum(1 for packet in container.demux(stream) if packet.size)
        if n <= 0:
            raise VideoEmpty(path, "no frames")
        formats = set((container.format.name or "").split(","))
        return VideoInfo(n_frames=int(n), fps=float(rate), width=stream.codec_context.width,
                         height=stream.codec_context.height,
                         rate_guessed=bool(formats & RAW_FORMATS) or not stream.average_rate)


def decode_indices(path: str, indices: Sequence[int], resize: tuple[int, int] | None = None) -> np.ndarray:
    """Frames at ``indices`` (any order, repeats allowed) as uint8 [n, height, width, 3].

    Index i means the frame on screen at time i / rate: the last frame whose presentation
    timestamp is at or before it. For constant-rate video that is exactly frame i; for a
    variable-rate video it is the frame a viewer sees then. One forward pass from the nearest
    keyframe before the first wanted time."""
    wanted = sorted(set(indices))
    if not wanted:
        raise ValueError("no frames requested")
    found: dict[int, np.ndarray] = {}
    with _opened(path) as container:
        stream = container.streams.video[0]
        rate = _frame_rate(stream)
        base = stream.time_base
        origin = stream.start_time or 0
        first_time = Fraction(wanted[0]) / rate
        if first_time > 2:  # seek only when it saves decoding a meaningful stretch
            container.seek(int((first_time - 1) / base) + origin, stream=stream, backward=True)
        kwargs = {"format": "rgb24"}
        if resize:
            kwargs.update(width=int(resize[0]), height=int(resize[1]))
        targets = iter(wanted)
        target = next(targets, None)
        shown, shown_at, sequential = None, Fraction(0), 0  # the frame on screen so far, and since when
        for frame in container.decode(stream):
            at = Fraction(frame.pts - origin) * base if frame.pts is not None else Fraction(sequential) / rate
            sequential += 1
            # every wanted time before this frame's shows the previous frame (or this one, first)
            while target is not None and Fraction(target) / rate < at:
                found[target] = (shown if shown is not None else frame).to_ndarray(**kwargs)
                target = next(targets, None)
            if target is None:
                break
            shown, shown_at = frame, at
        # wanted times after the last frame began: it is still on screen for about a frame (longer
        # means the file ends before its frames do: truncated)
        while target is not None and shown is not None and Fraction(target) / rate < shown_at + 2 / rate:
            found[target] = shown.to_ndarray(**kwargs)
            target = next(targets, None)
    missing = [i for i in wanted if i not in found]
    if missing:
        raise VideoUndecodable(path, f"frames {missing[:5]}{'...' if len(missing) > 5 else ''} "
                                     f"could not be decoded (truncated file?)")
    return np.stack([found[i] for i in indices])


def write_video(path: str, frames: Sequence[np.ndarray] | np.ndarray, fps: int, lossless: bool = True) -> None:
    """Write RGB frames to mp4. Lossless H.264 (RGB) keeps pixels exact, so identical
    rendered frames decode identically wherever they sit in the video."""
    import av

    frames = list(frames)
    height, width = frames[0].shape[:2]
    with av.open(str(path), "w") as container:
        if lossless:
            stream = container.add_stream("libx264rgb", rate=fps)
            stream.pix_fmt = "rgb24"
            stream.options = {"qp": "0", "preset": "ultrafast"}
        else:
            stream = container.add_stream("libx264", rate=fps)
            stream.pix_fmt = "yuv420p"
        stream.width, stream.height = width, height
        for array in frames:
            for packet in stream.encode(av.VideoFrame.from_ndarray(np.ascontiguousarray(array), format="rgb24")):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
