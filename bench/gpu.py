"""timefoil on a GPU as its users run it: a random-weight video LLM of a real 7B shape built on
the device, the workloads researchers run, each against a per-question loop of the same
prompts and frames in the same run, answers compared.

Workloads (``--shape 7b``; ``--shape tiny`` runs the same on a small model and small frames,
on the CPU in well under 5 minutes):

- ``entail``: VELOCITI-shaped entailment, 16 videos x 20 captions, 10 frames of 360x640;
- ``entail_b64``: the same at batch 64 with 40 captions a video;
- ``entail_32f``: 32 frames a video;
- ``choice``: VITATECS-shaped choice with generation, 8 videos x 12 questions, 16-token answers;
- ``decode``: decode steps shared across 16 videos against video by video;
- ``runner`` and ``runner_b64``: the ``entail`` workload through the runner (a VELOCITI folder of
  the same videos and captions, ``Runner`` with the model), at batch 8 and 64;
- ``e2e``: ``timefoil run velociti`` over a paper-subset-layout folder of synthetic 10 s clips,
  the model saved to a folder and loaded by path (wall, and load / decode / answer).

``--shape 7b-io`` keeps the 7B shape's inputs (the 7B processor's pixel budget, 10 frames of
360x640: 1,504 prefix tokens, 20 captions a video) with a tiny model, so that the host's share
runs on a CPU: the entailment rows then say what the host spends per video beside the model.

Entailment rows (direct and through the runner) also print, per video: ``host_ms_per_video``
(the wall of answering less the time inside the model's forwards, measured in a pass of its own
with the device synchronised around each forward), ``pixel_ms_per_video`` (the part of it spent
building pixels), ``model_ms_per_video``, ``prefix_forwards_per_video`` (forwards that ran the
vision tower), ``pixel_builds_per_video``, ``crossings_per_video`` (tensors sent to the device),
``reads_per_video`` (reads of the model's outputs back to the host: each one waits for the
device), ``cache_copies`` and, where there is a GPU, ``peak_gib``; and against the per-question
loop, ``max_dp`` (the largest difference in p(yes)) and ``near_half`` (answers with |e - 0.5| <
0.03, where such a difference could flip them).

Each prints one JSON line with at least ``workload``, ``timefoil_ms_per_question``,
``naive_ms_per_question``, ``equal`` ([same, compared]) and ``mfu`` (the share of the device's
bf16 peak the workload's model FLOPs came to: null without a GPU). Entailment workloads add,
from torch.profiler over timefoil's pass, the share of the wall the GPU was busy and the share of
GPU time spent copying from the host (null without a GPU).

The per-question loop is what the released VELOCITI script and per-question harnesses do: one
forward (entailment) or one ``generate()`` (choice) per question, the video encoded and
prefilled every time.

``--quick`` (``bench/gpu_quick.py``) is one short device check instead: entail, runner, choice and
``timefoil run velociti`` over 150 synthetic clips, each with per-video kernels, syncs, suffix
forwards and ms, compiled forwards against eager ones; under 4 minutes on an H200 at ``--shape 7b``.

    python bench/gpu.py [--shape 7b|tiny] [--family qwen2_vl|qwen2_5_vl] [--workloads entail,choice,...]
                        [--peak-tflops N] [--threads N] [--compile auto|on|off] [--quick]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import time
from contextlib import contextmanager

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from generation import WORDS, minimum_tokens, naive  # noqa: E402  (the choice loop, shared)

from timefoil.core.items import VideoRef  # noqa: E402
from timefoil.core.threads import apply_threads  # noqa: E402
from timefoil.models.families import FAMILIES  # noqa: E402
from timefoil.models.local import sync_free  # noqa: E402
from timefoil.models.local.hf_generative import HFGenerative  # noqa: E402
from timefoil.models.local.hf_inputs import frames_of  # noqa: E402
from timefoil.models.requests import Request  # noqa: E402
from timefoil.protocols import Prompts  # noqa: E402
from timefoil.testing import vlm_tokenizer, write_processor_files  # noqa: E402

# bf16 dense peak by the device's name (FLOP/s), the first name found in it (NVL and PCIe boards
# before the SXM ones whose names they contain); --peak-tflops for any other
PEAKS = (("H200 NVL", 835e12), ("H200", 989e12), ("H100 NVL", 835e12), ("H100 PCIe", 756e12),
         ("H100 80GB HBM3", 989e12), ("H100 SXM", 989e12), ("A100", 312e12), ("L40S", 362e12))
TEXT_7B = dict(vocab_size=152064, hidden_size=3584, intermediate_size=18944, num_hidden_layers=28,
               num_attention_heads=28, num_key_value_heads=4, max_position_embeddings=32768,
               rope_parameters={"rope_type": "default", "mrope_section": [16, 24, 24], "rope_theta": 1e6})
VISION_7B = {"qwen2_vl": dict(depth=32, embed_dim=1280, hidden_size=3584, num_heads=16, mlp_ratio=4),
             "qwen2_5_vl": dict(depth=32, hidden_size=1280, intermediate_size=3420, num_heads=16,
                                out_hidden_size=3584, window_size=112, fullatt_block_indexes=[7, 15, 23, 31],
                                tokens_per_second=2)}
TEXT_TINY = dict(vocab_size=4096, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, max_position_embeddings=32768,
                 rope_parameters={"rope_type": "default", "mrope_section": [2, 3, 3], "rope_theta": 1e6})
VISION_TINY = {"qwen2_vl": dict(depth=1, embed_dim=32, hidden_size=64, num_heads=2, mlp_ratio=2),
               "qwen2_5_vl": dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=64,
                                  window_size=56, fullatt_block_indexes=[0], tokens_per_second=2)}
# videos, captions (questions) a video, frames, height, width, batch size, answer tokens
SHAPES = {
    "7b": {"entail": (16, 20, 10, 360, 640, 8, 1), "entail_b64": (16, 40, 10, 360, 640, 64, 1),
           "entail_32f": (8, 20, 32, 360, 640, 8, 1), "choice": (8, 12, 10, 360, 640, 12, 16),
           "decode": (16, 2, 10, 360, 640, 2, 16), "runner": (16, 20, 10, 360, 640, 8, 1),
           "runner_b64": (16, 20, 10, 360, 640, 64, 1), "e2e": (583, 1043, 10, 360, 640, 8, 1)},
    "7b-io": {"entail": (8, 20, 10, 360, 640, 8, 1), "runner": (8, 20, 10, 360, 640, 8, 1),
              "runner_b64": (8, 20, 10, 360, 640, 64, 1)},
    "tiny": {"entail": (3, 5, 4, 56, 84, 4, 1), "entail_b64": (2, 8, 4, 56, 84, 8, 1),
             "entail_32f": (2, 4, 8, 56, 84, 4, 1), "choice": (2, 4, 4, 56, 84, 4, 6),
             "decode": (4, 2, 4, 56, 84, 2, 6), "runner": (2, 5, 4, 56, 84, 2, 1),
             "runner_b64": (2, 5, 4, 56, 84, 8, 1), "e2e": (4, 6, 10, 56, 84, 4, 1)},
}


VELOCITI_PAIRS = 17584


def build(folder: str, family: str, shape: str, device: torch.device, dtype: torch.dtype):
    """A random-weight model of the shape, built on the device, and its processor files (the
    real processor's video settings: a 360x640 frame is 13x23 tokens after merging)."""
    from transformers import (Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration, Qwen2VLConfig,
                              Qwen2VLForConditionalGeneration)

    prompts = Prompts()
    tokenizer = vlm_tokenizer(list(WORDS) + [prompts.entailment, prompts.choice, "Yes No A B"], family)
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in FAMILIES[family].tiny.special_tokens}
    text = {**(TEXT_7B if shape == "7b" else TEXT_TINY), "pad_token_id": tokenizer.pad_token_id,
            "eos_token_id": tokenizer.eos_token_id, "bos_token_id": None}
    kinds = {"qwen2_vl": (Qwen2VLConfig, Qwen2VLForConditionalGeneration),
             "qwen2_5_vl": (Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration)}
    config_class, model_class = kinds[family]
    config = config_class(text_config=text, vision_config=(VISION_7B if shape == "7b" else VISION_TINY)[family],
                          image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
                          vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"])
    config._attn_implementation = "sdpa"
    torch.manual_seed(0)
    default = torch.get_default_dtype()
    torch.set_default_dtype(dtype)  # made in its precision on the device: no host copy of 8 B parameters
    try:
        with device:
            model = model_class(config).eval()
    finally:
        torch.set_default_dtype(default)
    sync_free.install(model, family)  # as a model loaded by path has it: no vision block reads the device
    video = {"min_pixels": 128 * 28 * 28, "max_pixels": 768 * 28 * 28} if shape.startswith("7b") else \
        {"min_pixels": 28 * 28, "max_pixels": 56 * 84}
    write_processor_files(folder, family, tokenizer, video=video)
    return model, tokenizer


def clips(videos: int, frames: int, height: int, width: int, seed: int = 0) -> dict[str, object]:
    rng = np.random.default_rng(seed)
    return {f"/bench/clip{v}.mp4": frames_of(rng.integers(0, 256, (frames, height, width, 3), dtype=np.uint8),
                                             rate=frames / 10) for v in range(videos)}


def entailment_requests(videos: dict, captions: int) -> list[Request]:
    rng, prompt = random.Random(1), Prompts().entailment
    out = []
    for path in videos:
        ref = VideoRef.file(path)
        for _ in range(captions):
            caption = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 14)))  # unequal lengths
            out.append(Request("entailment", ref, prompt.format(caption=caption), caption=caption))
    return out


