"""Bad videos: each is its own item's recorded error and the run goes on, never a hang or an abort.

Every row is a VELOCITI folder of two items: chrono-00001 shows the bad video (videos/v0.mp4),
chrono-00002 a good one. The run must finish (exit 3, the one-line failure summary), record
both items, and a rerun must keep the recorded errors without asking again."""
from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys

import numpy as np
import pytest

from faults import Fault, cli, run_fault
from helpers import run_records

BAD, GOOD = "chrono-00001", "chrono-00002"
RED = (255, 0, 0)


# -- videos ------------------------------------------------------------------------------------
def write_rotated(path, frame: np.ndarray, rotation: int = 0, count: int = 3, fps: int = 2) -> None:
    """``count`` copies of an RGB frame, lossless, with a display matrix turning it ``rotation``
    degrees counter-clockwise (the convention ffprobe and PyAV read back)."""
    import av

    with av.open(str(path), "w") as container:
        stream = container.add_stream("libx264rgb", rate=fps)
        stream.pix_fmt, stream.options = "rgb24", {"qp": "0", "preset": "ultrafast"}
        stream.height, stream.width = frame.shape[:2]
        if rotation:
            stream.set_display_rotation(rotation)
        for _ in range(count):
            for packet in stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)


def corner_frame(height: int, width: int) -> np.ndarray:
    """Grey, with the top-left pixel red: where the red pixel ends up says how the frame was turned."""
    frame = np.full((height, width, 3), 90, np.uint8)
    frame[0, 0] = RED
    return frame


def write_huge(path, side: int = 8000) -> None:
    """One black side x side frame: a 189 KB file whose decoded frame alone would be 192 MB of RGB.
    Encoded straight from a zeroed YUV frame, so making it costs well under a second."""
    import av

    with av.open(str(path), "w") as container:
        stream = container.add_stream("libx264", rate=1)
        stream.width = stream.height = side
        stream.pix_fmt, stream.options = "yuv420p", {"preset": "ultrafast", "qp": "51"}
        frame = av.VideoFrame(side, side, "yuv420p")
        for plane in frame.planes:
            plane.update(bytes(plane.buffer_size))
        for packet in [*stream.encode(frame), *stream.encode()]:
            container.mux(packet)


def write_audio_only(path) -> None:
    """A second of silence in a WAV container: opens fine, holds no video stream."""
    import av

    with av.open(str(path), "w", format="wav") as container:
        stream = container.add_stream("pcm_s16le", rate=8000)
        stream.layout = "mono"
        frame = av.AudioFrame.from_ndarray(np.zeros((1, 8000), np.int16), format="s16", layout="mono")
        frame.sample_rate = 8000
        for packet in [*stream.encode(frame), *stream.encode()]:
            container.mux(packet)


def good(path) -> None:
    write_rotated(path, corner_frame(16, 16), count=8, fps=4)  # 2 s: VELOCITI's 1 fps shows 2 frames


def truncated(path) -> None:
    """The first 60% of an mp4 whose index comes first (faststart), as an interrupted download
    leaves it: it opens, and its later frames are cut off mid-packet."""
    import av

    rng = np.random.default_rng(0)  # noise: every frame a sizeable packet, so the cut falls inside one
    with av.open(str(path), "w", options={"movflags": "faststart"}) as container:
        stream = container.add_stream("libx264rgb", rate=4)
        stream.pix_fmt, stream.options = "rgb24", {"qp": "0", "preset": "ultrafast"}
        stream.width = stream.height = 16
        for _ in range(8):
            frame = av.VideoFrame.from_ndarray(rng.integers(0, 256, (16, 16, 3), np.uint8), format="rgb24")
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) * 6 // 10])


def unix_socket(path) -> None:
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))  # the socket file stays after the process closes it


