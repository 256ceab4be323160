"""Where a local video LLM's time goes when it answers choice questions with generation.

A compute-bound random Qwen2-VL (Qwen2-0.5B's width and vocabulary, ``--layers`` deep, a narrow one-layer
vision tower, 8 frames of a 480p clip: about 1,200 vision tokens a video) answers a
VITATECS-shaped workload: each video with its caption against ``--pairs`` counterfactuals, both
option orders, so 2 x pairs questions share a video; answers of at most ``--max-tokens``
tokens. Measured in one run:

- timefoil: ``HFGenerative.answer`` (the video and the shared prompt prefilled once per video,
  each question's suffix once, answers generated on from the same forward pass, batched);
- naive: one ``model.generate()`` per question on the same prompt and frames, as a
  per-question harness runs it (the video encoded and prefilled for every question);
- letters: ``choice_reading=letters`` (one forward, no generation), against choice with
  generation at one token, which must cost no more than 1.5 times it;
- decode batching: ``--decode-videos`` videos with one pair each (two questions a video, as a
  run with many videos and few questions has), answered with the decode steps of all videos
  shared (``decode_batching``, the default) and video by video (``decode_batching=false``): the
  wall of each and the time in its decode steps (forwards of one token a row).

It prints the language model's forward tokens against the minimum the workload needs (each
video's prefix once, each question's suffix once, each generated token once), the wall time
of each path, and a JSON line of the ratios. Both paths' answers are compared: the greedy
texts must be equal.

    python bench/generation.py [--layers 4] [--videos 2] [--pairs 3] [--max-tokens 16] [--threads N]
                               [--decode-videos 8] [--decode-batching-only]
"""
from __future__ import annotations

import argparse
import json
import random
import tempfile
import time

import torch

from timefoil.core.items import VideoRef
from timefoil.core.threads import apply_threads
from timefoil.models.families import FAMILIES
from timefoil.models.local.hf_generative import HFGenerative
from timefoil.models.local.hf_inputs import frames_of
from timefoil.models.requests import Request
from timefoil.protocols import Prompts
from timefoil.testing import pattern_frames, vlm_tokenizer, write_processor_files

WORDS = ("red blue green square circle jumps moves left right up down then after before quickly slowly the a "
         "man woman dog opens closes door picks puts cup table walks runs").split()


def build(path: str, texts: list[str], layers: int) -> None:
    from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration

    tokenizer = vlm_tokenizer(texts, "qwen2_vl")
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in FAMILIES["qwen2_vl"].tiny.special_tokens}
    # Qwen2-0.5B's vocabulary too (the rows past the test tokenizer's words are never asked for):
    # projecting every prompt token onto 152k logits is a cost a real run pays unless it is avoided
    text = dict(vocab_size=151936, tie_word_embeddings=True, hidden_size=896, intermediate_size=4864,
                num_hidden_layers=layers,
                num_attention_heads=14, num_key_value_heads=2, max_position_embeddings=32768,
                pad_token_id=tokenizer.pad_token_id, bos_token_id=None, eos_token_id=tokenizer.eos_token_id,
                rope_parameters={"rope_type": "default", "mrope_section": [8, 12, 12], "rope_theta": 1e6})
    vision = dict(depth=1, embed_dim=64, hidden_size=896, num_heads=2, mlp_ratio=2)
    torch.manual_seed(0)
    config = Qwen2VLConfig(text_config=text, vision_config=vision, image_token_id=ids["<|image_pad|>"],
                           video_token_id=ids["<|video_pad|>"], vision_start_token_id=ids["<|vision_start|>"],
                           vision_end_token_id=ids["<|vision_end|>"])
    Qwen2VLForConditionalGeneration(config).save_pretrained(path)
    write_processor_files(path, "qwen2_vl", tokenizer, video={"max_pixels": 28 * 28 * 768})


