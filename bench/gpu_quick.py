"""``bench/gpu.py --quick``: one short device check, sized for 4 minutes on an H200 at
``--shape 7b`` after the machine starts (not yet timed on one: the compiles of the 7B graphs are
its unknown), on a machine that has torch, transformers and numpy and nothing else but the PyAV
and zstandard wheels carried to it (``bash bench/gpu_wheels.sh --quick``).

Four JSON lines after the bench's head line, each with per-video figures, in the order entail,
cli, runner, choice (``--workloads`` picks some of them):

- ``entail``: 4 videos x 20 captions answered directly (``model.answer``), as the model's forwards
  run by default (compiled on a GPU) and with its own forward (eager): ``ms_per_video`` and
  ``eager_ms_per_video``, ``max_dp_vs_eager`` (the largest difference in p(yes));
- ``runner``: the same shape through ``Runner`` over a VELOCITI folder;
- ``choice``: 2 videos x 12 questions with 16-token answers, greedy texts compared with eager's;
- ``cli``: ``timefoil run velociti`` as a subprocess over 150 synthetic 10 s clips (the paper
  subset's 1.79 rows a clip), the model saved to a folder and loaded by path: wall, load,
  ``first_answer_after_load_s`` (from the "loaded" line on stderr to the first answer written to
  items.jsonl), ``decode_videos_per_s`` (the clips decoded alone, one thread) and
  ``run_videos_per_s``.

Per video (``*_per_video``): ``kernels`` (device kernels from torch.profiler on a GPU; on the CPU
the aten operators the profiler saw, ``kernels_counted`` says which), ``launches`` (the host's
kernel and graph launch calls; null on the CPU), ``syncs`` (stream, device and event
synchronisations and synchronous copies on a GPU; on the CPU the host reads of a tensor,
``item``/``tolist``/``__bool__``/``nonzero``/``int``/``float``, made while a forward runs, which
each wait for a GPU) and ``suffix_forwards``. Timed passes run after a warm-up pass (whose
seconds, compiles included, are ``warmup_s``), and counted passes apart from timed ones;
``graphs_compiled`` and ``first_compile_s`` say, by kind, what torch.compile made so far."""
from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager

import torch

import gpu as bench

# videos, captions (questions) a video, frames, height, width, answer tokens
QUICK = {"7b": {"entail": (4, 20, 10, 360, 640, 1), "runner": (4, 20, 10, 360, 640, 1),
                "choice": (2, 12, 10, 360, 640, 16), "cli": (150, 0, 10, 360, 640, 1)},
         "tiny": {"entail": (2, 5, 4, 56, 84, 1), "runner": (2, 5, 4, 56, 84, 1),
                  "choice": (2, 3, 4, 56, 84, 6), "cli": (4, 0, 10, 56, 84, 1)}}
PAPER_ROWS_A_CLIP = 1043 / 583  # VELOCITI's paper subset: 1,043 rows over 583 clips
SYNC_CALLS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy",
              "cuStreamSynchronize", "cuCtxSynchronize", "cuEventSynchronize")
LAUNCH_CALLS = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx", "cudaGraphLaunch")
HOST_READS = ("item", "tolist", "__bool__", "nonzero", "__int__", "__float__")


class PerVideo:
    """Kernels, launches, syncs and suffix forwards over one pass, per video."""

    def __init__(self, model, videos: int):
        self.model, self.videos = model, videos
        self.figures: dict = {}

    @contextmanager
    def counting(self):
        from torch.autograd import DeviceType
        from torch.profiler import ProfilerActivity, profile

        model, forwards, gpu = self.model, self.model.forwards, torch.cuda.is_available()
        counts = {"suffix": 0, "reads": 0}
        inside = [0]
        suffix, run = forwards.suffix, forwards._run

        def counted_suffix(*args, **kwargs):
            counts["suffix"] += 1
            return suffix(*args, **kwargs)

        def inside_run(*args, **kwargs):  # a compiled forward: the module's hooks do not see it
            inside[0] += 1
            try:
                return run(*args, **kwargs)
            finally:
                inside[0] -= 1

        def enter(*_):
            inside[0] += 1

        def leave(*_):
            inside[0] -= 1

        def reading(method):
            def read(tensor, *args, **kwargs):
                counts["reads"] += inside[0] > 0
                return method(tensor, *args, **kwargs)
            return read

        originals = {name: getattr(torch.Tensor, name) for name in HOST_READS}
        hooks = [model.model.register_forward_pre_hook(enter), model.model.register_forward_hook(leave)]
        forwards.suffix, forwards._run = counted_suffix, inside_run
        if not gpu:
            for name, method in originals.items():
                setattr(torch.Tensor, name, reading(method))
        try:
            activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if gpu else [])
            with profile(activities=activities) as prof:
                yield self
                if gpu:
                    torch.cuda.synchronize()
        finally:
            for name, method in originals.items():
                setattr(torch.Tensor, name, method)
            for hook in hooks:
                hook.remove()
            del forwards.suffix, forwards._run
        events = prof.key_averages()
        if gpu:
            kernels = sum(e.count for e in events if getattr(e, "device_type", None) == DeviceType.CUDA
                          and not e.key.startswith(("Memcpy", "Memset")))
            launches = sum(e.count for e in events if e.key in LAUNCH_CALLS)
            syncs = sum(e.count for e in events if e.key in SYNC_CALLS)
        else:
            kernels = sum(e.count for e in events if e.key.startswith("aten::"))
            launches, syncs = None, counts["reads"]
        per = self.videos
        self.figures = {"kernels_per_video": round(kernels / per, 1),
                        "launches_per_video": round(launches / per, 1) if launches is not None else None,
                        "syncs_per_video": round(syncs / per, 1),
                        "suffix_forwards_per_video": round(counts["suffix"] / per, 2),
                        "kernels_counted": "cuda kernels" if gpu else "aten ops (cpu)",
                        "syncs_counted": "device syncs" if gpu else "host reads in forwards (cpu)"}