def moving_clip(path, encoder: str, options: dict | None = None, container_format: str | None = None,
                frames: int = 150, fps: int = 30) -> None:
    """A 64x48 clip of moving texture whose every frame differs from the one before (a frame
    one early is a wrong frame, never an equal one), lossy in ``encoder``."""
    import av

    rng = np.random.default_rng(5)
    texture = np.kron(rng.integers(0, 255, (6, 8, 3), dtype=np.uint8), np.ones((8, 8, 1), np.uint8))
    with av.open(str(path), "w", format=container_format) as container:
        stream = container.add_stream(encoder, rate=fps)
        stream.width, stream.height, stream.pix_fmt = 64, 48, "yuv420p"
        stream.options = options or {}
        for t in range(frames):
            image = np.roll(texture, 2 * t, axis=1)
            for packet in stream.encode(av.VideoFrame.from_ndarray(image, format="rgb24")):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)


def frames_in_order(path) -> list[np.ndarray]:
    """Every frame PyAV decodes, in presentation order: the i-th is index i at a constant rate."""
    import av

    with av.open(str(path)) as container:
        frames = [(f.pts if f.pts is not None else k, f.to_ndarray(format="rgb24"))
                  for k, f in enumerate(container.decode(video=0))]
    return [array for _, array in sorted(frames, key=lambda pair: pair[0])]


def shown_as_decoded(decoded: str, count: int = 5):
    """Both items answered; the bad video's frames, as the frame cache holds them for the model,
    equal an independent full decode at the planned indices, and its records say how they
    were decoded."""
    def after(tmp_path):
        from timefoil.video.diskcache import FrameDiskCache

        items = by_item(tmp_path)
        assert sorted(items) == [BAD, GOOD]
        assert all(r["answer"]["error"] is None for records in items.values() for r in records), items
        assert {r["frames"].get("decoded") for r in items[BAD]} == {decoded}, items[BAD]
        every = frames_in_order(tmp_path / "data" / "videos" / "v0.mp4")
        disk = FrameDiskCache(str(tmp_path / "cache"))
        checked = 0
        for _, _, entry in disk.entries():
            if not entry.endswith(".frames"):  # one moved aside
                continue
            arrays, _ = disk.load(os.path.basename(entry).split(".")[0])
            if arrays["array"].shape[1:3] == every[0].shape[:2]:  # the bad video's (the good one is 16x16)
                for frame, (_, index) in zip(arrays["array"], arrays["entries"]):
                    assert np.array_equal(frame, every[index]), f"frame {index} is not the one on screen"
                    checked += 1
        assert checked == count  # VELOCITI's mid-second frames of 5 s, or as the row asks
    return after


def cache_spoiled(spoil):
    """The run once (its frame cache filled), the bad video's cache entry spoiled by ``spoil``,
    then the run again into a new folder: the damaged entry must be a miss, moved aside."""
    def prepare(tmp_path):
        argv = dataset(lambda p: moving_clip(p, "libx264", {"bframes": "3"}))(tmp_path)
        first = cli(*argv, env={"TIMEFOIL_CACHE": str(tmp_path / "cache")}, timeout=120)
        assert first.returncode == 0, first.stderr
        from timefoil.video.diskcache import FrameDiskCache

        disk = FrameDiskCache(str(tmp_path / "cache"))
        (entry,) = [e for _, _, e in disk.entries() if _cached_size(disk, e) == (48, 64)]
        spoil(disk, entry)
        os.rename(tmp_path / "run", tmp_path / "first-run")
        os.remove(tmp_path / "cache" / "responses.sqlite")  # asked again, so shown the frames again
        return argv
    return prepare


def _cached_size(disk, entry) -> tuple[int, int]:
    return tuple(disk.load(os.path.basename(entry).split(".")[0])[0]["array"].shape[1:3])


def flip_a_payload_bit(disk, entry) -> None:
    data = bytearray(open(entry, "rb").read())
    data[-40] ^= 0x10  # inside the compressed frames
    open(entry, "wb").write(data)


def rewrite_entry(change):
    def spoil(disk, entry):
        key = os.path.basename(entry).split(".")[0]
        arrays, facts = disk.load(key)
        disk.save(key, change(dict(arrays)), facts)
    return spoil