def workload(videos: int, pairs: int, max_tokens: int) -> list[tuple[VideoRef, Request]]:
    rng = random.Random(0)
    prompt = Prompts().choice
    out = []
    for v in range(videos):
        ref = VideoRef.file(f"/bench/clip{v}.mp4")
        caption = " ".join(rng.choice(WORDS) for _ in range(10))
        for _ in range(pairs):
            counterfactual = " ".join(rng.choice(WORDS) for _ in range(10))
            for a, b in ((caption, counterfactual), (counterfactual, caption)):
                out.append((ref, Request("choice", ref, prompt.format(options=f"A. {a}\nB. {b}"), labels=("A", "B"),
                                         option_texts=(a, b), max_tokens=max_tokens)))
    return out


def naive(model: HFGenerative, requests: list[Request], source) -> tuple[list[str], int]:
    """One generate() per question: its prompt and frames encoded and prefilled every time."""
    texts, tokens = [], 0
    for request in requests:
        clip = source(request.video, request.sampling)
        batch = model._encode([model._prompt(request, clip)[0]], [clip])
        output = model.model.generate(**batch, max_new_tokens=request.max_tokens, do_sample=False,
                                      pad_token_id=model.tokenizer.pad_token_id)
        new = output[0, batch["input_ids"].shape[1]:]
        tokens += batch["input_ids"].shape[1] + len(new)
        said = model.tokenizer.decode(new, skip_special_tokens=True).lstrip()
        texts.append((said[:said.index("\n")] if "\n" in said else said).strip())  # the first answer line
    return texts, tokens


def minimum_tokens(model: HFGenerative, pairs: list[tuple[VideoRef, Request]], source, generated: int) -> int:
    """Each video's shared prefix once, each question's suffix once, each generated token once
    (``generated``: those that must be fed to get the next)."""
    by_video: dict[str, list] = {}
    for ref, request in pairs:
        clip = source(ref, request.sampling)
        ids = model.inputs.encode([model._prompt(request, clip)[0]], [clip])["input_ids"][0]
        by_video.setdefault(ref.key(), []).append(ids)
    total = generated
    for sequences in by_video.values():
        shared = 0
        while all(len(s) > shared for s in sequences) and len({int(s[shared]) for s in sequences}) == 1:
            shared += 1
        total += shared + sum(len(s) - shared for s in sequences)
    return total


def timed_steps(model: HFGenerative) -> dict:
    """Wraps the model's forward to add up the decode steps (one token a row): their count,
    rows and seconds."""
    steps = {"steps": 0, "rows": 0, "seconds": 0.0}
    forward = model.model.forward

    def timed(*args, **kwargs):
        start = time.perf_counter()
        output = forward(*args, **kwargs)
        if kwargs["input_ids"].shape[1] == 1:
            steps["steps"] += 1
            steps["rows"] += kwargs["input_ids"].shape[0]
            steps["seconds"] += time.perf_counter() - start
        return output

    model.model.forward = timed
    return steps


def decode_batching(path: str, requests: list[Request], source, batch_size: int) -> dict:
    """Decode steps shared across videos against video by video, on the same requests: the wall
    of each, and the time in decode steps (forwards of one token a row)."""
    models = {"shared": HFGenerative(path, batch_size=batch_size),
              "by_video": HFGenerative(path, batch_size=batch_size, decode_batching=False)}
    for model in models.values():
        model.answer(requests[:2], source)  # warm up
    out: dict = {}
    said: dict[str, list] = {}
    for name in ("by_video", "shared") * 2:  # alternated, each the smaller of its two
        steps = timed_steps(models[name])
        start = time.perf_counter()
        answers = models[name].answer(requests, source)
        wall = time.perf_counter() - start
        del models[name].model.forward  # the class's own again
        if name not in out or wall < out[name]["wall"]:
            out[name] = {"wall": wall, **steps}
        said[name] = [(a.raw, a.meta["stopped"], a.meta["new_tokens"]) for a in answers]
    return {**out, "equal": sum(a == b for a, b in zip(said["shared"], said["by_video"])),
            "generated": sum(n for _, _, n in said["shared"])}