def timed(call) -> tuple[object, float]:
    start = bench.synced()
    out = call()
    return out, bench.synced() - start


def passes(model, videos: int, answer) -> tuple[dict, object, object]:
    """Warm-up, timed and counted passes as the model runs by default, then a timed pass with its
    own forward (eager): (figures, answers, eager answers)."""
    _, warmup = timed(answer)
    ours, wall = timed(answer)
    counted = PerVideo(model, videos)
    with counted.counting():
        answer()
    was, model.forwards.on = model.forwards.on, False
    try:
        eager, eager_wall = timed(answer)
    finally:
        model.forwards.on = was
    return ({"ms_per_video": round(1e3 * wall / videos, 2), "eager_ms_per_video": round(1e3 * eager_wall / videos, 2),
             "warmup_s": round(warmup, 2), "forward": model.forwards.ran,
             "graphs_compiled": dict(model.forwards.graphs_compiled),
             "first_compile_s": {k: round(v, 1) for k, v in model.forwards.first_compile_s.items()},
             **counted.figures}, ours, eager)


def quick_entail(model, spec) -> dict:
    videos, captions, frames, height, width, _ = spec
    source_clips = bench.clips(videos, frames, height, width)
    requests = bench.entailment_requests(source_clips, captions)
    figures, ours, eager = passes(model, videos, lambda: model.answer(requests, lambda ref, s: source_clips[ref.path]))
    tolerance = 1e-4 if model.dtype == "float32" else 1e-3
    differences = [abs(a.probs["yes"] - b.probs["yes"]) for a, b in zip(ours, eager)]
    return {"workload": "entail", "quick": True, "questions": len(requests), "videos": videos,
            "batch_size": model.batch_size, "ms_per_question": round(figures["ms_per_video"] / captions, 3),
            "max_dp_vs_eager": float(f"{max(differences):.3g}"), "tolerance": tolerance,
            "equal": [sum(d <= tolerance for d in differences), len(requests)], **figures}


def quick_choice(model, spec) -> dict:
    videos, questions, frames, height, width, tokens = spec
    source_clips = bench.clips(videos, frames, height, width, seed=1)
    requests = bench.choice_requests(source_clips, questions, tokens)
    figures, ours, eager = passes(model, videos, lambda: model.answer(requests, lambda ref, s: source_clips[ref.path]))
    return {"workload": "choice", "quick": True, "questions": len(requests), "videos": videos, "max_tokens": tokens,
            "ms_per_question": round(figures["ms_per_video"] / questions, 3),
            "equal": [sum(a.raw == b.raw for a, b in zip(ours, eager)), len(requests)], **figures}


