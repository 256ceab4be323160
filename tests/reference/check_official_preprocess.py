"""Live check of timefoil's inputs, ``preprocess=official`` and the model card's path, on tiny
random models.

Run in the throwaway environment with torchvision (see make_processor_digests.py), never in CI:

    PYTHONPATH=src /tmp/ref/bin/python tests/reference/check_official_preprocess.py internvl

For each family named (all in the table when none is) and each input it takes (video, the
frames as images), it saves a tiny random model with its official processor files and a
tokenizer that adds its begin token where the family's real one does, loads it by path once
per preprocessing, and asks three captions of different token lengths in one batch:

- timefoil's inputs, ``preprocess=official``'s and the model card's
  (``processor.apply_chat_template(messages, tokenize=True, return_dict=True)``, padding on
  the left) must be equal, and so must every row's last-token logits;
- each row's last-token logits must match those of its prompt asked alone (the padding of
  the shorter rows changes no answer);
- the default path's own comparison with the official processor (``preprocess_check`` in
  run.json) must have compared this unequal batch and found it equal;
- the answers' P(yes) must be equal both ways.
"""
from __future__ import annotations

import sys
import tempfile

import torch

from timefoil.core.items import VideoRef
from timefoil.models.families import FAMILIES
from timefoil.models.local.hf_generative import HFGenerative
from timefoil.models.local.hf_inputs import frames_of
from timefoil.models.requests import Request
from timefoil.protocols import Prompts
from timefoil.testing import pattern_frames, tiny_vlm

# three token lengths: the batch pads two of its rows on the left
CAPTIONS = ["a man opens the door and walks out of the room", "a man opens the door", "the door"]
CLIP = frames_of(pattern_frames(8, 60, 80), rate=0.8)
ALONE_TOLERANCE = 1e-4  # a row alone runs other kernels' shapes: equal up to float rounding


def source(ref, sampling):
    return CLIP


def model_card(processor, instructions: list[str], kind: str) -> dict:
    """The batch as a model card builds it: the frames inside the messages, timefoil's sampling
    kept (``do_sample_frames=False``, each frame's index at the sampling rate)."""
    visual = ([{"type": "video", "video": CLIP.array}] if kind == "video"
              else [{"type": "image", "image": frame} for frame in CLIP.array])
    conversations = [[{"role": "user", "content": visual + [{"type": "text", "text": text}]}]
                     for text in instructions]
    kwargs = {"padding": True}
    if kind == "video":
        metadata = {"total_num_frames": len(CLIP.array), "fps": CLIP.sampled_fps,
                    "frames_indices": [round(t * CLIP.sampled_fps) for t in CLIP.times]}
        kwargs.update(do_sample_frames=False, video_metadata=[metadata] * len(instructions))
    return dict(processor.apply_chat_template(conversations, tokenize=True, return_dict=True, return_tensors="pt",
                                              add_generation_prompt=True, processor_kwargs=kwargs))


def last_logits(model: HFGenerative, batch: dict):
    """Every row's logits after its prompt, run as timefoil runs a batch (explicit positions)."""
    batch = dict(batch)
    batch["position_ids"] = model.inputs.positions(model.model, batch)
    with torch.inference_mode():
        return model.model(**batch).logits[:, -1].float()


def check(family: str, kind: str) -> bool:
    prompts = Prompts()
    spec = FAMILIES[family]
    folder = tiny_vlm(tempfile.mkdtemp(), family, [prompts.entailment, "a b c d"] + CAPTIONS,
                      adds_bos=spec.tiny.adds_bos)
    ours, official = (HFGenerative(folder, video_as=kind, preprocess=way) for way in ("timefoil", "official"))
    name = f"{family}/{kind}"
    requests = [Request("entailment", VideoRef.file("/nonexistent.mp4"), prompts.entailment.format(caption=c),
                        caption=c) for c in CAPTIONS]
    texts = [ours._prompt(r, CLIP)[0] for r in requests]
    assert texts == [official._prompt(r, CLIP)[0] for r in requests], "the two prompts differ"
    mine = ours.inputs.encode(texts, [CLIP] * len(texts))
    ways = {"official": official.inputs.encode(texts, [CLIP] * len(texts)),
            "model card": model_card(official.inputs.processor, [r.text for r in requests], kind)}
    lengths = mine["attention_mask"].sum(1).tolist()
    # the begin token stands once in each row where the real tokenizer has one, else never
    begins = [int((row[mask.bool()] == ours.tokenizer.bos_token_id).sum())
              for row, mask in zip(mine["input_ids"], mine["attention_mask"])]
    same = len(set(lengths)) == len(lengths) and begins == [int(spec.tiny.adds_bos)] * len(texts)
    print(f"{name:24s} prompt lengths {lengths}, begin tokens per row {begins}")
    for way, theirs in ways.items():
        keys = set(mine) | set(theirs)
        for key in sorted(keys):
            equal = key in mine and key in theirs and torch.equal(torch.as_tensor(mine[key]),
                                                                  torch.as_tensor(theirs[key]))
            same &= equal
            if not equal:
                print(f"{name:24s} {way:10s} {key:22s} DIFFERENT")
        print(f"{name:24s} {way:10s} inputs equal to timefoil's: {all(k in theirs for k in mine) and same}")
    logits = last_logits(ours, mine)
    for way, theirs in ways.items():
        equal = torch.equal(logits, last_logits(ours, theirs))
        same &= equal
        print(f"{name:24s} {way:10s} last-token logits equal in all {len(texts)} rows: {equal}")
    alone = torch.cat([last_logits(ours, ours.inputs.encode([text], [CLIP])) for text in texts])
    worst = float((alone - logits).abs().max())
    same &= worst <= ALONE_TOLERANCE
    print(f"{name:24s} each row alone vs in the batch: largest difference {worst:.2e}")
    check_note = ours.notes.get("preprocess_check")
    same &= bool(check_note and check_note.get("compared") and check_note.get("equal"))
    print(f"{name:24s} default path's preprocess_check on the unequal batch: {check_note}")
    answers = [model.answer(requests, source) for model in (ours, official)]
    yes = [[a.probs["yes"] for a in found] for found in answers]
    same &= yes[0] == yes[1]
    print(f"{name:24s} P(yes) timefoil {[round(p, 6) for p in yes[0]]} official {[round(p, 6) for p in yes[1]]}"
          f" equal: {yes[0] == yes[1]}")
    return same


if __name__ == "__main__":
    torch.set_num_threads(2)
    results = {f"{family}/{kind}": check(family, kind) for family in (sys.argv[1:] or list(FAMILIES))
               for kind in FAMILIES[family].inputs}
    for name, ok in results.items():
        print(f"{name:24s} {'all equal' if ok else 'FAILED'}")
    raise SystemExit(0 if all(results.values()) else 1)
