"""Speed-up of shared-prefix KV reuse against the plain path, on the CPU.

K captions of one video are judged with the entailment prompt. The plain path runs K full
sequences; prefix reuse runs the shared prefix once and the K suffixes against copies of its
KV cache. The model has SmolLM2-135M's shape (30 layers, width 576) with random weights and a
word-level tokenizer; the prefix stands in for a video's tokens plus the instruction.
ideal = K (P + S) / (P + K S) is the speed-up if only token counts mattered.

    python bench/prefix_reuse.py [--prefix-words 300] [--layers 30]
"""
from __future__ import annotations

import argparse
import json
import random
import tempfile
import time

import torch

from timefoil.models.local.hf_generative import HFGenerative
from timefoil.models.requests import Request
from timefoil.testing import word_tokenizer

WORDS = ("red blue green square circle jumps moves left right up down then after before quickly slowly the a "
         "man woman dog opens closes door picks puts cup table walks runs").split()


def build(path: str, texts: list[str], layers: int) -> None:
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = word_tokenizer(texts)
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=576, intermediate_size=1536,
                         num_hidden_layers=layers, num_attention_heads=9, num_key_value_heads=3,
                         max_position_embeddings=4096, pad_token_id=tokenizer.pad_token_id)
    LlamaForCausalLM(config).save_pretrained(path)
    tokenizer.save_pretrained(path)


def timed(model: HFGenerative, requests) -> tuple[float, list[float]]:
    start = time.perf_counter()
    answers = model.answer(requests, None)
    return time.perf_counter() - start, [a.probs["yes"] for a in answers]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--prefix-words", type=int, default=300)
    parser.add_argument("--layers", type=int, default=30)
    args = parser.parse_args()
    torch.set_num_threads(max(1, torch.get_num_threads()))
    rng = random.Random(0)
    context = " ".join(rng.choice(WORDS) for _ in range(args.prefix_words))
    template = context + " Here is a caption that describes the video: {caption} Does the video entail the caption?"
    captions = [" ".join(rng.choice(WORDS) for _ in range(12)) for _ in range(16)]
    with tempfile.TemporaryDirectory() as path:
        build(path, [template] + captions, args.layers)
        plain = HFGenerative(path, prefix_reuse=False, batch_size=16)
        reuse = HFGenerative(path, prefix_reuse=True, batch_size=16)
        requests = [Request("entailment", None, template.format(caption=c), caption=c) for c in captions]
        timed(plain, requests[:2]), timed(reuse, requests[:2])  # warm up
        prompt_tokens = [len(reuse.tokenizer(reuse._prompt(r)[0], add_special_tokens=False)["input_ids"])
                         for r in requests]
        rows = []
        print(f"{'K':>3} {'plain s':>9} {'reuse s':>9} {'speed-up':>9} {'ideal':>7} {'max |dp|':>10}")
        for k in (1, 4, 8, 16):
            batch = requests[:k]
            t_plain, p_plain = timed(plain, batch)
            t_reuse, p_reuse = timed(reuse, batch)
            total = sum(prompt_tokens[:k]) / k
            shared = _shared_prefix(reuse, batch) if k > 1 else total
            suffix = total - shared
            ideal = k * total / (shared + k * suffix) if k > 1 else 1.0
            diff = max(abs(a - b) for a, b in zip(p_plain, p_reuse))
            rows.append({"K": k, "speedup": t_plain / t_reuse, "ideal": ideal, "max_abs_diff": diff,
                         "P": shared, "S": suffix})
            print(f"{k:>3} {t_plain:>9.3f} {t_reuse:>9.3f} {t_plain / t_reuse:>9.2f} {ideal:>7.2f} {diff:>10.2e}")
        k8 = next(r for r in rows if r["K"] == 8)
        print(json.dumps({"K": 8, "speedup": round(k8["speedup"], 3), "ideal": round(k8["ideal"], 3),
                          "max_abs_diff": k8["max_abs_diff"]}))


def _shared_prefix(model: HFGenerative, requests) -> int:
    sequences = [model.tokenizer(model._prompt(r)[0], add_special_tokens=False)["input_ids"] for r in requests]
    shared = 0
    while all(len(s) > shared for s in sequences) and len({s[shared] for s in sequences}) == 1:
        shared += 1
    return shared


if __name__ == "__main__":
    main()