def quick_runner(model, spec, work: str) -> dict:
    from timefoil import RunConfig
    from timefoil.execution.runner import Runner
    from timefoil.video.sampling import Sampling

    videos, captions, frames, height, width, _ = spec
    data = bench.velociti_folder(os.path.join(work, "runner-data"), videos, videos * captions // 2, height, width)
    config = RunConfig("velociti", "hf:bench", data_dir=data, benchmark_args={"subset": "paper"},
                       protocol="entailment", sampling=Sampling(frames=frames))
    runs = iter(range(100))

    def answer():  # each pass in a run folder and a cache of its own: every clip decoded, every question asked
        n = next(runs)
        report = Runner(config, os.path.join(work, f"run{n}"), cache_dir=os.path.join(work, f"cache{n}"),
                        model=model, progress=False).run()
        return report

    figures, report, _ = passes(model, videos, answer)
    return {"workload": "runner", "quick": True, "questions": videos * captions, "videos": videos,
            "errors": report.errors, "ms_per_question": round(figures["ms_per_video"] / captions, 3), **figures}


def quick_cli(model, spec, folder: str, work: str, timeout_s: float = 900.0, compile_setting: str = "auto") -> dict:
    """``timefoil run velociti`` in a subprocess, the model loaded by path from ``folder`` (killed
    after ``timeout_s``: its return code then says so)."""
    from timefoil.core.items import VideoRef
    from timefoil.video.frames import FrameStore
    from timefoil.video.sampling import Sampling

    clips_n, _, _, height, width, _ = spec
    rows = max(clips_n, round(clips_n * PAPER_ROWS_A_CLIP))
    data = bench.velociti_folder(os.path.join(work, "cli-data"), clips_n, rows, height, width)
    store = FrameStore(cache_dir=os.path.join(work, "decode-only"))
    sampling = Sampling(frames=None, fps=1.0)  # the paper's: one frame a second
    start = time.perf_counter()
    for n in range(clips_n):
        store.get(VideoRef.file(os.path.join(data, "videos", f"v_clip{n:04d}_seg_0_10.mp4")), sampling)
    decode_s = time.perf_counter() - start
    start = time.perf_counter()
    model.model.save_pretrained(folder)
    saved_s = time.perf_counter() - start
    out = os.path.join(work, "cli-run")
    command = [sys.executable, "-m", "timefoil.cli", "run", "velociti", "--data", data, "--model", f"hf:{folder}",
               "--bench-arg", "subset=paper", "--out", out, "--cache-dir", os.path.join(work, "cli-cache"),
               "--model-arg", f"compile={compile_setting}"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (os.environ.get("PYTHONPATH"), bench_src()) if p)}
    started = time.perf_counter()
    stdout_file = open(os.path.join(work, "cli-stdout.txt"), "w+")
    process = subprocess.Popen(command, stdout=stdout_file, stderr=subprocess.PIPE, text=True, env=env)
    marks: dict[str, float] = {}
    said: list[str] = []

    def watch_stderr():
        for line in process.stderr:
            said.append(line.rstrip())
            if line.startswith("loaded "):
                marks.setdefault("loaded", time.perf_counter())

    reader = threading.Thread(target=watch_stderr, daemon=True)
    reader.start()
    while process.poll() is None:  # the first answer: the first line written to items.jsonl
        if time.perf_counter() - started > timeout_s:
            process.kill()
            process.wait(timeout=30)
            break
        if "first" not in marks and any(os.path.getsize(p) for p in glob.glob(os.path.join(out, "**", "items.jsonl"),
                                                                                recursive=True)):
            marks["first"] = time.perf_counter()
        time.sleep(0.02)
    wall = time.perf_counter() - started
    stdout_file.seek(0)
    stdout = stdout_file.read()
    stdout_file.close()
    reader.join(timeout=10)
    marks.setdefault("first", time.perf_counter())
    answered = sum(1 for p in glob.glob(os.path.join(out, "**", "items.jsonl"), recursive=True) for _ in open(p))
    load_s = marks["loaded"] - started if "loaded" in marks else None
    answering_s = wall - load_s if load_s is not None else None
    return {"workload": "cli", "quick": True, "clips": clips_n, "rows": rows, "captions": 2 * rows,
            "returncode": process.returncode, "answered": answered, "wall_s": round(wall, 2),
            "load_s": round(load_s, 2) if load_s is not None else None,
            "first_answer_after_load_s": round(marks["first"] - marks["loaded"], 2) if "loaded" in marks else None,
            "ms_per_video": round(1e3 * answering_s / clips_n, 2) if answering_s else None,
            "run_videos_per_s": round(clips_n / answering_s, 2) if answering_s else None,
            "decode_videos_per_s": round(clips_n / decode_s, 2), "saved_s": round(saved_s, 2),
            "compile_lines": [line for line in said if "compiled in" in line or "torch.compile" in line],
            "stderr_tail": said[-3:] if process.returncode else [], "stdout_tail": stdout.splitlines()[-2:]}


def bench_src() -> str:
    """The checkout's sources, for a subprocess started from a machine where timefoil is not installed."""
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")


def run(model, shape: str, folder: str, parts: list[str] | None = None, compile_setting: str = "auto") -> None:
    """The parts asked for (default: all), in this order: entailment and the CLI's run first, so
    that a machine taken back early has given those; choice, whose answers compile the decoding
    step as well, last."""
    specs = QUICK[shape]
    work = tempfile.mkdtemp(prefix="timefoil-gpu-quick-")
    every = {"entail": lambda: quick_entail(model, specs["entail"]),
             "cli": lambda: quick_cli(model, specs["cli"], folder, work, compile_setting=compile_setting),
             "runner": lambda: quick_runner(model, specs["runner"], work),
             "choice": lambda: quick_choice(model, specs["choice"])}
    unknown = set(parts or ()) - set(every)
    if unknown:
        raise SystemExit(f"--quick runs {', '.join(every)}, not {', '.join(sorted(unknown))}")
    try:
        for name, go in every.items():
            if parts and name not in parts:
                continue
            start = time.perf_counter()
            line = go()
            line["seconds"] = round(time.perf_counter() - start, 1)
            print(json.dumps(line), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