def moved_aside_and_decoded_again(tmp_path):
    """The spoiled entry is kept aside for a look, the second run was shown the frames of a
    fresh decode (equal to the first run's answers), and the cache holds a good entry again."""
    assert [name for _, _, names in os.walk(tmp_path / "cache") for name in names if name.endswith(".damaged")]
    shown_as_decoded("from the start; non-reference frames skipped")(tmp_path)
    def shown(run):
        return [(r["id"], r["frames"], r["answer"].get("scores"), r["answer"].get("text"))
                for r in run_records(tmp_path / run)]
    assert shown("run") == shown("first-run")


DAMAGED = r"^timefoil: a damaged frame cache entry .*\.frames \((?:checksum mismatch|.*)\) was moved to .*\.damaged; "


# -- the rows ----------------------------------------------------------------------------------
def args(tmp_path) -> list[str]:
    return ["run", "velociti", "--model", "random", "--data", str(tmp_path / "data"), "--out",
            str(tmp_path / "run"), "--no-progress"]


def dataset(make_bad):
    def prepare(tmp_path):
        videos = tmp_path / "data" / "videos"
        videos.mkdir(parents=True)
        with open(tmp_path / "data" / "velociti.jsonl", "w") as handle:
            for k in range(2):
                handle.write(json.dumps({"test_name": "chrono", "video_id": f"v{k}", "pos": f"a {k}",
                                         "neg": f"b {k}"}) + "\n")
        make_bad(videos / "v0.mp4")
        good(videos / "v1.mp4")
        return args(tmp_path)
    return prepare


def with_args(prepare, *extra: str):
    return lambda tmp_path: [*prepare(tmp_path), *extra]


def by_item(tmp_path) -> dict[str, list[dict]]:
    items: dict[str, list[dict]] = {}
    for record in run_records(tmp_path / "run"):
        items.setdefault(record["id"].split("|")[0], []).append(record)
    return items


def recorded(error: str, env: dict | None = None):
    """Both items recorded (each with its two captions), the bad one with ``error`` (a regular
    expression the whole message matches) and the good one answered on its 2 frames; a rerun
    keeps the errors and asks nothing again."""
    def after(tmp_path):
        items = by_item(tmp_path)
        assert sorted(items) == [BAD, GOOD] and all(len(records) == 2 for records in items.values())
        path = tmp_path / "data" / "videos" / "v0.mp4"
        for record in items[BAD]:
            assert re.fullmatch(error.format(path=re.escape(str(path))), record["answer"]["error"]), record
        for record in items[GOOD]:
            assert record["answer"]["error"] is None and record["frames"]["n"] == 2
        before = run_records(tmp_path / "run")
        again = cli(*args(tmp_path), env={"TIMEFOIL_CACHE": str(tmp_path / "cache"), **(env or {})}, timeout=60)
        assert again.returncode == 3 and "keeping 2 errors recorded by an earlier run" in again.stderr, again.stderr
        assert run_records(tmp_path / "run") == before  # nothing asked again, nothing lost
    return after


def summary(kind: str) -> str:
    return rf"^1 of 2 items failed \(1 × {kind}\); ask them again with: timefoil run velociti .*--retry-errors$"


def rotated_after(tmp_path):
    items = by_item(tmp_path)
    assert sorted(items) == [BAD, GOOD]
    assert all(r["answer"]["error"] is None for records in items.values() for r in records)
    assert [r["frames"]["rotation"] for r in items[BAD]] == [-90, -90]
    assert all("rotation" not in r["frames"] for r in items[GOOD])


def nothing_recorded(tmp_path):
    assert not os.path.exists(tmp_path / "run") or not run_records(tmp_path / "run")