def choice_requests(videos: dict, questions: int, tokens: int) -> list[Request]:
    rng, prompt = random.Random(2), Prompts().choice
    out = []
    for path in videos:
        ref = VideoRef.file(path)
        for _ in range(questions):
            a, b = (" ".join(rng.choice(WORDS) for _ in range(10)) for _ in range(2))
            out.append(Request("choice", ref, prompt.format(options=f"A. {a}\nB. {b}"), labels=("A", "B"),
                               option_texts=(a, b), max_tokens=tokens))
    return out


def synced() -> float:
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return time.perf_counter()


def seen_anew(model: HFGenerative) -> None:
    """The model's kept pixels dropped: a pass builds each video's pixels once, as a run that
    sees each video once does (the pixel cache would otherwise hand them over from the pass before)."""
    model.inputs.pixels.clear()


def naive_entailment(model: HFGenerative, requests: list[Request], source) -> list[float]:
    """One forward per question on its whole prompt and frames: P(yes) of its next token."""
    out = []
    with torch.inference_mode():
        for request in requests:
            clip = source(request.video, request.sampling)
            batch = model._encode([model._prompt(request, clip)[0]], [clip])
            logits = model.model(**batch).logits[:, -1].float()
            out.append(model._yes_no(torch.log_softmax(logits, -1)[0]).probs["yes"])
    return out


