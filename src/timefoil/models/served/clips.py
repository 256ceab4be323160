"""A video shown whole: the item's window cut out by timefoil and encoded as an mp4 (H.264),
as the papers gave Gemini the video rather than frames."""
from __future__ import annotations

import io
from fractions import Fraction

from ...core.items import VideoRef
from ...video.decode import decode_indices, probe
from ...video.sampling import Sampling, window_frames
from .frames import NotSendable

CHUNK = 64  # frames decoded at a time: a long window is never held whole in memory
CRF = 18  # H.264 quality: visually lossless for the model, a fraction of a lossless file's size
CLIP_FORMAT = {"codec": "h264", "crf": CRF, "pix_fmt": "yuv420p"}  # what the fingerprint says of a clip


def check_sendable(ref: VideoRef, sampling: Sampling | None) -> None:
    """Refuse (one line) what a clip cannot show as asked: two videos played in sequence, or a
    frame-order ablation. Asked of every request, before a clip made for another is reused."""
    if ref.is_concat:
        raise NotSendable("video_input=file sends one clip; a video made of two clips with a gap is shown "
                          "as frames (video_input=frames)")
    if sampling is not None and (sampling.order != "natural" or sampling.single_frame):
        ablation = "single-frame" if sampling.single_frame else f"{sampling.order} frame-order"
        raise NotSendable(f"video_input=file sends the clip as it plays; the {ablation} ablation needs "
                          "video_input=frames")


def window_clip(ref: VideoRef, sampling: Sampling | None) -> bytes:
    """The mp4 of exactly the frames in ``ref``'s window, at the source's rate, upright and
    resized as ``sampling`` says."""
    check_sendable(ref, sampling)
    info = probe(ref.path)
    first, stop = window_frames(info.n_frames, info.fps, ref.start, ref.end)
    if stop <= first:
        raise NotSendable(f"the window {ref.key()} holds no frame of the video")
    resize = sampling.resize if sampling is not None else None
    return _encode(ref.path, range(first, stop), Fraction(info.fps).limit_denominator(1001), resize, info.first_pts)


def _encode(path: str, indices: range, rate: Fraction, resize, origin: int) -> bytes:
    import av
    import numpy as np

    buffer = io.BytesIO()
    with av.open(buffer, "w", format="mp4") as container:
        stream = None
        for start in range(indices.start, indices.stop, CHUNK):
            for array in decode_indices(path, range(start, min(start + CHUNK, indices.stop)), resize=resize,
                                        origin=origin):
                if stream is None:  # 4:2:0 chroma needs even sides: an odd last row or column is dropped
                    stream = container.add_stream("libx264", rate=rate)
                    stream.pix_fmt, stream.options = CLIP_FORMAT["pix_fmt"], {"crf": str(CRF), "preset": "veryfast"}
                    stream.height, stream.width = array.shape[0] // 2 * 2, array.shape[1] // 2 * 2
                frame = np.ascontiguousarray(array[:stream.height, :stream.width])
                for packet in stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")):
                    container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return buffer.getvalue()