SMALL_BUDGET = {"TIMEFOIL_MAX_FRAME_PIXELS": "16x16"}  # the good video's 256 pixels pass, 32x24 does not
FAULTS = [
    Fault("directory named .mp4", dataset(lambda p: p.mkdir()), 3, summary("unreadable video"),
          recorded(r"unreadable video: {path}: a directory, not a regular file")),
    Fault("FIFO named .mp4", dataset(lambda p: os.mkfifo(p)), 3, summary("unreadable video"),
          recorded(r"unreadable video: {path}: a FIFO, not a regular file"), timeout=60),
    Fault("link to /dev/zero", dataset(lambda p: os.symlink("/dev/zero", p)), 3, summary("unreadable video"),
          recorded(r"unreadable video: {path}: a character device, not a regular file"), timeout=60),
    Fault("unix socket named .mp4", dataset(unix_socket), 3, summary("unreadable video"),
          recorded(r"unreadable video: {path}: a socket, not a regular file"), timeout=60),
    Fault("zero bytes", dataset(lambda p: p.write_bytes(b"")), 3, summary("empty video"),
          recorded(r"empty video: {path}: file has 0 bytes")),
    Fault("not a video", dataset(lambda p: p.write_text("this is a caption file, not a video\n" * 20)), 3,
          summary("undecodable video"),
          recorded(r"undecodable video: {path}: cannot open \(Invalid data found when processing input\)")),
    Fault("truncated video", dataset(truncated), 3, summary("undecodable video"),
          recorded(r"undecodable video: {path}: cannot decode \(Invalid data found when processing input\)")),
    Fault("no video stream", dataset(write_audio_only), 3, summary("undecodable video"),
          recorded(r"undecodable video: {path}: no video stream")),
    Fault("8000x8000 frame under the default budget", dataset(write_huge), 3, summary("video too large"),
          recorded(r"video too large: {path}: 8000x8000 frames \(64,000,000 pixels\) exceed the limit of "
                   r"33,177,600 pixels per frame \(TIMEFOIL_MAX_FRAME_PIXELS\)")),
    Fault("frame above a lowered budget", dataset(lambda p: write_rotated(p, corner_frame(24, 32))), 3,
          summary("video too large"),
          recorded(r"video too large: {path}: 32x24 frames \(768 pixels\) exceed the limit of 256 pixels per "
                   r"frame \(TIMEFOIL_MAX_FRAME_PIXELS\)", SMALL_BUDGET), env=SMALL_BUDGET),
    Fault("malformed pixel budget", dataset(good), 1,
          r"^Error: TIMEFOIL_MAX_FRAME_PIXELS: expected a pixel count \(33177600\) or a size \(7680x4320\), "
          r"got 'lots'$", nothing_recorded, env={"TIMEFOIL_MAX_FRAME_PIXELS": "lots"}),
    Fault("video turned by its display matrix", dataset(lambda p: write_rotated(p, corner_frame(8, 16), -90, 8, 4)),
          0, r"^$", rotated_after),
    Fault("AV1 with hidden frames shown later", dataset(lambda p: moving_clip(p, "libsvtav1")), 0, r"^$",
          shown_as_decoded("from the start; every frame")),
    Fault("Matroska millisecond stamps",
          with_args(dataset(lambda p: moving_clip(p, "libx264", {"bframes": "3"}, "matroska")), "--frames", "4"),
          0, r"^$", shown_as_decoded("from the start; non-reference frames skipped", count=4)),  # frames 56 and
    # 131 of 30 fps are stamped 1867 and 4367 ms, after their times
    Fault("AVI with B-frame delay", dataset(lambda p: moving_clip(p, "mpeg4", {"bf": "2"}, "avi")), 0, r"^$",
          shown_as_decoded("from the start; non-reference frames skipped")),
    Fault("raw H.264 stream sampled past 2 s",
          with_args(dataset(lambda p: moving_clip(p, "libx264", {"bframes": "3"}, "h264", frames=300)),
                    "--frames", "2"),  # at 3 s and 9 s of the 12 s FFmpeg assumes (25 fps)
          0, r"^$", shown_as_decoded("from the start; every frame (seek failed)", count=2)),
    Fault("flipped bit in a frame cache entry", cache_spoiled(flip_a_payload_bit), 0, DAMAGED,
          moved_aside_and_decoded_again),
    Fault("frame cache entry of float frames",
          cache_spoiled(rewrite_entry(lambda a: {**a, "array": a["array"].astype(np.float32)})), 0, DAMAGED,
          moved_aside_and_decoded_again),
    Fault("frame cache entry with a frame too few",
          cache_spoiled(rewrite_entry(lambda a: {**a, "array": a["array"][1:]})), 0, DAMAGED,
          moved_aside_and_decoded_again),
    Fault("frame cache entry under another key",
          cache_spoiled(lambda disk, entry: os.replace(
              [e for _, _, e in disk.entries() if e != entry][0], entry)), 0, DAMAGED,
          moved_aside_and_decoded_again),
]