def model_flops(model: HFGenerative, requests: list[Request], source) -> float:
    """The FLOPs the workload needs: each video's prompt prefix once, each question's suffix once
    through the language model (2 x parameters a token, plus attention over what it sees), and
    each video once through the vision tower."""
    lm = model.model.model.language_model if hasattr(model.model.model, "language_model") else model.model.model
    visual = model.model.model.visual if hasattr(model.model.model, "visual") else model.model.visual
    lm_params = sum(p.numel() for n, p in lm.named_parameters() if "embed_tokens" not in n)
    vision_params = sum(p.numel() for p in visual.parameters())
    config = model.model.config.get_text_config()
    width = config.num_hidden_layers * config.hidden_size
    pairs = [(r.video, r) for r in requests]
    tokens = minimum_tokens(model, pairs, source, 0)
    # every token through the layers; the vocabulary head only where an answer is read
    total = 2 * lm_params * tokens + 2 * config.vocab_size * config.hidden_size * len(requests)
    seen: dict[str, int] = {}
    for request in requests:
        clip = source(request.video, request.sampling)
        batch = model.inputs.encode([model._prompt(request, clip)[0]], [clip])
        length = int(batch["input_ids"].shape[1])
        key = request.video.key()
        if key not in seen:
            seen[key] = length
            total += 4 * width * length * length / 2  # causal attention over the prefix
            grid = batch.get("video_grid_thw", batch.get("image_grid_thw"))
            patches = int(grid.prod(-1).sum())
            per_frame = int(grid[0, 1] * grid[0, 2])
            total += 2 * vision_params * patches + 4 * visual.config.depth * getattr(
                visual.config, "embed_dim", getattr(visual.config, "hidden_size", 0)) * patches * per_frame
        else:
            total += 4 * width * length * 8  # a suffix's ~8 tokens attending to the whole prompt
    return float(total)