def against_naive(path: str, pairs: list[tuple[VideoRef, Request]], source, args) -> None:
    """timefoil against one generate() per question, and one-token choice against letters."""
    requests = [r for _, r in pairs]
    ours = HFGenerative(path, batch_size=2 * args.pairs)
    ours.answer(requests[:2], source)  # warm up
    ours.stats.update(forward_tokens=0)
    start = time.perf_counter()
    answers = ours.answer(requests, source)
    t_ours = time.perf_counter() - start
    generated = sum(a.meta["new_tokens"] for a in answers)
    # a token is fed to the model only to get the next: each answer's first comes with its prompt
    feeds = sum(a.meta["new_tokens"] - (a.meta["stopped"] != "eos") for a in answers)
    used = ours.stats["forward_tokens"]
    start = time.perf_counter()
    plain_texts, plain_tokens = naive(ours, requests, source)
    t_naive = time.perf_counter() - start
    agree = sum(a.raw == t for a, t in zip(answers, plain_texts))
    least = minimum_tokens(ours, pairs, source, feeds)
    one = [Request(r.kind, r.video, r.text, labels=r.labels, option_texts=r.option_texts, max_tokens=1)
           for r in requests]
    letters = HFGenerative(path, batch_size=2 * args.pairs, choice_reading="letters")
    start = time.perf_counter()
    letters.answer(requests, source)
    t_letters = time.perf_counter() - start
    start = time.perf_counter()
    ours.answer(one, source)
    t_one = time.perf_counter() - start
    print(f"{len(requests)} questions on {args.videos} videos, {generated} tokens generated")
    print(f"forward tokens: timefoil {used}, naive {plain_tokens}, minimum {least} "
          f"(timefoil / minimum {used / least:.3f}, naive / minimum {plain_tokens / least:.2f})")
    print(f"wall: timefoil {t_ours:.2f} s, naive generate() per question {t_naive:.2f} s "
          f"({t_naive / t_ours:.2f}x); greedy texts equal on {agree} of {len(requests)}")
    print(f"choice with generation at one token {t_one:.2f} s against letters only {t_letters:.2f} s "
          f"({t_one / t_letters:.2f}x)")
    print(json.dumps({"questions": len(requests), "speedup_vs_naive": round(t_naive / t_ours, 3),
                      "tokens_over_minimum": round(used / least, 4), "naive_tokens_over_minimum":
                      round(plain_tokens / least, 3), "one_token_over_letters": round(t_one / t_letters, 3),
                      "texts_equal": agree}))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--videos", type=int, default=2)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=16)
    parser.add_argument("--threads", type=int)
    parser.add_argument("--decode-videos", type=int, default=8)
    parser.add_argument("--decode-batching-only", action="store_true")
    args = parser.parse_args()
    print(f"threads: {apply_threads(args.threads)}")
    import numpy as np

    clips = {f"/bench/clip{v}.mp4": frames_of(np.roll(pattern_frames(8, 480, 640), 7 * v, axis=2), rate=0.8)
             for v in range(max(args.videos, args.decode_videos))}  # a different video each

    def source(ref, sampling):
        return clips[ref.path]

    pairs = workload(args.videos, args.pairs, args.max_tokens)
    with tempfile.TemporaryDirectory() as path:
        build(path, [Prompts().choice] + WORDS, args.layers)
        if not args.decode_batching_only:
            against_naive(path, pairs, source, args)
        few = [r for _, r in workload(args.decode_videos, 1, args.max_tokens)]
        batching = decode_batching(path, few, source, 2 * args.pairs)
    shared, apart = batching["shared"], batching["by_video"]
    print(f"decode batching: {len(few)} questions on {args.decode_videos} videos, {batching['generated']} tokens "
          f"generated, answers equal on {batching['equal']} of {len(few)}")
    for name, m in (("video by video", apart), ("shared", shared)):
        print(f"  {name}: wall {m['wall']:.2f} s, {m['steps']} decode steps of {m['rows'] / m['steps']:.1f} rows "
              f"on average, {m['seconds']:.2f} s in them")
    print(f"  video by video / shared: wall {apart['wall'] / shared['wall']:.2f}x, "
          f"decode steps {apart['seconds'] / shared['seconds']:.2f}x")
    print(json.dumps({"decode_batching_wall": round(apart["wall"] / shared["wall"], 3),
                      "decode_batching_steps_time": round(apart["seconds"] / shared["seconds"], 3),
                      "decode_batching_equal": batching["equal"]}))


if __name__ == "__main__":
    main()
