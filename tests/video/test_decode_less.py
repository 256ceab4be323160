"""Decoding less: frames no wanted frame depends on are skipped, and the frames returned are
bit for bit those of a full decode (H.264 with B-frames, and a variable-rate file)."""
import av
import numpy as np
import pytest

from helpers import write_stamped_video
from timefoil.video.decode import _decode_wanted, decode_indices, probe


def camera_clip(path: str, frames: int = 120, fps: int = 30) -> None:
    """Lossy H.264 with B-frames (x264's defaults): moving texture and noise."""
    rng = np.random.default_rng(3)
    texture = np.kron(rng.integers(0, 255, (12, 16, 3), dtype=np.uint8), np.ones((8, 8, 1), np.uint8))
    with av.open(path, "w") as container:
        stream = container.add_stream("libx264", rate=fps)
        stream.width, stream.height, stream.pix_fmt = 128, 96, "yuv420p"
        stream.options = {"bframes": "3", "b-pyramid": "none"}  # plain B-frames: nothing refers to them
        for t in range(frames):
            image = np.clip(np.roll(texture, 3 * t, axis=1).astype(np.int16)
                            + rng.integers(-8, 9, texture.shape), 0, 255).astype(np.uint8)
            for packet in stream.encode(av.VideoFrame.from_ndarray(image, format="rgb24")):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)


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
    kept, skipping = _decode_wanted(clip, wanted, None, None, True)
    full, everything = _decode_wanted(clip, wanted, None, None, False)
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
