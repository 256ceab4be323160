"""Prefix reuse for video LLMs on the CPU: K captions of one video judged by entailment.

Random-weight models with the real families' shapes where it matters for the cost: a
LLaVA-OneVision-shaped model (SigLIP patches 14 at 384 px, 729 tokens per frame pooled to 196)
and a Qwen2.5-VL-shaped one (patch 14, merge 2, 3-D rotary positions, a 480p clip), both with
8 frames, so each video brings 1,500 to 2,000 vision tokens. The language model is reduced in
depth (``--layers``), the vision towers to one narrow layer, so a run fits a laptop CPU.

The plain path runs K full sequences (vision encoder included, K times); prefix reuse runs the
video and the instruction once and the K caption suffixes against copies of its KV cache.
ideal = K (P + S) / (P + K S) from the language model's token counts alone.

    python bench/video_llm.py [--layers 4] [--threads N]
"""
from __future__ import annotations

import argparse
import json
import random
import tempfile
import time

import torch

from timefoil.core.items import VideoRef
from timefoil.models.local.hf_generative import HFGenerative
from timefoil.models.local.hf_inputs import frames_of
from timefoil.protocols import Prompts
from timefoil.models.requests import Request
from timefoil.models.families import FAMILIES
from timefoil.testing import pattern_frames, vlm_tokenizer, write_processor_files
from timefoil.core.threads import apply_threads

WORDS = ("red blue green square circle jumps moves left right up down then after before quickly slowly the a "
         "man woman dog opens closes door picks puts cup table walks runs").split()


def build(path: str, family: str, texts: list[str], layers: int) -> None:
    tokenizer = vlm_tokenizer(texts, family)
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in FAMILIES[family].tiny.special_tokens}
    # Qwen2-0.5B's width, fewer layers
    text = dict(vocab_size=len(tokenizer), hidden_size=896, intermediate_size=4864, num_hidden_layers=layers,
                num_attention_heads=14, num_key_value_heads=2, max_position_embeddings=32768,
                pad_token_id=tokenizer.pad_token_id, bos_token_id=None, eos_token_id=tokenizer.eos_token_id)
    torch.manual_seed(0)
    if family == "llava_onevision":
        from transformers import LlavaOnevisionConfig, LlavaOnevisionForConditionalGeneration

        vision = dict(model_type="siglip_vision_model", hidden_size=64, intermediate_size=128, num_hidden_layers=1,
                      num_attention_heads=2, image_size=384, patch_size=14)
        config = LlavaOnevisionConfig(text_config=dict(model_type="qwen2", **text), vision_config=vision,
                                      image_token_index=ids["<image>"], video_token_index=ids["<video>"],
                                      vision_feature_select_strategy="full", vision_feature_layer=-1)
        LlavaOnevisionForConditionalGeneration(config).save_pretrained(path)
        write_processor_files(path, family, tokenizer)
    else:
        from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration

        text["rope_parameters"] = {"rope_type": "default", "mrope_section": [8, 12, 12], "rope_theta": 1e6}
        vision = dict(depth=1, hidden_size=64, intermediate_size=128, num_heads=2, out_hidden_size=896,
                      window_size=112, fullatt_block_indexes=[0], tokens_per_second=2)
        config = Qwen2_5_VLConfig(text_config=text, vision_config=vision, image_token_id=ids["<|image_pad|>"],
                                  video_token_id=ids["<|video_pad|>"], vision_start_token_id=ids["<|vision_start|>"],
                                  vision_end_token_id=ids["<|vision_end|>"])
        Qwen2_5_VLForConditionalGeneration(config).save_pretrained(path)
        write_processor_files(path, family, tokenizer, video={"max_pixels": 28 * 28 * 768})


def timed(model: HFGenerative, requests, source) -> tuple[float, list[float]]:
    start = time.perf_counter()
    answers = model.answer(requests, source)
    return time.perf_counter() - start, [a.probs["yes"] for a in answers]


def bench(family: str, layers: int) -> dict:
    rng = random.Random(0)
    prompt = Prompts().entailment
    captions = [" ".join(rng.choice(WORDS) for _ in range(12)) for _ in range(8)]
    clip = frames_of(pattern_frames(8, 480, 854 if family == "qwen2_5_vl" else 640), rate=0.8)

    def source(ref, sampling):
        return clip

    ref = VideoRef.file("/bench/clip.mp4")
    requests = [Request("entailment", ref, prompt.format(caption=c), caption=c) for c in captions]
    with tempfile.TemporaryDirectory() as path:
        build(path, family, [prompt] + captions, layers)
        plain = HFGenerative(path, prefix_reuse=False, batch_size=8)
        reuse = HFGenerative(path, prefix_reuse=True, batch_size=8)
        timed(plain, requests[:1], source), timed(reuse, requests[:2], source)  # warm up
        tokens = []
        for r in requests:
            text = plain._prompt(r, clip)[0]
            tokens.append(plain.inputs.encode([text], [clip])["input_ids"][0])
        print(f"{family}: {len(tokens[0])} tokens per request")
        print(f"{'K':>3} {'plain s':>9} {'reuse s':>9} {'speed-up':>9} {'ideal':>7} {'max |dp|':>10}")
        rows = []
        for k in (1, 4, 8):
            t_plain, p_plain = timed(plain, requests[:k], source)
            t_reuse, p_reuse = timed(reuse, requests[:k], source)
            total = sum(len(t) for t in tokens[:k]) / k
            shared = _shared(tokens[:k]) if k > 1 else total
            ideal = k * total / (shared + k * (total - shared)) if k > 1 else 1.0
            diff = max(abs(a - b) for a, b in zip(p_plain, p_reuse))
            rows.append({"K": k, "speedup": t_plain / t_reuse, "ideal": ideal, "max_abs_diff": diff})
            print(f"{k:>3} {t_plain:>9.2f} {t_reuse:>9.2f} {t_plain / t_reuse:>9.2f} {ideal:>7.2f} {diff:>10.2e}")
    return rows[-1]


def _shared(sequences) -> int:
    shared = 0
    while all(len(s) > shared for s in sequences) and len({int(s[shared]) for s in sequences}) == 1:
        shared += 1
    return shared


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--threads", type=int)
    parser.add_argument("--families", default="llava_onevision,qwen2_5_vl")
    args = parser.parse_args()
    print(f"threads: {apply_threads(args.threads)}")
    lines = []
    for family in args.families.split(","):
        row = bench(family, args.layers)
        lines.append({"family": family, "K": 8, "speedup": round(row["speedup"], 3), "ideal": round(row["ideal"], 3),
                      "max_abs_diff": row["max_abs_diff"]})
    for line in lines:
        print(json.dumps(line))


if __name__ == "__main__":
    main()
