"""Scale-out on Ray: the synthetic suite on 1 and 2 workers, and the planner on 1M requests.

1. Wall time of the synthetic suite answered by a random-weight CLIP large enough to be
   compute-bound (width 384, 6 layers, 224-pixel frames: ~196 patches per frame, 8 frames per
   video), one torch thread per worker, on a local Ray cluster: 1 worker, then 2. Each run has
   its own empty cache, so both decode every video. Printed: wall time of each (with and without
   starting the workers) and the ratio 1 worker / 2 workers; the one-process run is the baseline.
2. The planner's overhead on a plan of 1,000,000 requests over 50,000 videos (20 each): the
   shard assignment (units, costs, longest-first placement, filtering one shard of 8) and the
   executor's video-grouped batches, in seconds.

    python bench/scale.py [--per-family 6] [--width 384] [--layers 6]
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import tempfile
import time

from timefoil.benchmarks import get_benchmark
from timefoil.execution.distributed import RayOptions
from timefoil.core.items import VideoRef
from timefoil.models.requests import Request
from timefoil import RunConfig
from timefoil.execution.runner import Runner
from timefoil.execution.sharding import VideoUnits, assign, unit_costs, video_batches
from timefoil.synth import generate
from timefoil.testing import tiny_clip
from timefoil.video import Sampling


def timed_run(suite: str, spec: str, out: str, ray: RayOptions | None) -> dict:
    start = time.perf_counter()
    runner = Runner(RunConfig("synth", spec, data_dir=suite), out, cache_dir=out + "-cache", progress=False,
                    threads=1, ray=ray)
    started = time.perf_counter()
    report = runner.run()
    done = time.perf_counter()
    return {"total_s": done - start, "answering_s": done - started, "items": report.items, "errors": report.errors}


def suite_scaling(args, root: str) -> dict:
    import ray

    suite = os.path.join(root, "suite")
    generate(suite, per_family=args.per_family, seed=0)
    texts = [t for item in get_benchmark("synth").load(suite) for t in item.texts]
    spec = "clip:" + tiny_clip(os.path.join(root, "clip"), texts, width=args.width, layers=args.layers,
                               image_size=224)
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.ERROR, log_to_driver=False)
    try:
        runs = {"one process": timed_run(suite, spec, os.path.join(root, "local"), None)}
        for workers in (1, 2):
            runs[f"ray {workers} worker(s)"] = timed_run(suite, spec, os.path.join(root, f"ray{workers}"),
                                                         RayOptions(workers=workers))
    finally:
        ray.shutdown()
    one, two = runs["ray 1 worker(s)"], runs["ray 2 worker(s)"]
    return {"runs": runs, "ratio_total_1_over_2": one["total_s"] / two["total_s"],
            "ratio_answering_1_over_2": one["answering_s"] / two["answering_s"]}


def planner_overhead(requests_n: int = 1_000_000, per_video: int = 20, shards: int = 8) -> dict:
    sampling = Sampling(frames=8)
    videos = [VideoRef(f"/data/videos/{v:06d}.mp4") for v in range(requests_n // per_video)]
    requests = [Request("entailment", videos[i // per_video], f"caption {i}", sampling) for i in range(requests_n)]
    start = time.perf_counter()
    units = VideoUnits()
    placed = assign(unit_costs(requests, units), shards)
    mine = [r for r in requests if placed[units(r)] == 1]
    sharded = time.perf_counter()
    keys = {f"k{i}": r for i, r in enumerate(requests)}
    bundles = video_batches(list(keys), keys, 32, units)
    batched = time.perf_counter()
    return {"requests": requests_n, "videos": len(videos), "shards": shards, "shard_1_requests": len(mine),
            "shard_assignment_s": sharded - start, "video_batches_s": batched - sharded, "bundles": len(bundles)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-family", type=int, default=6)
    parser.add_argument("--width", type=int, default=384)
    parser.add_argument("--layers", type=int, default=6)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as root:
        scaling = suite_scaling(args, root)
    for name, run in scaling["runs"].items():
        print(f"{name:18s} {run['items']} items, {run['errors']} errors: {run['total_s']:.1f} s "
              f"({run['answering_s']:.1f} s after the workers started)")
    print(f"1 worker / 2 workers: {scaling['ratio_total_1_over_2']:.2f}x overall, "
          f"{scaling['ratio_answering_1_over_2']:.2f}x answering")
    planner = planner_overhead()
    print(f"planner on {planner['requests']:,} requests over {planner['videos']:,} videos: shard assignment "
          f"{planner['shard_assignment_s']:.2f} s, video-grouped batches {planner['video_batches_s']:.2f} s")
    print(json.dumps({"scaling": scaling, "planner": planner}, indent=2))


if __name__ == "__main__":
    main()
