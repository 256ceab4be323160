"""Decode cost on a benchmark-like workload where videos repeat.

Prints two ratios measured in one run:
  1. decode time without the cache / with it, asking for frames once per request of a
     synthetic suite (each video is asked by several items and options);
  2. time per 32-frame sample: plain sequential PyAV decode of the whole file (every frame
     converted, 32 kept) / timefoil's decode (converts only the wanted frames).

    python bench/decode.py [--per-family 4] [--repeats 3]
"""
from __future__ import annotations

import argparse
import tempfile
import time

import av
import numpy as np

from timefoil.protocols import Prompts, plan_requests
from timefoil.synth import generate
from timefoil.video import FrameStore, Sampling, decode_indices, write_video
from timefoil.video.sampling import PartInfo, plan_frames


def workload(root: str, per_family: int):
    items = generate(root, per_family=per_family, seed=0)
    sampling = Sampling(frames=8)
    return [p.request for item in items for p in plan_requests(item, "similarity", Prompts(), sampling)]


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


def plain_decode(path: str, indices: list[int]) -> np.ndarray:
    with av.open(path) as container:
        every = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
    return np.stack([every[i] for i in indices])


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
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as root:
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


if __name__ == "__main__":
    main()