@pytest.mark.parametrize("fault", FAULTS, ids=str)
def test_fault(fault, tmp_path):
    run_fault(fault, tmp_path)


# -- what the model is shown -------------------------------------------------------------------
@pytest.mark.parametrize("rotation, red_at", [
    (-90, (0, -1)),  # a phone held upright: turned a quarter clockwise, the top-left goes top-right
    (90, (-1, 0)),  # a quarter counter-clockwise: top-left goes bottom-left
    (180, (-1, -1)),
])
def test_frames_are_shown_upright_and_the_turn_is_kept_with_them(tmp_path, rotation, red_at):
    from timefoil.core.items import VideoRef
    from timefoil.video import FrameStore, Sampling

    path = tmp_path / "v.mp4"
    write_rotated(path, corner_frame(8, 16), rotation)  # 16 wide, 8 high as coded
    shown_shape = (8, 16) if rotation == 180 else (16, 8)
    for store in (FrameStore(cache_dir=str(tmp_path / "c")), FrameStore(cache_dir=str(tmp_path / "c"))):
        frames = store.get(VideoRef.file(str(path)), Sampling(frames=3))  # the second reads the disk cache
        assert frames.array.shape == (3, *shown_shape, 3) and frames.rotations == (rotation,)
        expected = np.full((*shown_shape, 3), 90, np.uint8)
        expected[red_at] = RED
        assert all(np.array_equal(frame, expected) for frame in frames.array)
    assert store.stats.disk_hits == 1
    # a resize names the size as shown: 4 wide and 8 high after the turn
    resized = FrameStore().get(VideoRef.file(str(path)), Sampling(frames=1, resize=(4, 8)))
    assert resized.array.shape == (1, 8, 4, 3)


def test_an_oversized_frame_is_refused_before_it_is_decoded(tmp_path):
    """Peak memory of a process asked for the 8000x8000 video's frames, less that of one asked
    for a 16x16 video's: under one decoded YUV frame (96 MB), where decoding would take 288 MB."""
    write_huge(tmp_path / "huge.mp4")
    good(tmp_path / "small.mp4")
    ask = ("import resource, sys\n"
           "from timefoil.core.items import VideoRef\n"
           "from timefoil.video import FrameStore, Sampling, VideoError\n"
           "try:\n"
           "    FrameStore().get(VideoRef.file(sys.argv[1]), Sampling(frames=8))\n"
           "    print('decoded')\n"
           "except VideoError as exc:\n"
           "    print(exc)\n"
           "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n")

    def peak(name: str) -> tuple[str, int]:
        result = subprocess.run([sys.executable, "-c", ask, str(tmp_path / name)], capture_output=True, text=True,
                                timeout=60, env={**os.environ, "TIMEFOIL_MAX_FRAME_PIXELS": ""})
        said, kilobytes = result.stdout.strip().splitlines()
        return said, int(kilobytes)

    refused, huge_kb = peak("huge.mp4")
    decoded, small_kb = peak("small.mp4")
    assert decoded == "decoded"
    assert refused == (f"video too large: {tmp_path / 'huge.mp4'}: 8000x8000 frames (64,000,000 pixels) exceed "
                       "the limit of 33,177,600 pixels per frame (TIMEFOIL_MAX_FRAME_PIXELS)")
    assert (huge_kb - small_kb) * 1024 < 8000 * 8000 * 3 // 2, (huge_kb, small_kb)
