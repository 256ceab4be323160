"""Live check of the open path: every architecture with a recipe in ``open_families`` answers
through its own processor, loaded by path as a user loads it. Run in the throwaway environment
with torchvision (video processors need it), never in CI:

    PYTHONPATH=src /tmp/ref/bin/python tests/reference/check_open_families.py [model_type ...]

For each architecture (all recipes when none is named): a tiny random model is saved, loaded
with ``load_model("hf:<folder>")`` (the real loading code), and asked entailment, choice and
generation about two clips with three captions of different token lengths. It passes when

- every answer is one (no error), with finite probabilities;
- timefoil's inputs for each prompt equal the model card's path
  (``processor.apply_chat_template(messages, tokenize=True, return_dict=True)`` with the same
  frames, ``do_sample_frames=False`` and the frames' metadata), and so do the last-token logits;
- each greedy answer equals ``model.generate(do_sample=False)`` on the model card's inputs.

The outcome of each is written to ``open_families/results.json`` (with the transformers
version), from which ``families_table.py`` writes the table in docs/models.md.
"""
from __future__ import annotations

import json
import math
import os
import sys
import tempfile
import traceback

import torch
from PIL import Image

from timefoil.core.items import VideoRef
from timefoil.models import load_model
from timefoil.models.local.hf_inputs import frames_of, video_metadata
from timefoil.models.local.hf_open import TIMES
from timefoil.models.requests import Request
from timefoil.protocols import Prompts
from timefoil.testing import pattern_frames

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from open_families import recipes  # noqa: E402

RESULTS = os.path.join(HERE, "open_families", "results.json")
CAPTIONS = ["a man opens the door and walks out of the room", "a man opens the door", "the door"]
CLIPS = {"/clip-a.mp4": frames_of(pattern_frames(8, 60, 80), rate=0.8),
         "/clip-b.mp4": frames_of(pattern_frames(8, 60, 80)[::-1].copy(), rate=2.0)}
WORDS = CAPTIONS + ["Answer with the letter", "Describe what happens", "Does the video show", "Options"]


def source(ref, sampling):
    return CLIPS[ref.path]


def requests() -> list[Request]:
    prompts = Prompts()
    asked = []
    for path in CLIPS:
        video = VideoRef.file(path)
        for caption in CAPTIONS:
            asked.append(Request("entailment", video, prompts.entailment.format(caption=caption), caption=caption))
        asked.append(Request("choice", video, f"Answer with the letter. A. {CAPTIONS[0]} B. {CAPTIONS[2]}",
                             labels=("A", "B"), option_texts=(CAPTIONS[0], CAPTIONS[2]), max_tokens=4))
        asked.append(Request("generation", video, "Describe what happens", max_tokens=6))
    return asked


def model_card(processor, text: str, frames, shown_as: str, model_type: str) -> dict:
    """The model card's call with the frames and the metadata timefoil gives the processor (whose
    times are checked against real decoded metadata by ``check_frame_times.py``)."""
    visual = ([{"type": "video", "video": frames.array}] if shown_as == "video"
              else [{"type": "image", "image": Image.fromarray(frame)} for frame in frames.array])
    kwargs = {"padding": True}
    if shown_as == "video":
        metadata = video_metadata(frames, "window", TIMES.get(model_type))
        kwargs.update(do_sample_frames=False, video_metadata=[metadata],
                      **({"fps": metadata["sampled_fps"]} if TIMES.get(model_type) == "fps" else {}))
        metadata.pop("sampled_fps")
    messages = [[{"role": "user", "content": visual + [{"type": "text", "text": text}]}]]
    return dict(processor.apply_chat_template(messages, tokenize=True, return_dict=True, return_tensors="pt",
                                              add_generation_prompt=True, processor_kwargs=kwargs))


def check(model_type: str, recipe) -> dict:
    if getattr(recipe, "REFUSED", None):
        return {"status": "refused", "reason": recipe.REFUSED}
    from timefoil.models.local.hf_open import why_refused

    if why_refused(model_type):  # refused at load: the check shows the one line it is refused in
        folder = tempfile.mkdtemp()
        recipe.make(folder, WORDS)
        try:
            load_model(f"hf:{folder}")
        except ValueError as exc:
            return {"status": "refused", "reason": why_refused(model_type), "said": str(exc)}
        raise AssertionError(f"{model_type} loaded where it is refused")
    folder = tempfile.mkdtemp()
    recipe.make(folder, WORDS)
    model = load_model(f"hf:{folder}")
    assert model.inputs.open, f"{model_type} is not on the open path"
    assert model.inputs.video_as == recipe.SHOWN_AS, (model.inputs.video_as, recipe.SHOWN_AS)
    asked = requests()
    answers = model.answer(asked, source)
    errors = [a.error for a in answers if a.error]
    finite = all(math.isfinite(p) for a in answers for p in (a.probs or {}).values())
    inputs_equal = logits_equal = generated_equal = True
    from timefoil.models.local.hf_open import model_inputs

    for request, answer in zip(asked, answers):
        frames = source(request.video, None)
        prompt, _ = model._prompt(request, frames)
        ours = model.inputs.encode([prompt], [frames])
        card = model_card(model.inputs.processor, request.text, frames, recipe.SHOWN_AS, model_type)
        for key in set(model_inputs(model.model, ours)) | set(model_inputs(model.model, card)):
            same = key in ours and key in card and torch.equal(torch.as_tensor(ours[key]), torch.as_tensor(card[key]))
            if not same:
                print(f"{model_type:22s} {request.kind:10s} input {key} differs from the model card's")
            inputs_equal &= same
        with torch.inference_mode():
            theirs = model.model(**model_inputs(model.model, card)).logits[0, -1].float()
            mine = model.model(**model_inputs(model.model, ours)).logits[0, -1].float()
            logits_equal &= torch.equal(theirs, mine)
            if request.kind == "generation":
                generated = model.model.generate(**model_inputs(model.model, card), do_sample=False,
                                                 max_new_tokens=request.max_tokens,
                                                 pad_token_id=model.tokenizer.pad_token_id)
                text = model.tokenizer.decode(generated[0, card["input_ids"].shape[1]:], skip_special_tokens=True)
                generated_equal &= text.strip() == answer.raw
    ok = not errors and finite and inputs_equal and logits_equal and generated_equal
    return {"status": "runs" if ok else "failed", "shown_as": recipe.SHOWN_AS, "answers": len(answers),
            "errors": len(errors), "inputs_equal": inputs_equal, "logits_equal": logits_equal,
            "generation_equal": generated_equal, "notes": model.notes.get("open_path"),
            **({"note": recipe.NOTE} if getattr(recipe, "NOTE", None) else {}),
            **({"first_error": errors[0][:200]} if errors else {})}


def main(names: list[str]) -> int:
    import transformers

    torch.set_num_threads(1)
    torch.manual_seed(0)
    found = recipes()
    results = json.load(open(RESULTS)) if os.path.exists(RESULTS) else {}
    failed = 0
    for model_type in names or sorted(found):
        try:
            outcome = check(model_type, found[model_type])
        except Exception as exc:
            traceback.print_exc()
            outcome = {"status": "failed", "error": f"{type(exc).__name__}: {exc}"[:300]}
        outcome["transformers"] = transformers.__version__
        results[model_type] = outcome
        failed += outcome["status"] == "failed"
        print(f"{model_type:22s} {json.dumps(outcome)}")
    with open(RESULTS, "w") as handle:
        json.dump(dict(sorted(results.items())), handle, indent=1)
        handle.write("\n")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
