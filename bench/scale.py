"""Scale-out on Ray: the synthetic suite on 1 and 2 workers, the planner on 1M requests, and a
benchmark folder of 100,000 items inspected and planned.

1. Wall time of the synthetic suite answered by a random-weight CLIP large enough to be
   compute-bound (width 384, 6 layers, 224-pixel frames: ~196 patches per frame, 8 frames per
   video), one torch thread per worker, on a local Ray cluster: 1 worker, then 2. Each run has
   its own empty cache, so both decode every video. Printed: wall time of each (with and without
   starting the workers) and the ratio 1 worker / 2 workers; the one-process run is the baseline.
2. The planner's overhead on a plan of 1,000,000 requests over 50,000 videos (20 each): the
   shard assignment (units, costs, longest-first placement, filtering one shard of 8) and the
   executor's video-grouped batches, in seconds.
3. ``timefoil inspect`` and a run's plan on a benchmark folder of 100,000 items (50,000 groups of
   two, over 10 videos), in seconds (wall and CPU): both should grow linearly, and stay under 30 s
   on a 2-core machine. The same at 25,000 items is printed beside it, with the ratio.

    python bench/scale.py [--per-family 6] [--width 384] [--layers 6] [--items 100000] [--items-only]
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


def items_folder(root: str, count: int) -> str:
    """``count`` items of two captions in groups of two over 10 tiny videos, as `timefoil run items` reads them."""
    import numpy as np

    from timefoil.video import write_video

    folder = os.path.join(root, f"items-{count}")
    os.makedirs(os.path.join(folder, "videos"))
    for v in range(10):
        write_video(os.path.join(folder, "videos", f"v{v}.mp4"), [np.full((16, 16, 3), 20 * v, np.uint8)] * 4, fps=4)
    with open(os.path.join(folder, "items.jsonl"), "w") as handle:
        handle.writelines(json.dumps({"id": f"i{i}", "group": f"g{i // 2}", "test": f"t{i % 5}",
                                      "video": f"videos/v{i % 10}.mp4", "texts": [f"a caption {i}", f"another {i}"],
                                      "target": i % 2}) + "\n" for i in range(count))
    return folder


def inspect_and_plan(root: str, count: int) -> dict:
    from timefoil.commands.inspection import inspect_benchmark
    from timefoil.execution.plan import plan_run

    folder = items_folder(root, count)
    wall, cpu = time.perf_counter(), time.process_time()
    inspected = inspect_benchmark("items", folder)
    inspect_s, inspect_cpu = time.perf_counter() - wall, time.process_time() - cpu
    wall, cpu = time.perf_counter(), time.process_time()
    plan = plan_run(RunConfig("items", "random", data_dir=folder))
    return {"items": count, "groups": inspected["total"], "requests": len(plan.full), "inspect_s": inspect_s,
            "inspect_cpu_s": inspect_cpu, "plan_s": time.perf_counter() - wall, "plan_cpu_s": time.process_time() - cpu}


def items_scaling(count: int) -> dict:
    with tempfile.TemporaryDirectory() as root:
        small, large = inspect_and_plan(root, count // 4), inspect_and_plan(root, count)
    return {"small": small, "large": large,
            "growth_4x_items": (large["inspect_cpu_s"] + large["plan_cpu_s"]) /
            (small["inspect_cpu_s"] + small["plan_cpu_s"])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-family", type=int, default=6)
    parser.add_argument("--width", type=int, default=384)
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--items-only", action="store_true", help="only the inspect and plan line")
    args = parser.parse_args()
    items = items_scaling(args.items)
    for size in ("small", "large"):
        run = items[size]
        print(f"{run['items']:,} items: inspect {run['inspect_s']:.1f} s ({run['inspect_cpu_s']:.1f} s CPU), plan "
              f"{run['plan_s']:.1f} s ({run['plan_cpu_s']:.1f} s CPU), {run['requests']:,} requests")
    print(f"4x the items: {items['growth_4x_items']:.2f}x the CPU time (linear: 4)")
    if args.items_only:
        print(json.dumps({"items": items}, indent=2))
        return
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
    print(json.dumps({"scaling": scaling, "planner": planner, "items": items}, indent=2))


if __name__ == "__main__":
    main()
