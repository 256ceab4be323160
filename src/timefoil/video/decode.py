"""Frame-exact decoding with PyAV, and the typed errors a run records per item."""
from __future__ import annotations

import os
import re
from contextlib import contextmanager
from dataclasses import dataclass
from fractions import Fraction
from typing import Sequence

import numpy as np

from ..core.hashing import NotRegularFile, regular_file


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


class VideoUnreadable(VideoError):
    """Not a regular file (a directory, FIFO, device) or not readable: never opened."""

    kind = "unreadable video"


class VideoTooLarge(VideoError):
    """Frames above the pixel budget: refused before a single one is decoded."""

    kind = "video too large"


# 8K UHD: every camera and dataset video in use fits; a frame beyond it (a 189 KB file can say
# 8000x8000) would hold hundreds of MB per decoded frame. TIMEFOIL_MAX_FRAME_PIXELS overrides it.
DEFAULT_MAX_FRAME_PIXELS = 7680 * 4320
BUDGET_VARIABLE = "TIMEFOIL_MAX_FRAME_PIXELS"


def frame_pixel_budget() -> int:
    """Pixels one frame may have: TIMEFOIL_MAX_FRAME_PIXELS as a count ("33177600") or a size
    ("7680x4320"), else 8K UHD."""
    text = os.environ.get(BUDGET_VARIABLE, "").strip().lower()
    if not text:
        return DEFAULT_MAX_FRAME_PIXELS
    match = re.fullmatch(r"(\d+)(?:\s*x\s*(\d+))?", text)
    pixels = int(match.group(1)) * int(match.group(2) or 1) if match else 0
    if pixels < 1:
        raise ValueError(f"{BUDGET_VARIABLE}: expected a pixel count (33177600) or a size (7680x4320), "
                         f"got {text!r}")
    return pixels


@dataclass(frozen=True)
class VideoInfo:
    n_frames: int
    fps: float
    width: int  # as shown: after the rotation
    height: int
    rate_guessed: bool = False  # no timestamps (a raw elementary stream): the rate is the decoder's guess
    rotation: int = 0  # degrees counter-clockwise the frames are turned to be shown upright (as ffprobe says)
    # when the first frame is shown, in the stream's time base: time 0 of the indices. Not the
    # stream's start time, which AVI gives as 0 where its B-frame delay stamps the first frame 1
    # (every index would get the frame before it), nor the first packet's, which an MP4 edit list may cut
    first_pts: int = 0


# Elementary streams carry no timestamps: their rate is a guess (FFmpeg assumes 25 fps).
RAW_FORMATS = {"h264", "hevc", "m4v", "mjpeg", "rawvideo", "mpegvideo", "vc1", "av1", "obu", "ivf"}


def _open(path: str, max_pixels: int | None):
    import av

    try:
        size = regular_file(path).st_size  # before opening: a FIFO would block, a device never end
    except FileNotFoundError:
        raise VideoMissing(path, "no such file") from None
    except NotRegularFile as exc:
        raise VideoUnreadable(path, f"{exc.what}, not a regular file") from None
    except OSError as exc:
        raise VideoUnreadable(path, exc.strerror or type(exc).__name__) from None
    if size == 0:
        raise VideoEmpty(path, "file has 0 bytes")
    try:
        container = av.open(path)
    except PermissionError:
        raise VideoUnreadable(path, "permission denied") from None
    except Exception as exc:  # PyAV raises several FFmpeg error classes
        raise VideoUndecodable(path, f"cannot open ({_ffmpeg_says(exc)})") from None
    if not container.streams.video:
        container.close()
        raise VideoUndecodable(path, "no video stream")
    codec = container.streams.video[0].codec_context
    budget = frame_pixel_budget() if max_pixels is None else max_pixels
    if codec.width * codec.height > budget:  # the container says; nothing is decoded yet
        container.close()
        raise VideoTooLarge(path, f"{codec.width}x{codec.height} frames ({codec.width * codec.height:,} pixels) "
                                  f"exceed the limit of {budget:,} pixels per frame ({BUDGET_VARIABLE})")
    return container


def _frame_rate(stream) -> Fraction:
    rate = stream.average_rate or stream.guessed_rate or stream.base_rate
    if not rate:
        raise VideoUndecodable(str(stream.container.name), "unknown frame rate")
    return Fraction(rate)


def _ffmpeg_says(exc: Exception) -> str:
    """FFmpeg's reason in its own words, without the errno number and the path again."""
    import av

    if isinstance(exc, av.FFmpegError) and exc.strerror:
        return exc.strerror
    return f"{type(exc).__name__}: {exc}"