def peak_flops(override: float | None) -> float | None:
    if override:
        return override * 1e12
    if not torch.cuda.is_available():
        return None
    return peak_of(torch.cuda.get_device_name(0))


def peak_of(name: str) -> float | None:
    """The bf16 dense peak of a device of this name, or None where it is not known."""
    return next((peak for key, peak in PEAKS if key in name), None)


@contextmanager
def profiled(enabled: bool):
    """torch.profiler over the block where there is a GPU: (busy share, host-to-device share)."""
    found: dict = {}
    if not enabled:
        yield found
        return
    from torch.profiler import ProfilerActivity, profile

    from torch.autograd import DeviceType

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        torch.cuda.synchronize()
        start = time.perf_counter()  # the wall of the block itself, not the profiler's start
        yield found
        torch.cuda.synchronize()
        wall_us = (time.perf_counter() - start) * 1e6
    device_us = htod_us = 0.0
    # the device's own rows (kernels, copies) only: a CPU operator's row repeats its kernels' time
    for event in prof.key_averages():
        if getattr(event, "device_type", None) != DeviceType.CUDA:
            continue
        own = getattr(event, "self_device_time_total", None)
        own = getattr(event, "self_cuda_time_total", 0.0) if own is None else own
        device_us += own
        if "HtoD" in event.key:
            htod_us += own
    found.update(gpu_busy=round(min(1.0, device_us / wall_us), 3),
                 htod_share=round(htod_us / device_us, 4) if device_us else None)


