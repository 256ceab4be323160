"""Decoding less: frames no wanted frame depends on are skipped, only for decoders where that is
proven here, and the frames returned are bit for bit those of a full decode: every codec a user
may meet (H.264 with B-frames, B-pyramids and open GOPs, HEVC, VP8, VP9, AV1 with hidden frames,
MPEG-4, MPEG-2, ProRes, MJPEG, FFV1, raw elementary streams) and a variable-rate file."""
import random

import av
import numpy as np
import pytest

from helpers import write_stamped_video
from timefoil.video import decode
from timefoil.video.decode import SKIP_PROVEN, _decode_wanted, decode_frames, decode_indices, probe


def camera_clip(path: str, frames: int = 120, fps: int = 30, codec: str = "libx264", options: dict | None = None,
                pix_fmt: str = "yuv420p", container_format: str | None = None) -> None:
    """Lossy video with moving texture and noise; by default H.264 with plain B-frames (nothing
    refers to them)."""
    rng = np.random.default_rng(3)
    texture = np.kron(rng.integers(0, 255, (12, 16, 3), dtype=np.uint8), np.ones((8, 8, 1), np.uint8))
    with av.open(path, "w", format=container_format) as container:
        stream = container.add_stream(codec, rate=fps)
        stream.width, stream.height, stream.pix_fmt = 128, 96, pix_fmt
        stream.options = {"bframes": "3", "b-pyramid": "none"} if options is None else options
        for t in range(frames):
            image = np.clip(np.roll(texture, 3 * t, axis=1).astype(np.int16)
                            + rng.integers(-8, 9, texture.shape), 0, 255).astype(np.uint8)
            for packet in stream.encode(av.VideoFrame.from_ndarray(image, format="rgb24")):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)


def every_frame_in_order(path: str) -> list[np.ndarray]:
    """An independent full decode: every frame PyAV gives, in presentation order (a constant
    rate, so index i is the i-th frame)."""
    with av.open(path) as container:
        frames = [(f.pts if f.pts is not None else k, f.to_ndarray(format="rgb24"))
                  for k, f in enumerate(container.decode(video=0))]
    return [array for _, array in sorted(frames, key=lambda pair: pair[0])]


# name: (encoder, its options, pixel format, container format or None for the file's suffix)
CODECS = {
    "h264-bframes.mp4": ("libx264", {"bframes": "3", "b-pyramid": "none"}, "yuv420p", None),
    "h264-open-gop-pyramid.mkv": ("libx264", {"bframes": "3", "open-gop": "1", "keyint": "30",
                                              "b-pyramid": "normal"}, "yuv420p", None),
    "hevc-bframes.mp4": ("libx265", {"x265-params": "log-level=none:bframes=4:b-pyramid=1"}, "yuv420p", None),
    "hevc-open-gop.mkv": ("libx265", {"x265-params": "log-level=none:open-gop=1:keyint=60"}, "yuv420p", None),
    "vp9-altref.webm": ("libvpx-vp9", {"auto-alt-ref": "1", "lag-in-frames": "16", "deadline": "realtime",
                                       "cpu-used": "8"}, "yuv420p", None),
    "vp8-altref.webm": ("libvpx", {"auto-alt-ref": "1", "lag-in-frames": "16"}, "yuv420p", None),
    "av1-hidden-frames.mp4": ("libsvtav1", {}, "yuv420p", None),
    "mpeg4-bframes.avi": ("mpeg4", {"bf": "2"}, "yuv420p", None),
    "mpeg2-bframes.ts": ("mpeg2video", {"bf": "2"}, "yuv420p", None),
    "mpeg1.mpg": ("mpeg1video", {"bf": "2"}, "yuv420p", None),
    "prores.mov": ("prores_ks", {}, "yuv422p10le", None),
    "mjpeg.avi": ("mjpeg", {}, "yuvj420p", None),
    "ffv1.mkv": ("ffv1", {}, "yuv420p", None),
    "raw-elementary.h264": ("libx264", {"bframes": "3"}, "yuv420p", "h264"),
    "raw-elementary.hevc": ("libx265", {"x265-params": "log-level=none"}, "yuv420p", "hevc"),
}


@pytest.fixture(scope="module")
def codec_clips(tmp_path_factory):
    """A clip of every encoding; PyAV's wheels ship each encoder, so none is skipped."""
    folder = tmp_path_factory.mktemp("codecs")
    clips = {}
    for name, (encoder, options, pix_fmt, container_format) in CODECS.items():
        camera_clip(str(folder / name), 150, 30, encoder, options, pix_fmt, container_format)
        clips[name] = str(folder / name)
    return clips