@contextmanager
def _opened(path: str, max_pixels: int | None):
    """An open container; any decoder failure inside becomes a ``VideoUndecodable``."""
    container = _open(path, max_pixels)
    try:
        yield container
    except VideoError:
        raise
    except Exception as exc:
        raise VideoUndecodable(path, f"cannot decode ({_ffmpeg_says(exc)})") from None
    finally:
        container.close()


def _quarter_turns(rotation: float) -> int:
    """Counter-clockwise quarter turns that show a frame upright (0 to 3); players turn by the
    display matrix's angle, which is a multiple of 90 degrees in every camera's output."""
    return round(rotation / 90) % 4


def _turned(turns: int) -> int:
    """Quarter turns in degrees, in ffprobe's range (-180, 180]: -90 for a phone held upright."""
    return (0, 90, 180, -90)[turns]


def probe(path: str, max_pixels: int | None = None) -> VideoInfo:
    """Frame count, rate, size as shown and rotation; counts by demuxing when the container does
    not say. The rotation is the first frame's display matrix (the decoder attaches it to
    frames), so probing decodes one frame."""
    with _opened(path, max_pixels) as container:
        stream = container.streams.video[0]
        rate = _frame_rate(stream)
        n, counted, first = stream.frames, 0, None
        for packet in container.demux(stream):
            counted += bool(packet.size)
            if first is None:
                first = next(iter(stream.decode(packet)), None)
            if first is not None and n:
                break
        n = n or counted
        if n <= 0:
            raise VideoEmpty(path, "no frames")
        turns = _quarter_turns(first.rotation) if first is not None else 0
        width, height = stream.codec_context.width, stream.codec_context.height
        formats = set((container.format.name or "").split(","))
        return VideoInfo(n_frames=int(n), fps=float(rate), width=height if turns % 2 else width,
                         height=width if turns % 2 else height,
                         rate_guessed=bool(formats & RAW_FORMATS) or not stream.average_rate,
                         rotation=_turned(turns), first_pts=_shown_at(first))


def _upright(frame, resize: tuple[int, int] | None) -> np.ndarray:
    """A decoded frame as a player shows it: RGB, turned by its display matrix, and at
    ``resize`` (width, height as shown) when asked."""
    turns = _quarter_turns(frame.rotation)
    kwargs = {"format": "rgb24"}
    if resize:
        width, height = resize[::-1] if turns % 2 else resize
        kwargs.update(width=int(width), height=int(height))
    array = frame.to_ndarray(**kwargs)
    return np.ascontiguousarray(np.rot90(array, turns)) if turns else array


def decode_indices(path: str, indices: Sequence[int], resize: tuple[int, int] | None = None,
                   max_pixels: int | None = None, skip: bool = True, origin: int | None = None) -> np.ndarray:
    """Frames at ``indices`` (any order, repeats allowed) as uint8 [n, height, width, 3], upright;
    ``decode_frames`` also says how they were decoded."""
    return decode_frames(path, indices, resize, max_pixels, skip, origin)[0]


# Decoders for which skipping non-reference frames (FFmpeg's skip_frame=NONREF) is proven to
# return the frames of a full decode: tests/video/test_decode_less.py compares every returned
# frame with a full decode on clips of each (B-frames, B-pyramids, open GOPs). Every other decoder
# decodes every frame. Not AV1: dav1d skips hidden frames that later packets show
# (show_existing_frame), so a wanted time gets the frame before it. VP8, VP9, ProRes, MJPEG and
# FFV1 are equal but skip nothing (every frame is a reference, or intra-only), so gain nothing.
SKIP_PROVEN = frozenset({"h264", "hevc", "mpeg4", "mpeg2video", "mpeg1video"})


def decode_frames(path: str, indices: Sequence[int], resize: tuple[int, int] | None = None,
                  max_pixels: int | None = None, skip: bool = True,
                  origin: int | None = None) -> tuple[np.ndarray, str]:
    """Frames at ``indices`` (any order, repeats allowed) as uint8 [n, height, width, 3], upright,
    and how they were decoded (recorded in each request's frame facts), e.g. "seek; non-reference
    frames skipped" or "from the start (seek failed); every frame".

    Index i means the frame on screen at time i / rate: the last frame whose presentation
    timestamp is at or before it. For constant-rate video that is exactly frame i; for a
    variable-rate video it is the frame a viewer sees then. One forward pass from the nearest
    keyframe before the first wanted time; where the container cannot seek (a raw elementary
    stream), from the start. Frames above ``max_pixels`` (default: the TIMEFOIL_MAX_FRAME_PIXELS
    budget) are refused before any is decoded.

    With ``skip``, and a decoder in SKIP_PROVEN, packets shown well before the next wanted time
    are decoded only if other frames refer to them: a frame no other frame needs cannot change
    the ones that follow, so the frames returned are those of a full decode. Where a skipped
    frame could have been the one on screen at a wanted time (a long gap between frames), the
    video is decoded again in full."""
    wanted = sorted(set(indices))
    if not wanted:
        raise ValueError("no frames requested")
    if origin is None:  # once, whatever passes follow (a caller that probed gives VideoInfo.first_pts)
        origin = probe(path, max_pixels).first_pts
    seek, notes = True, []
    while True:
        try:
            found, _, how = _decode_wanted(path, wanted, resize, max_pixels, skip, seek, origin)
        except _SeekFailed:
            seek = False
            notes.append("seek failed")
            continue
        if found is not None:
            break
        skip = False  # a skipped frame may have been on screen: decode everything
        notes.append("a skipped frame could have been on screen")
    missing = [i for i in wanted if i not in found]
    if missing:
        raise VideoUndecodable(path, f"frames {missing[:5]}{'...' if len(missing) > 5 else ''} "
                                     f"could not be decoded (truncated file?)")
    if notes:
        how += f" ({', '.join(notes)})"
    return np.stack([found[i] for i in indices]), how