class Tally:
    """What answering costs the host and what crosses to and from the device, per pass: forwards
    timed with the device synchronised around each (so the rest of the wall is the host's),
    vision-tower forwards, pixel builds and their time, tensors sent to the device, reads of the
    model's outputs (floating-point tensors read by timefoil's code) and prefix cache copies."""

    def __init__(self, model: HFGenerative):
        self.model = model
        self.forward_s = self.pixel_s = 0.0
        self.vision = self.pixels = self.crossings = self.reads = 0
        self._started = 0.0

    @contextmanager
    def counting(self):
        model, patched = self.model, []
        seen_anew(model)

        def patch(owner, name, wrapper):
            original = getattr(owner, name)
            setattr(owner, name, wrapper(original))
            patched.append((owner, name, original))

        def before(module, args, kwargs):
            self.vision += any(k.startswith("pixel_values") and v is not None for k, v in kwargs.items())
            self._started = synced()

        def after(module, args, kwargs, output):
            self.forward_s += synced() - self._started

        def timed_build(method):
            def build(*args, **kwargs):
                start = time.perf_counter()
                try:
                    return method(*args, **kwargs)
                finally:
                    self.pixels += 1
                    self.pixel_s += time.perf_counter() - start
            return build

        def crossing(method):
            def on_device(batch):
                self.crossings += sum(torch.is_tensor(v) for v in batch.values()) if model.device.type != "cpu" else 0
                return method(batch)
            return on_device

        def compiled_forward(method):
            def run(*args, **kwargs):
                start = synced()
                try:
                    return method(*args, **kwargs)
                finally:
                    self.forward_s += synced() - start
            return run

        def read(method):
            def counted(tensor, *args, **kwargs):
                if tensor.is_floating_point() and "timefoil" in sys._getframe(1).f_code.co_filename:
                    self.reads += 1
                return method(tensor, *args, **kwargs)
            return counted

        hooks = [model.model.register_forward_pre_hook(before, with_kwargs=True),
                 model.model.register_forward_hook(after, with_kwargs=True)]
        if model.inputs.builder is not None:
            for name in ("video", "images"):
                patch(model.inputs.builder, name, timed_build)
        patch(model, "_on_device", crossing)
        patch(model.forwards, "_run", compiled_forward)  # compiled forwards bypass the module's hooks
        for name in ("tolist", "item", "__float__"):
            patch(torch.Tensor, name, read)
        try:
            yield self
        finally:
            for hook in hooks:
                hook.remove()
            for owner, name, original in reversed(patched):
                if owner is model or owner is model.inputs.builder or owner is model.forwards:
                    delattr(owner, name)  # the instance's own wrapper: the class's method shows again
                else:
                    setattr(owner, name, original)

    def per_video(self, wall_s: float, videos: int) -> dict:
        peak = torch.cuda.max_memory_allocated() / 2 ** 30 if torch.cuda.is_available() else None
        return {"host_ms_per_video": round(1e3 * (wall_s - self.forward_s) / videos, 2),
                "pixel_ms_per_video": round(1e3 * self.pixel_s / videos, 2),
                "host_ms_beyond_pixels": round(1e3 * (wall_s - self.forward_s - self.pixel_s) / videos, 2),
                "model_ms_per_video": round(1e3 * self.forward_s / videos, 2),
                "prefix_forwards_per_video": round(self.vision / videos, 3),
                "pixel_builds_per_video": round(self.pixels / videos, 3),
                "crossings_per_video": round(self.crossings / videos, 2),
                "reads_per_video": round(self.reads / videos, 2),
                "cache_copies": self.model.stats.get("cache_copies", 0),
                "peak_gib": round(peak, 2) if peak is not None else None}


def run_entailment(name: str, model: HFGenerative, spec: tuple, args, device) -> dict:
    videos, captions, frames, height, width, batch, _ = spec
    source_clips = clips(videos, frames, height, width)
    requests = entailment_requests(source_clips, captions)
    model.batch_size = batch
    source = lambda ref, sampling: source_clips[ref.path]  # noqa: E731
    model.answer(requests[:captions], source)  # warm up on one whole video (kernels, memos, allocator)
    seen_anew(model)
    start = synced()
    ours = model.answer(requests, source)
    t_ours = synced() - start
    with profiled(device.type == "cuda") as shares:
        seen_anew(model)
        model.answer(requests, source)
    with Tally(model).counting() as tally:  # a pass of its own: its synchronised forwards cost time
        start = synced()
        model.answer(requests, source)
        tallied = tally.per_video(synced() - start, videos)
    start = synced()
    theirs = naive_entailment(model, requests, source)
    t_naive = synced() - start
    tolerance = 1e-4 if model.dtype == "float32" else 2e-2
    differences = [abs(a.probs["yes"] - b) for a, b in zip(ours, theirs)]
    same = sum(d <= tolerance for d in differences)
    flops = model_flops(model, requests, source)
    peak = peak_flops(args.peak_tflops)
    return {"workload": name, "questions": len(requests), "videos": videos, "frames": frames,
            "batch_size": batch, "timefoil_ms_per_question": round(1e3 * t_ours / len(requests), 3),
            "naive_ms_per_question": round(1e3 * t_naive / len(requests), 3),
            "speedup": round(t_naive / t_ours, 2), "equal": [same, len(requests)], "tolerance": tolerance,
            "max_dp": float(f"{max(differences):.3g}"), "near_half": near_half(ours),
            "model_tflop": float(f"{flops / 1e12:.4g}"), "mfu": round(flops / t_ours / peak, 4) if peak else None,
            "gpu_busy": shares.get("gpu_busy"), "htod_share": shares.get("htod_share"), **tallied}


