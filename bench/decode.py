"""Decode cost on a benchmark-like workload where videos repeat.

Prints, measured in one run:
  1. decode time without the cache / with it, asking for frames once per request of a
     synthetic suite (each video is asked by several items and options);
  2. time per 32-frame sample: plain sequential PyAV decode of the whole file (every frame
     converted, 32 kept) / timefoil's decode (converts only the wanted frames);
  3. the disk frame cache against its goals, per sample of 8 frames of a 10 s 640x480 H.264
     clip (camera-like: moving, noisy, B-frames): writing an entry at most 25% of the sample's
     cold decode, reading it back at least 5x faster than that decode; and what the format
     before (np.savez_compressed) cost;
  4. decoding less: the same sample with frames no wanted frame depends on skipped, against a
     decode of every frame up to the last wanted one (the frames are checked equal);
  5. videos per second by decode-ahead workers (1, 2, 4, ... up to the cores): distinct 10 s
     clips of 640x360 at 12 fps, 16 frames each, decoded through the runner's ``DecodeAhead``
     into one frame store, as a run decodes ahead of the answering (``--only workers``: this alone).

    python bench/decode.py [--per-family 4] [--repeats 3] [--workers 1,2,4] [--clips 16] [--only workers]
"""
from __future__ import annotations

import argparse
import tempfile
import time

import av
import numpy as np

from timefoil.protocols import PlanContext, Prompts, get_protocol
from timefoil.synth import generate
from timefoil.video import FrameStore, Sampling, decode_indices, write_video
from timefoil.video.sampling import PartInfo, plan_frames


def workload(root: str, per_family: int):
    items = generate(root, per_family=per_family, seed=0)
    sampling = Sampling(frames=8)
    context = PlanContext(prompts=Prompts(), sampling=sampling)
    return [p.request for _, p in get_protocol("similarity").plan(items, context)]


def time_requests(requests, cached: bool) -> float:
    store = FrameStore()
    start = time.perf_counter()
    for request in requests:
        if not cached:
            store = FrameStore()  # a fresh store per request: decode every time
        store.get(request.video, request.sampling)
    return time.perf_counter() - start


def realistic_video(path: str, frames: int = 300) -> None:
    rng = np.random.default_rng(0)
    base = rng.integers(0, 255, (360, 640, 3), dtype=np.uint8)
    write_video(path, [np.roll(base, 4 * k, axis=1) for k in range(frames)], fps=30, lossless=False)


def camera_like_video(path: str, seconds: int = 10, fps: int = 30) -> None:
    """640x480 with a drifting textured background, a moving square and per-frame sensor noise,
    encoded lossy with B-frames, as a phone or dataset clip is."""
    rng = np.random.default_rng(1)
    small = rng.integers(0, 255, (60, 80, 3), dtype=np.uint8)
    background = np.kron(small, np.ones((8, 8, 1), dtype=np.uint8))
    frames = []
    for t in range(seconds * fps):
        frame = np.roll(background, 2 * t, axis=1)
        x = (7 * t) % 560
        frame[180:300, x:x + 80] = (230, 40, 40)
        noise = rng.integers(-6, 7, frame.shape, dtype=np.int16)
        frames.append(np.clip(frame.astype(np.int16) + noise, 0, 255).astype(np.uint8))
    write_video(path, frames, fps=fps, lossless=False)