SKIP_MARGIN_FRAMES = 4  # packets shown closer than this to a wanted time are always decoded
SEEK_AFTER_S = 2  # seek only when it saves decoding a meaningful stretch


class _SeekFailed(VideoError):
    """The container could not seek (no index, no timestamps): decode from the start instead."""

    kind = "seek failed"


def _shown_at(frame) -> int:
    return frame.pts if frame is not None and frame.pts is not None else 0


def _decode_wanted(path: str, wanted: list[int], resize, max_pixels, skip: bool, seek: bool = True,
                   origin: int | None = None) -> tuple[dict[int, np.ndarray] | None, int, str]:
    """(wanted index -> frame, frames the decoder gave, how); None where skipping may have
    dropped a frame that was on screen. ``skip`` is honoured only for decoders in SKIP_PROVEN;
    ``origin`` is when the first frame is shown (``VideoInfo.first_pts``; probed when None)."""
    found: dict[int, np.ndarray] = {}
    if origin is None:
        origin = probe(path, max_pixels).first_pts
    with _opened(path, max_pixels) as container:
        stream = container.streams.video[0]
        rate = _frame_rate(stream)
        base = stream.time_base
        first_time = Fraction(wanted[0]) / rate
        sought = seek and first_time > SEEK_AFTER_S
        if sought:
            try:
                container.seek(int((first_time - 1) / base) + origin, stream=stream, backward=True)
            except Exception as exc:
                raise _SeekFailed(path, _ffmpeg_says(exc)) from None
        codec = stream.codec_context
        skip = skip and codec.name in SKIP_PROVEN
        margin = Fraction(SKIP_MARGIN_FRAMES) / rate
        # Timestamps are whole ticks of the time base: Matroska's millisecond ticks stamp frame 2
        # of a 30 fps clip at 67 ms, after its time of 66.7 ms. A frame that begins within a tick
        # of a wanted time is on screen then (never as much as half a frame, for coarse bases).
        tick = min(Fraction(base), 1 / (2 * rate))
        skipped_until: Fraction | None = None  # the latest time a packet was sent while skipping
        targets = iter(wanted)
        target = next(targets, None)
        shown, shown_at, sequential = None, Fraction(0), 0  # the frame on screen so far, and since when
        decoded = 0
        for packet in container.demux(stream):
            if skip and packet.pts is not None and target is not None:
                sent_at = Fraction(packet.pts - origin) * base
                far = sent_at < Fraction(target) / rate - margin
                codec.skip_frame = "NONREF" if far else "DEFAULT"
                if far:
                    skipped_until = sent_at if skipped_until is None else max(skipped_until, sent_at)
            for frame in packet.decode():
                at = Fraction(frame.pts - origin) * base if frame.pts is not None else Fraction(sequential) / rate
                decoded += 1
                sequential += 1
                # every wanted time before this frame's shows the previous frame (or this one, first)
                while target is not None and Fraction(target) / rate + tick < at:
                    if skipped_until is not None and shown is not None and skipped_until > shown_at:
                        return None, decoded, ""  # a frame sent while skipping falls between: it may be the one
                    found[target] = _upright(shown if shown is not None else frame, resize)
                    target = next(targets, None)
                if target is None:
                    break
                shown, shown_at = frame, at
            if target is None:
                break
        # wanted times after the last frame began: it is still on screen for about a frame (longer
        # means the file ends before its frames do: truncated)
        while target is not None and shown is not None and Fraction(target) / rate < shown_at + 2 / rate:
            if skipped_until is not None and skipped_until > shown_at:
                return None, decoded, ""
            found[target] = _upright(shown, resize)
            target = next(targets, None)
    how = ("seek" if sought else "from the start") + (
        "; every frame" if skipped_until is None else "; non-reference frames skipped")
    return found, decoded, how


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
