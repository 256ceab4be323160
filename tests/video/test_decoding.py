"""Decoding by timestamp: variable frame rates, and raw streams flagged."""


def test_variable_frame_rate_video_decodes_by_timestamp_and_a_raw_stream_is_flagged(tmp_path):
    """Frame k (value 20k) shown at the times below (ms). Index i means the frame on screen at
    i / average rate; worked out by hand from the timestamps."""

    import av
    import numpy as np

    from timefoil.core.items import VideoRef
    from timefoil.video import FrameStore, Sampling
    from helpers import write_stamped_video
    from timefoil.video.decode import decode_indices, probe

    stamps = [0, 33, 66, 200, 233, 500, 533, 566, 900, 1000]
    path = str(tmp_path / "vfr.mp4")
    write_stamped_video(path, stamps, 20)
    info = probe(path)
    shown = decode_indices(path, list(range(info.n_frames)))[:, 0, 0, 0]
    on_screen = [max(k for k, s in enumerate(stamps) if s <= 1000 * i / info.fps) for i in range(info.n_frames)]
    assert list(shown) == [20 * k for k in on_screen] and not info.rate_guessed
    # a raw H.264 stream has no timestamps: decoded, and flagged in the record
    raw = str(tmp_path / "clip.h264")
    with av.open(raw, "w", format="h264") as container:
        stream = container.add_stream("libx264", rate=25)
        stream.width, stream.height, stream.pix_fmt = 32, 16, "yuv420p"
        for k in range(10):
            for packet in stream.encode(av.VideoFrame.from_ndarray(np.full((16, 32, 3), 20 * k, np.uint8),
                                                                   format="rgb24")):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    assert probe(raw).rate_guessed
    frames = FrameStore(cache_dir=str(tmp_path / "c")).get(VideoRef.file(raw), Sampling(frames=4))
    assert frames.rate_guessed and frames.array.shape[0] == 4
    again = FrameStore(cache_dir=str(tmp_path / "c")).get(VideoRef.file(raw), Sampling(frames=4))
    assert again.rate_guessed  # kept in the disk cache too