def sample_sets(n: int) -> list[list[int]]:
    """Evenly spaced samplings at several strides and phases, random ones, the last frame, and
    an unsorted list with a repeat, all past 2 s (a seek) and before it."""
    rnd = random.Random(0)
    return ([list(range(first, n, stride)) for stride in (15, 37) for first in (0, 3, 7, 11)]
            + [sorted(rnd.sample(range(n), 8)) for _ in range(6)] + [[n - 1], [n - 3, 2, 2], [n // 2]])


@pytest.mark.parametrize("name", list(CODECS))
def test_every_codec_returns_the_frames_of_a_full_decode(codec_clips, name):
    path = codec_clips[name]
    every = every_frame_in_order(path)
    info = probe(path)
    assert info.n_frames == len(every) == 150
    for indices in sample_sets(len(every)):
        frames, how = decode_frames(path, indices)
        assert all(np.array_equal(frame, every[i]) for frame, i in zip(frames, indices)), (name, indices, how)
    with av.open(path) as container:
        decoder = container.streams.video[0].codec_context.name
    raw = name.startswith("raw-")  # no timestamps to skip by, no index to seek in: decoded forward, and said
    assert ("non-reference frames skipped" in how) == (decoder in SKIP_PROVEN and not raw), how
    if raw:
        assert how == "from the start; every frame (seek failed)", how


def test_skipping_on_av1_would_show_the_frame_before_so_it_is_not_proven(codec_clips, monkeypatch):
    """Why AV1 decodes every frame: with skipping forced on, dav1d drops hidden frames that a
    later packet shows, and wanted times get the frame before theirs."""
    path = codec_clips["av1-hidden-frames.mp4"]
    every = every_frame_in_order(path)
    with av.open(path) as container:
        decoder = container.streams.video[0].codec_context.name
    assert decoder not in SKIP_PROVEN
    monkeypatch.setattr(decode, "SKIP_PROVEN", SKIP_PROVEN | {decoder})
    wrong = 0
    for indices in sample_sets(len(every)):
        found, _, how = _decode_wanted(path, sorted(set(indices)), None, None, True)
        assert "non-reference frames skipped" in how
        wrong += sum(not np.array_equal(found[i], every[i]) for i in found) if found else 0
    assert wrong > 0


def test_a_raw_stream_sampled_past_two_seconds_decodes_forward(codec_clips):
    path = codec_clips["raw-elementary.h264"]
    assert probe(path).rate_guessed
    frames, how = decode_frames(path, [100, 140])  # 4 s and 5.6 s at the 25 fps FFmpeg assumes
    every = every_frame_in_order(path)
    assert np.array_equal(frames[0], every[100]) and np.array_equal(frames[1], every[140])
    assert how == "from the start; every frame (seek failed)"


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("h264") / "camera.mp4")
    camera_clip(path)
    return path


@pytest.mark.parametrize("indices", [[3, 18, 33, 48, 63, 78, 93, 108], [0], [119], [40, 41, 42, 90],
                                     list(range(0, 120, 7)), [100, 5, 5, 60]])
def test_skipping_returns_the_frames_of_a_full_decode(clip, indices):
    assert np.array_equal(decode_indices(clip, indices), decode_indices(clip, indices, skip=False))


def test_frames_far_from_every_wanted_time_are_not_decoded(clip):
    wanted = [3, 18, 33, 48, 63, 78, 93, 108]
    kept, skipping, how = _decode_wanted(clip, wanted, None, None, True)
    full, everything, _ = _decode_wanted(clip, wanted, None, None, False)
    assert how == "from the start; non-reference frames skipped"
    assert everything >= 109  # a full pass decodes every frame up to the last wanted one (and what the
    # decoder has reordered past it)
    assert skipping < 0.8 * everything  # the B-frames far from a wanted time were never decoded
    assert all(np.array_equal(kept[i], full[i]) for i in wanted)


def test_a_variable_rate_gap_falls_back_to_a_full_decode_and_stays_exact(tmp_path):
    """Frame k (value 20k) at the times below (ms): index i is the frame on screen at i / rate.
    In the long gap (233 ms to 900 ms) a skipped frame could be the one on screen, so the
    decode is redone in full; every index equals a full decode and the hand-worked frame."""
    stamps = [0, 33, 66, 100, 133, 166, 200, 233, 900, 933, 966, 1000, 1033, 1066, 1100, 1133]
    path = str(tmp_path / "vfr.mp4")
    write_stamped_video(path, stamps, 12, codec="libx264", options={"bframes": "2", "b-pyramid": "none"})
    info = probe(path)
    every = list(range(info.n_frames))
    skipped = decode_indices(path, every)
    assert np.array_equal(skipped, decode_indices(path, every, skip=False))
    on_screen = [max(k for k, s in enumerate(stamps) if s <= 1000 * i / info.fps) for i in every]
    assert [int(v) for v in skipped[:, 8, 16, 1]] == pytest.approx([12 * k for k in on_screen], abs=2)
    in_gap = max(i for i in every if 1000 * i / info.fps < 900)  # frame 7 (233 ms) is on screen there
    pair = decode_indices(path, [0, in_gap])
    assert np.array_equal(pair, decode_indices(path, [0, in_gap], skip=False))
    assert int(pair[1, 8, 16, 1]) == pytest.approx(12 * 7, abs=2)