def cache_costs(root: str, repeats: int) -> dict:
    """Cold decode, cache write, warm read (and the deflated npz write before) for one sample."""
    import io
    import os

    from timefoil.core.items import VideoRef
    from timefoil.video.diskcache import FrameDiskCache

    path = os.path.join(root, "camera.mp4")
    camera_like_video(path)
    ref, sampling = VideoRef.file(path), Sampling(frames=8)
    decode = best_of(lambda: FrameStore().get(ref, sampling), repeats)
    frames = FrameStore().get(ref, sampling).array
    disk = FrameDiskCache(os.path.join(root, "cache"), budget=10**10)
    keys = iter(f"{k:032x}" for k in range(10**6))
    write = best_of(lambda: disk.save(next(keys), {"array": frames}), repeats)
    cache_dir = os.path.join(root, "warm")
    FrameStore(cache_dir=cache_dir).get(ref, sampling)  # stored once; each read below starts with empty memory
    read = best_of(lambda: FrameStore(cache_dir=cache_dir).get(ref, sampling), repeats)
    assert np.array_equal(FrameStore(cache_dir=cache_dir).get(ref, sampling).array, frames)  # lossless
    before = best_of(lambda: np.savez_compressed(io.BytesIO(), array=frames), repeats)
    indices = [e[1] for e in plan_frames([PartInfo(30.0, 0, 300)], sampling).entries]
    assert np.array_equal(decode_indices(path, indices), decode_indices(path, indices, skip=False))
    skipping = best_of(lambda: decode_indices(path, indices), repeats)
    everything = best_of(lambda: decode_indices(path, indices, skip=False), repeats)
    options = codec_options(frames, decode, repeats)
    return {"options": options, "decode_ms": decode * 1000, "write_ms": write * 1000, "read_ms": read * 1000,
            "npz_write_ms": before * 1000, "write_over_decode": write / decode, "decode_over_read": decode / read,
            "stored_mb": disk.usage()[0] / disk.usage()[1] / 1024**2, "raw_mb": frames.nbytes / 1024**2,
            "skipping_ms": skipping * 1000, "full_ms": everything * 1000}


def codec_options(frames: np.ndarray, decode_s: float, repeats: int) -> list[tuple[str, float, float, float]]:
    """(codec, write / decode, decode / read, stored / raw) of each lossless option for one sample's
    bytes: zlib level 1 (the standard library), zstandard at three levels, lz4 where installed."""
    import zlib

    import zstandard

    raw = frames.tobytes()
    options = [("zlib 1", lambda b: zlib.compress(b, 1), zlib.decompress)]
    for level in (-2, 1, 3):
        options.append((f"zstd {level}", zstandard.ZstdCompressor(level=level).compress,
                        zstandard.ZstdDecompressor().decompress))
    try:
        import lz4.frame

        options.append(("lz4", lz4.frame.compress, lz4.frame.decompress))
    except ImportError:
        pass
    rows = []
    for name, compress, decompress in options:
        stored = compress(raw)
        write = best_of(lambda: compress(raw), repeats)
        read = best_of(lambda: decompress(stored), repeats)
        rows.append((name, write / decode_s, decode_s / read, len(stored) / len(raw)))
    return rows


def plain_decode(path: str, indices: list[int]) -> np.ndarray:
    with av.open(path) as container:
        every = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
    return np.stack([every[i] for i in indices])


def clips(root: str, count: int) -> list[str]:
    """``count`` distinct 10 s clips of 640x360 at 12 fps (lossy H.264, a moving texture)."""
    import os

    rng = np.random.default_rng(2)
    paths = []
    for k in range(count):
        base = rng.integers(0, 255, (45, 80, 3), dtype=np.uint8)
        texture = np.kron(base, np.ones((8, 8, 1), dtype=np.uint8))
        path = os.path.join(root, f"clip{k}.mp4")
        write_video(path, [np.roll(texture, 3 * t, axis=1) for t in range(120)], fps=12, lossless=False)
        paths.append(path)
    return paths


def videos_per_second(paths: list[str], workers: int) -> float:
    """Every clip decoded (16 frames) ahead on ``workers`` threads into one fresh frame store."""
    from concurrent.futures import wait

    from timefoil.core.items import VideoRef
    from timefoil.execution.ahead import DecodeAhead

    store, sampling = FrameStore(), Sampling(frames=16)
    start = time.perf_counter()
    with DecodeAhead(workers) as ahead:
        wait([ahead.submit(store.get, VideoRef.file(path), sampling) for path in paths])
    assert store.stats.decodes == len(paths)
    return len(paths) / (time.perf_counter() - start)