def near_half(answers) -> int:
    """Answers whose e = p(yes) / (p(yes) + p(no)) lies within 0.03 of 0.5."""
    return sum(abs(a.probs["yes"] / max(a.probs["yes"] + a.probs["no"], 1e-30) - 0.5) < 0.03 for a in answers)


def run_runner(name: str, model: HFGenerative, spec: tuple, args, device, direct: dict | None) -> dict:
    """The entailment workload through the runner, as ``timefoil run`` answers it: a VELOCITI
    folder of the same shape (each row a caption and its foil), the model given to ``Runner``."""
    from timefoil import RunConfig
    from timefoil.execution.runner import Runner
    from timefoil.video.sampling import Sampling

    videos, captions, frames, height, width, batch, _ = spec
    work = tempfile.mkdtemp(prefix="timefoil-gpu-bench-")
    try:
        data = velociti_folder(os.path.join(work, "velociti"), videos, videos * captions // 2, height, width)
        config = RunConfig("velociti", "hf:bench", data_dir=data, benchmark_args={"subset": "paper"},
                           protocol="entailment", sampling=Sampling(frames=frames))
        model.batch_size = batch
        answer, spent = model.answer, [0.0]

        def timed(requests, source):  # the answering alone, not the decoding or the recording
            start = synced()
            try:
                return answer(requests, source)
            finally:
                spent[0] += synced() - start

        model.answer = timed
        try:
            seen_anew(model)
            start = synced()  # each run in a cache of its own: every question asked, every clip decoded
            report = Runner(config, os.path.join(work, "run"), cache_dir=os.path.join(work, "cache"), model=model,
                            progress=False).run()
            wall = synced() - start
            answering, spent[0] = spent[0], 0.0
            with Tally(model).counting() as tally:
                Runner(config, os.path.join(work, "tallied"), cache_dir=os.path.join(work, "cache-tallied"),
                       model=model, progress=False).run()
                tallied = tally.per_video(spent[0], videos)
        finally:
            del model.answer
        questions = videos * captions
        per_question = 1e3 * answering / questions
        return {"workload": name, "questions": questions, "videos": videos, "frames": frames, "batch_size": batch,
                "errors": report.errors, "equal": [questions - report.errors, questions],
                "timefoil_ms_per_question": round(per_question, 3), "naive_ms_per_question": None,
                "wall_ms_per_question": round(1e3 * wall / questions, 3),
                "over_direct": round(per_question / direct["timefoil_ms_per_question"], 3) if direct else None,
                # VELOCITI whole: 17,584 video-caption pairs (each one entailment question) over 850 videos
                "velociti_full_min": round(per_question * VELOCITI_PAIRS / 60e3, 1),
                "mfu": None, **tallied}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def choice_workload(model: HFGenerative, spec: tuple, seed: int):
    """The choice questions of ``spec`` over their clips, and the frame source, warmed up."""
    videos, questions, frames, height, width, batch, tokens = spec
    source_clips = clips(videos, frames, height, width, seed=seed)
    requests = choice_requests(source_clips, questions, tokens)
    model.batch_size = batch
    source = lambda ref, sampling: source_clips[ref.path]  # noqa: E731
    model.answer(requests[:2], source)
    seen_anew(model)
    return requests, source


def run_choice(name: str, model: HFGenerative, spec: tuple, args, device) -> dict:
    videos, _, frames, _, _, _, tokens = spec
    requests, source = choice_workload(model, spec, seed=1)
    start = synced()
    ours = model.answer(requests, source)
    t_ours = synced() - start
    start = synced()
    with torch.inference_mode():
        texts, _ = naive(model, requests, source)
    t_naive = synced() - start
    same = sum(a.raw == t for a, t in zip(ours, texts))
    flops = model_flops(model, requests, source)
    peak = peak_flops(args.peak_tflops)
    return {"workload": name, "questions": len(requests), "videos": videos, "frames": frames, "max_tokens": tokens,
            "timefoil_ms_per_question": round(1e3 * t_ours / len(requests), 3),
            "naive_ms_per_question": round(1e3 * t_naive / len(requests), 3), "speedup": round(t_naive / t_ours, 2),
            "equal": [same, len(requests)], "mfu": round(flops / t_ours / peak, 4) if peak else None}


def run_decode(name: str, model: HFGenerative, spec: tuple, args, device) -> dict:
    """Decode steps shared across videos (the default) against video by video; "naive" here is
    video by video."""
    videos, tokens = spec[0], spec[6]
    requests, source = choice_workload(model, spec, seed=2)
    said, walls = {}, {}
    for shared in (True, False):
        model.decode_batching = shared
        start = synced()
        said[shared] = [a.raw for a in model.answer(requests, source)]
        walls[shared] = synced() - start
    model.decode_batching = True
    return {"workload": name, "questions": len(requests), "videos": videos, "max_tokens": tokens,
            "timefoil_ms_per_question": round(1e3 * walls[True] / len(requests), 3),
            "naive_ms_per_question": round(1e3 * walls[False] / len(requests), 3),
            "speedup": round(walls[False] / walls[True], 2),
            "equal": [sum(a == b for a, b in zip(said[True], said[False])), len(requests)], "mfu": None}


def velociti_folder(root: str, clips_n: int, rows: int, height: int, width: int) -> str:
    """The paper subset's layout: velociti.jsonl (every row in_subset) and videos/<id>.mp4, each
    a 10 s synthetic clip at 4 fps (sampling takes one frame a second), written by 8 threads."""
    from concurrent.futures import ThreadPoolExecutor

    from timefoil.benchmarks.velociti import TESTS
    from timefoil.video.decode import write_video

    rng = np.random.default_rng(3)
    os.makedirs(os.path.join(root, "videos"), exist_ok=True)
    words = random.Random(4)
    with open(os.path.join(root, "velociti.jsonl"), "w") as handle:
        for n in range(rows):
            video_id = f"v_clip{n % clips_n:04d}_seg_0_10"
            caption = " ".join(words.choice(WORDS) for _ in range(10))
            foil = " ".join(words.choice(WORDS) for _ in range(10))
            handle.write(json.dumps({"test_name": TESTS[n % len(TESTS)], "video_id": video_id, "pos": caption,
                                     "neg": foil, "in_subset": True}) + "\n")
    bases = [rng.integers(0, 256, (height, width, 3), dtype=np.uint8) for _ in range(clips_n)]

    def write(n: int) -> None:
        frames = np.stack([np.roll(bases[n], 3 * t, axis=1) for t in range(40)])
        write_video(os.path.join(root, "videos", f"v_clip{n:04d}_seg_0_10.mp4"), frames, 4, lossless=False)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(write, range(clips_n)))
    return root


