"""Served models: is a run bound by the server or by timefoil?

Generates 10 s 640x480 videos, starts a local OpenAI-compatible fake server that answers after
a fixed latency, and runs two workloads with both option orders (choice, 8 frames,
concurrency 8): VITATECS-shaped (one caption/counterfactual item per video) and
TemporalBench-shaped (several binary questions per video). Each case starts from an empty cache,
so decoding and image encoding are part of it.

Per case it prints the wall time, the CPU-bound time (the same run against a server that
answers at once), the latency bound (requests x latency / concurrency) and
ratio = wall / max(CPU-bound, latency bound): 1.0 means timefoil adds nothing to what the
slower of the CPU and the server imposes. It also prints, per workload, the CPU time of
timefoil's process for both option orders over that for one (balanced) order: the frames of a
sample are encoded once, so the second order should cost little more than its requests. The
server runs in a process of its own so that its work is not counted. The last line is one
JSON object.

Then the floors, for the VITATECS-shaped run with both orders: timefoil's CPU time against the
CPU of decoding each video's 8 frames once and encoding them once as JPEG, measured in this
process (goal: at most 1.5x); its wall time against its CPU time against a server that answers
at once (goal: at most 0.7, both cores used); and at 1 s latency its wall time against the
latency bound (goal: within 1.3x).

Every figure is the median of ``--repeats`` runs (3): a workload of a few seconds varies by a
third from run to run on a shared 2-core machine.

    python bench/api_throughput.py [--videos 24] [--latencies 0.02,1] [--repeats 3] [--threads N]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np

from timefoil import RunConfig, run
from timefoil.execution.store import RunLog
from timefoil.core.threads import apply_threads
from timefoil.video import Sampling, write_video

ASPECTS = ("Direction", "Intensity", "Sequence", "Localization", "Compositionality", "Type")
CONCURRENCY = 8


def serve() -> None:
    """The fake server: answers every chat completion with "A" after the latency named in the
    request's model ("lat-0.02"). Prints its port, then serves until killed."""
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            time.sleep(float(body["model"].removeprefix("lat-")))
            data = json.dumps({"choices": [{"message": {"content": "A"}, "finish_reason": "stop"}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(http.server_address[1], flush=True)
    http.serve_forever()


def make_video(path: str, seed: int) -> None:
    """10 s at 10 fps, 640x480: a textured background with a moving square (not flat colour,
    so image encoders do realistic work)."""
    rng = np.random.default_rng(seed)
    small = rng.integers(0, 255, (48, 64, 3), dtype=np.uint8)
    background = np.kron(small, np.ones((10, 10, 1), dtype=np.uint8))
    frames = []
    for t in range(100):
        frame = background.copy()
        x = (t * 5) % 560
        frame[200:280, x:x + 80] = (255, 255, 255)
        frames.append(frame)
    write_video(path, frames, fps=10, lossless=False)


def vitatecs_shaped(root: str, videos: list[str]) -> None:
    for k, aspect in enumerate(ASPECTS):
        with open(os.path.join(root, f"{aspect}.jsonl"), "w") as handle:
            for name in videos[k::len(ASPECTS)]:
                handle.write(json.dumps({"src_dataset": "MSRVTT", "video_name": name, "caption": f"a square moves {k}",
                                         "counterfactual": f"a square stays {k}"}) + "\n")


def temporalbench_shaped(root: str, videos: list[str], questions: int = 4) -> None:
    records = []
    for name in videos:
        for q in range(questions):
            records.append({"idx": f"{name}_{q}", "video_name": f"videos/MSRVTT/{name}", "category": "order",
                            "dataset": "COIN", "GT": "A", "question": f"Which caption best describes it?\n"
                            f"A. the square moves right {q}\nB. the square moves left {q}\nAnswer with the letter."})
    with open(os.path.join(root, "temporalbench_short_qa.json"), "w") as handle:
        json.dump(records, handle)


def timed_run(benchmark: str, data: str, url: str, latency: float, scratch: str,
              order: str = "both") -> tuple[float, float, int]:
    """(wall seconds, CPU seconds of this process, distinct requests) of one run from empty caches."""
    out = tempfile.mkdtemp(dir=scratch)
    config = RunConfig(benchmark, f"openai:lat-{latency:g}@{url}", data_dir=data, protocol="choice",
                       order_policy=order, sampling=Sampling(frames=8),
                       model_args={"concurrency": str(CONCURRENCY), "logprobs": "false"})
    start, cpu = time.perf_counter(), time.process_time()
    report = run(config, os.path.join(out, "run"), cache_dir=os.path.join(out, "cache"), progress=False)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    requests = len({r["request"]["key"] for r in RunLog(os.path.join(out, "run")).read()})
    if report.errors or not requests:
        raise SystemExit(f"{benchmark}: {report.errors} errors, {requests} requests: the workload is broken")
    return elapsed, cpu, requests


def floor_cpu(root: str, videos: list[str]) -> float:
    """CPU seconds to decode each video's 8 frames once and encode them once as JPEG (90): what
    any harness must spend on a served run of these videos."""
    from timefoil.core.items import VideoRef
    from timefoil.models.served.frames import encode_image
    from timefoil.video import FrameStore

    start = time.process_time()
    for name in videos:
        frames = FrameStore().get(VideoRef.file(os.path.join(root, "videos", "MSRVTT", name)), Sampling(frames=8))
        for frame in frames.array:
            encode_image(frame, "jpeg", 90)
    return time.process_time() - start


def median_run(repeats: int, *args, **kwargs) -> tuple[float, float, int]:
    """The median wall time and the median CPU time of ``repeats`` runs."""
    runs = [timed_run(*args, **kwargs) for _ in range(repeats)]
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs), runs[0][2]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--videos", type=int, default=24)
    parser.add_argument("--latencies", default="0.02,1")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int)
    args = parser.parse_args()
    apply_threads(args.threads)
    server = subprocess.Popen([sys.executable, __file__, "--serve"], stdout=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{server.stdout.readline().strip()}/v1"
    results, orders = [], []
    with tempfile.TemporaryDirectory() as scratch:
        root = os.path.join(scratch, "workload")  # not "data": VITATECS reads <repo>/data/ as its annotations
        os.makedirs(os.path.join(root, "videos", "MSRVTT"))
        names = [f"video{k}.mp4" for k in range(args.videos)]
        for k, name in enumerate(names):
            make_video(os.path.join(root, "videos", "MSRVTT", name), k)
        vitatecs_shaped(root, names)
        temporalbench_shaped(root, names[: max(1, args.videos // 4)])
        floor = statistics.median(floor_cpu(root, names) for _ in range(args.repeats))
        floors = {}
        print(f"{'case':38s} {'wall s':>8} {'CPU s':>8} {'bound s':>8} {'ratio':>6}")
        for benchmark in ("vitatecs", "temporalbench"):
            cpu, cpu_both, requests = median_run(args.repeats, benchmark, root, url, 0.0, scratch)
            if benchmark == "vitatecs":
                floors.update(cpu_over_floor=cpu_both / floor, wall_over_cpu=cpu / cpu_both, floor_cpu=floor,
                              cpu=cpu_both, wall=cpu)
            _, cpu_one, one_order = median_run(args.repeats, benchmark, root, url, 0.0, scratch, order="balanced")
            orders.append({"workload": benchmark, "requests": [one_order, requests], "cpu_s": [round(cpu_one, 3),
                           round(cpu_both, 3)], "ratio": round(cpu_both / cpu_one, 3)})
            for latency in (float(x) for x in args.latencies.split(",")):
                wall, _, _ = median_run(args.repeats, benchmark, root, url, latency, scratch)
                bound = requests * latency / CONCURRENCY
                ratio = wall / max(cpu, bound)
                case = f"{benchmark} both orders, {requests} req, {latency:g} s"
                print(f"{case:38s} {wall:8.2f} {cpu:8.2f} {bound:8.2f} {ratio:6.2f}")
                results.append({"case": case, "wall": round(wall, 3), "cpu_bound": round(cpu, 3),
                                "latency_bound": round(bound, 3), "ratio": round(ratio, 3)})
                if benchmark == "vitatecs" and latency == 1:
                    floors["wall_over_latency_bound_at_1s"] = wall / bound
    server.kill()
    for entry in orders:
        one, both = entry["requests"]
        print(f"{entry['workload']}: CPU time of both orders ({both} req) / one order ({one} req): "
              f"{entry['cpu_s'][1]:.2f} / {entry['cpu_s'][0]:.2f} = {entry['ratio']:.2f}")
    print(f"floors, VITATECS-shaped, both orders, {args.videos} videos:")
    print(f"  CPU {floors['cpu']:.2f} s / decode 8 frames + JPEG once per video {floors['floor_cpu']:.2f} s = "
          f"{floors['cpu_over_floor']:.2f} (goal <= 1.5: {'met' if floors['cpu_over_floor'] <= 1.5 else 'NOT met'})")
    print(f"  wall {floors['wall']:.2f} s / CPU {floors['cpu']:.2f} s = {floors['wall_over_cpu']:.2f} "
          f"(goal <= 0.7: {'met' if floors['wall_over_cpu'] <= 0.7 else 'NOT met'})")
    if "wall_over_latency_bound_at_1s" in floors:
        at_1s = floors["wall_over_latency_bound_at_1s"]
        print(f"  at 1 s latency: wall / latency bound = {at_1s:.2f} "
              f"(goal <= 1.3: {'met' if at_1s <= 1.3 else 'NOT met'})")
    print(json.dumps({"worst_ratio": max(r["ratio"] for r in results), "cases": results,
                      "worst_orders_cpu_ratio": max(o["ratio"] for o in orders), "orders": orders,
                      "floors": {k: round(v, 3) for k, v in floors.items()}}))


if __name__ == "__main__":
    serve() if sys.argv[1:] == ["--serve"] else main()