def by_workers(root: str, counts: list[int], clip_count: int, repeats: int) -> None:
    from timefoil.core.threads import physical_cores

    paths = clips(root, clip_count)
    print(f"decode-ahead, {clip_count} clips of 10 s 640x360 at 12 fps, 16 frames each "
          f"({physical_cores()} physical cores here):")
    one = None
    for workers in counts:
        rate = max(videos_per_second(paths, workers) for _ in range(repeats))
        one = one or rate
        print(f"  {workers} worker{'s' if workers > 1 else ' '}  {rate:6.1f} videos/s   {rate / one:.2f}x one worker")


def best_of(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--per-family", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", help="decode-ahead workers to compare, e.g. 1,2,4 (default: powers of 2 up "
                                          "to the cores)")
    parser.add_argument("--clips", type=int, default=16, help="clips decoded for the workers' comparison")
    parser.add_argument("--only", choices=["workers"], help="run this section alone")
    args = parser.parse_args()
    from timefoil.core.threads import physical_cores

    cores = physical_cores()
    counts = ([int(w) for w in args.workers.split(",")] if args.workers
              else [w for w in (1, 2, 4, 8, 16) if w <= max(cores, 2)])
    with tempfile.TemporaryDirectory() as root:
        if args.only == "workers":
            by_workers(root, counts, args.clips, args.repeats)
            return
        requests = workload(root, args.per_family)
        videos = {r.video.key() for r in requests}
        uncached = min(time_requests(requests, False) for _ in range(args.repeats))
        cached = min(time_requests(requests, True) for _ in range(args.repeats))
        print(f"workload: {len(requests)} requests over {len(videos)} distinct videos (8 frames each)")
        print(f"  without cache {uncached:.3f} s   with cache {cached:.3f} s   ratio {uncached / cached:.1f}x")

        path = f"{root}/realistic.mp4"
        realistic_video(path)
        indices = [e[1] for e in plan_frames([PartInfo(30.0, 0, 300)], Sampling(frames=32)).entries]
        assert np.array_equal(plain_decode(path, indices), decode_indices(path, indices))
        plain = best_of(lambda: plain_decode(path, indices), args.repeats)
        ours = best_of(lambda: decode_indices(path, indices), args.repeats)
        print("32-frame sample of a 640x360, 300-frame H.264 video:")
        print(f"  plain sequential decode {plain * 1000:.1f} ms   timefoil {ours * 1000:.1f} ms   "
              f"ratio {plain / ours:.2f}x")

        costs = cache_costs(root, args.repeats)
        print("frame cache, one sample of 8 frames of a 10 s 640x480 camera-like H.264 clip:")
        print(f"  cold decode {costs['decode_ms']:.1f} ms   cache write {costs['write_ms']:.1f} ms "
              f"({costs['write_over_decode']:.2f} of the decode; goal <= 0.25: "
              f"{'met' if costs['write_over_decode'] <= 0.25 else 'NOT met'})")
        print(f"  warm read {costs['read_ms']:.1f} ms ({costs['decode_over_read']:.1f}x faster than the decode; "
              f"goal >= 5: {'met' if costs['decode_over_read'] >= 5 else 'NOT met'})")
        print(f"  {costs['raw_mb']:.1f} MB raw stored as {costs['stored_mb']:.1f} MB; the deflated npz of before "
              f"took {costs['npz_write_ms']:.1f} ms to write ({costs['npz_write_ms'] / costs['decode_ms']:.2f} "
              "of the decode)")
        print("  the options, per sample (write / decode, decode / read of the bytes alone, stored / raw):")
        for name, write, read, size in costs["options"]:
            print(f"    {name:8s} write {write:5.2f}   read {read:6.1f}x   size {size:.2f}")
        print(f"  decoding less: {costs['skipping_ms']:.1f} ms with frames nothing refers to skipped, "
              f"{costs['full_ms']:.1f} ms decoding every frame ({costs['full_ms'] / costs['skipping_ms']:.2f}x), "
              "the same frames")
        by_workers(root, counts, args.clips, args.repeats)


if __name__ == "__main__":
    main()
