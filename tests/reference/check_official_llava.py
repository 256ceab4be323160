"""Live check of ``preprocess=official`` for LLaVA-NeXT-Video and Video-LLaVA, run by hand in
the reference environment with torchvision (never in CI):

    PYTHONPATH=src /tmp/ref/bin/python tests/reference/check_official_llava.py llava_next_video video_llava

For each family it saves a tiny random model with its processor files, loads it twice by path
(timefoil's own inputs, and the official processor's), and shows both the same 8 frames of a
10 s clip: the inputs must be equal tensor for tensor, the last-token logits equal, and the
entailment answers equal. It also prints what timefoil's own first-batch comparison recorded.
"""
from __future__ import annotations

import sys
import tempfile

import torch

from timefoil.items import VideoRef
from timefoil.models.hf_generative import HFGenerative
from timefoil.models.hf_inputs import frames_of
from timefoil.protocols import Prompts
from timefoil.requests import Request
from timefoil.testing import pattern_frames, tiny_vlm

CAPTIONS = ["a man opens the door", "two birds fly"]
CLIP = frames_of(pattern_frames(8, 60, 80), rate=0.8)  # 8 frames of a 10 s clip


def check(family: str) -> bool:
    prompts = Prompts()
    path = tiny_vlm(tempfile.mkdtemp(), family, [prompts.entailment] + CAPTIONS)
    ours, official = HFGenerative(path), HFGenerative(path, preprocess="official")
    requests = [Request("entailment", VideoRef.file("/nonexistent/clip.mp4"), prompts.entailment.format(caption=c),
                        caption=c) for c in CAPTIONS]
    prompt = ours._prompt(requests[0], CLIP)[0]
    same_prompt = prompt == official._prompt(requests[0], CLIP)[0]
    mine, theirs = ours.inputs.encode([prompt], [CLIP]), official.inputs.encode([prompt], [CLIP])
    keys = sorted(set(mine) | set(theirs))
    unequal = [k for k in keys if k not in mine or k not in theirs or not torch.equal(mine[k], theirs[k])]
    with torch.inference_mode():
        logits = [ours.model(**batch).logits[0, -1] for batch in (mine, theirs)]
    answers = [[a.probs["yes"] for a in m.answer(requests, lambda ref, sampling: CLIP)] for m in (ours, official)]
    ok = same_prompt and not unequal and torch.equal(*logits) and answers[0] == answers[1]
    print(f"{family}: prompt {'equal' if same_prompt else 'DIFFERENT'}; inputs {keys} "
          f"{'equal' if not unequal else f'DIFFERENT in {unequal}'} "
          f"(video tokens {int((mine['input_ids'] == ours.tokenizer.convert_tokens_to_ids('<video>')).sum())}, "
          f"pixels {tuple(mine['pixel_values_videos'].shape)}); last-token logits max |diff| "
          f"{float((logits[0] - logits[1]).abs().max())}; P(yes) {answers[0]} vs {answers[1]}; "
          f"timefoil's own comparison: {ours.inputs.check}")
    return ok


if __name__ == "__main__":
    torch.set_num_threads(1)
    results = [check(family) for family in sys.argv[1:]]
    raise SystemExit(0 if all(results) else 1)
