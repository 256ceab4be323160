"""Live check of ``preprocess=official`` against timefoil's own inputs, on tiny random models.

Run in the throwaway environment with torchvision (see make_processor_digests.py), never in CI:

    PYTHONPATH=src /tmp/ref/bin/python tests/reference/check_official_preprocess.py internvl

For each family named (all in the table when none is) it saves a tiny random model with its
official processor files, loads it by path twice, once per preprocessing, and builds the same
requests' batches both ways, for each input the family takes (video, the frames as images):
every input the official processor returns must be equal to timefoil's, and the answers'
probabilities and last-token logits equal.
"""
from __future__ import annotations

import sys
import tempfile

import torch

from timefoil.core.items import VideoRef
from timefoil.models.families import FAMILIES
from timefoil.models.hf_generative import HFGenerative
from timefoil.models.hf_inputs import frames_of
from timefoil.protocols import Prompts
from timefoil.models.requests import Request
from timefoil.testing import pattern_frames, tiny_vlm

CAPTIONS = ["a man opens the door", "the door opens a man"]
CLIP = frames_of(pattern_frames(8, 60, 80), rate=0.8)


def source(ref, sampling):
    return CLIP


def check(family: str, kind: str) -> bool:
    prompts = Prompts()
    folder = tiny_vlm(tempfile.mkdtemp(), family, [prompts.entailment, "a b c d"] + CAPTIONS)
    ours, official = (HFGenerative(folder, video_as=kind, preprocess=way) for way in ("timefoil", "official"))
    family = f"{family}/{kind}"
    requests = [Request("entailment", VideoRef.file("/nonexistent.mp4"), prompts.entailment.format(caption=c),
                        caption=c) for c in CAPTIONS]
    texts = [ours._prompt(r, CLIP)[0] for r in requests]
    assert texts == [official._prompt(r, CLIP)[0] for r in requests], "the two prompts differ"
    mine = ours.inputs.encode(texts, [CLIP] * len(texts))
    theirs = official.inputs.encode(texts, [CLIP] * len(texts))
    same = True
    for key, value in theirs.items():
        equal = key in mine and torch.equal(torch.as_tensor(mine[key]), torch.as_tensor(value))
        same &= equal
        print(f"{family:24s} {key:22s} {tuple(value.shape)!s:22s} {'equal' if equal else 'DIFFERENT'}")
    with torch.inference_mode():
        logits = [ours.model(**batch).logits[:, -1] for batch in (mine, theirs)]
    print(f"{family:24s} last-token logits equal: {torch.equal(*logits)}")
    answers = [model.answer(requests, source) for model in (ours, official)]
    yes = [[a.probs["yes"] for a in found] for found in answers]
    print(f"{family:24s} P(yes) timefoil {yes[0]} official {yes[1]}")
    return same and torch.equal(*logits) and yes[0] == yes[1]


if __name__ == "__main__":
    torch.set_num_threads(1)
    results = [check(family, kind) for family in (sys.argv[1:] or list(FAMILIES)) for kind in FAMILIES[family].inputs]
    raise SystemExit(0 if all(results) else 1)