def run_e2e(name: str, model: HFGenerative, spec: tuple, args, device, folder: str, per_caption_ms: float | None):
    """``timefoil run velociti`` as a user runs it, the model saved to ``folder`` and loaded by path."""
    from timefoil import RunConfig
    from timefoil.execution.runner import Runner
    from timefoil.video.frames import FrameStore
    from timefoil.video.sampling import Sampling

    clips_n, rows, _, height, width, batch, _ = spec
    work = tempfile.mkdtemp(prefix="timefoil-gpu-bench-")
    try:
        data = velociti_folder(os.path.join(work, "velociti"), clips_n, rows, height, width)
        model.model.save_pretrained(folder)
        # the attention the bench's own rows use, whatever the machine has installed
        config = RunConfig("velociti", f"hf:{folder}", data_dir=data, model_args={"batch_size": batch,
                                                                                 "attention": "sdpa"},
                           benchmark_args={"subset": "paper"})
        sampling = Sampling(frames=None, fps=1.0)
        start = time.perf_counter()  # decoding alone, in a cache of its own: the share of the wall it is
        store = FrameStore(cache_dir=os.path.join(work, "decode-only"))
        for n in range(clips_n):
            store.get(VideoRef.file(os.path.join(data, "videos", f"v_clip{n:04d}_seg_0_10.mp4")), sampling)
        decode_s = time.perf_counter() - start
        start = synced()
        runner = Runner(config, os.path.join(work, "run"), cache_dir=os.path.join(work, "cache"), progress=False)
        load_s = synced() - start
        report = runner.run()
        wall = synced() - start
        captions = 2 * rows
        return {"workload": name, "rows": rows, "clips": clips_n, "captions": captions, "errors": report.errors,
                "wall_s": round(wall, 2), "load_s": round(load_s, 2), "decode_s": round(decode_s, 2),
                "answer_s": round(wall - load_s, 2),
                "timefoil_ms_per_question": round(1e3 * (wall - load_s) / captions, 3),
                "naive_ms_per_question": None, "equal": [captions - report.errors, captions],
                "bench_model_s": round(per_caption_ms * captions / 1e3, 2) if per_caption_ms else None,
                "over_bench_plus_load": round(wall / (per_caption_ms * captions / 1e3 + load_s), 3)
                if per_caption_ms else None, "mfu": None}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", choices=tuple(SHAPES), default="7b")
    parser.add_argument("--family", choices=("qwen2_vl", "qwen2_5_vl"), default="qwen2_vl")
    parser.add_argument("--workloads", default=None, help="comma-separated; default: every workload of the shape")
    parser.add_argument("--peak-tflops", type=float, default=None, help="the device's bf16 peak, if not known")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--compile", choices=("auto", "on", "off"), default="auto",
                        help="the model's compile= (auto: on a CUDA GPU), the CLI's run's too")
    parser.add_argument("--quick", action="store_true",
                        help="one short device check (bench/gpu_quick.py): entail, runner, choice and timefoil run "
                             "velociti over synthetic clips, per video kernels, syncs, suffix forwards and ms")
    args = parser.parse_args()
    if args.quick and args.shape not in ("7b", "tiny"):
        parser.error("--quick runs at --shape 7b or tiny")
    apply_threads(args.threads)
    gpu = torch.cuda.is_available()
    device = torch.device("cuda:0" if gpu else "cpu")
    dtype = torch.bfloat16 if gpu else torch.float32
    folder = tempfile.mkdtemp(prefix="timefoil-gpu-model-")
    try:
        start = time.perf_counter()
        net, tokenizer = build(folder, args.family, args.shape, device, dtype)
        model = HFGenerative(folder, model=net, processor=tokenizer, compile=args.compile)
        print(json.dumps({"device": torch.cuda.get_device_name(0) if gpu else "cpu", "shape": args.shape,
                          "family": args.family, "dtype": model.dtype, "built_s": round(time.perf_counter() - start, 1),
                          "parameters_b": round(sum(p.numel() for p in net.parameters()) / 1e9, 3),
                          "torch": torch.__version__, "ran_on": model.notes["ran_on"]}), flush=True)
        if args.quick:
            import gpu_quick

            gpu_quick.run(model, args.shape, folder, args.workloads.split(",") if args.workloads else None,
                          compile_setting=args.compile)
            return
        per_caption, direct = None, None
        for name in (args.workloads or ",".join(SHAPES[args.shape])).split(","):
            spec = SHAPES[args.shape][name]
            if name.startswith("entail"):
                line = run_entailment(name, model, spec, args, device)
                per_caption = per_caption or line["timefoil_ms_per_question"]
                direct = direct or line
            elif name.startswith("runner"):
                line = run_runner(name, model, spec, args, device, direct)
            elif name == "choice":
                line = run_choice(name, model, spec, args, device)
            elif name == "decode":
                line = run_decode(name, model, spec, args, device)
            else:
                line = run_e2e(name, model, spec, args, device, folder, per_caption)
            print(json.dumps(line), flush=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
