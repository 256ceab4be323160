"""Served models: is a run bound by the server or by timefoil?

Generates 10 s 640x480 videos, starts a local OpenAI-compatible fake server that answers after
a fixed latency, and runs two workloads with both option orders (choice, 8 frames,
concurrency 8): VITATECS-shaped (one caption/counterfactual item per video) and
TemporalBench-shaped (several binary questions per video). Each case starts from an empty cache,
so decoding and image encoding are part of it.

Per case it prints the wall time, the CPU-bound time (the same run against a server that
answers at once), the latency bound (requests x latency / concurrency) and
ratio = wall / max(CPU-bound, latency bound): 1.0 means timefoil adds nothing to what the
slower of the CPU and the server imposes. The last line is one JSON object.

    python bench/api_throughput.py [--videos 24] [--latencies 0.02,1] [--threads N]
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np

from timefoil.runner import RunConfig, run
from timefoil.threads import apply_threads
from timefoil.video import Sampling, write_video

ASPECTS = ("Direction", "Intensity", "Sequence", "Localization", "Compositionality", "Type")
CONCURRENCY = 8


class Server:
    """Answers every chat completion with "A" after ``latency`` seconds."""

    def __init__(self):
        self.latency, self.calls = 0.0, 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                self.rfile.read(int(self.headers["Content-Length"]))
                time.sleep(outer.latency)
                outer.calls += 1
                body = json.dumps({"choices": [{"message": {"content": "A"}, "finish_reason": "stop"}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/v1"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()


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


def timed_run(benchmark: str, data: str, server: Server, latency: float, scratch: str) -> tuple[float, int]:
    server.latency, server.calls = latency, 0
    out = tempfile.mkdtemp(dir=scratch)
    config = RunConfig(benchmark, f"openai:bench@{server.url}", data_dir=data, protocol="choice", order_policy="both",
                       sampling=Sampling(frames=8), model_args={"concurrency": str(CONCURRENCY), "logprobs": "false"})
    start = time.perf_counter()
    report = run(config, os.path.join(out, "run"), cache_dir=os.path.join(out, "cache"), progress=False)
    elapsed = time.perf_counter() - start
    if report.errors or not server.calls:
        raise SystemExit(f"{benchmark}: {report.errors} errors, {server.calls} requests: the workload is broken")
    return elapsed, server.calls


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--videos", type=int, default=24)
    parser.add_argument("--latencies", default="0.02,1")
    parser.add_argument("--threads", type=int)
    args = parser.parse_args()
    apply_threads(args.threads)
    server = Server()
    results = []
    with tempfile.TemporaryDirectory() as scratch:
        root = os.path.join(scratch, "workload")  # not "data": VITATECS reads <repo>/data/ as its annotations
        os.makedirs(os.path.join(root, "videos", "MSRVTT"))
        names = [f"video{k}.mp4" for k in range(args.videos)]
        for k, name in enumerate(names):
            make_video(os.path.join(root, "videos", "MSRVTT", name), k)
        vitatecs_shaped(root, names)
        temporalbench_shaped(root, names[: max(1, args.videos // 4)])
        print(f"{'case':38s} {'wall s':>8} {'CPU s':>8} {'bound s':>8} {'ratio':>6}")
        for benchmark in ("vitatecs", "temporalbench"):
            cpu, requests = timed_run(benchmark, root, server, 0.0, scratch)
            for latency in (float(x) for x in args.latencies.split(",")):
                wall, _ = timed_run(benchmark, root, server, latency, scratch)
                bound = requests * latency / CONCURRENCY
                ratio = wall / max(cpu, bound)
                case = f"{benchmark} both orders, {requests} req, {latency:g} s"
                print(f"{case:38s} {wall:8.2f} {cpu:8.2f} {bound:8.2f} {ratio:6.2f}")
                results.append({"case": case, "wall": round(wall, 3), "cpu_bound": round(cpu, 3),
                                "latency_bound": round(bound, 3), "ratio": round(ratio, 3)})
    print(json.dumps({"worst_ratio": max(r["ratio"] for r in results), "cases": results}))


if __name__ == "__main__":
    main()
