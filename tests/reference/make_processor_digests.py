"""Reference digests of the model card's path, for tests/models/test_video_inputs.py.

Run ONCE in a throwaway environment that has torchvision (PyPI's torch + torchvision), never
in CI and never committed:

    python3 -m venv /tmp/ref && /tmp/ref/bin/pip install torch==2.14.1 torchvision==0.29.1 \\
        transformers==5.24.0 pillow av click rich numpy zstandard accelerate
    PYTHONPATH=src /tmp/ref/bin/python tests/reference/make_processor_digests.py tests/data/processor_digests.json

Naming families after the file (``... processor_digests.json llava_next_video``) remakes only
their cases and keeps every other case of the file as it is.

Every reference is what a model card tells its users to run:
``processor.apply_chat_template(messages, tokenize=True, return_dict=True, return_tensors="pt")``
with the frames inside the messages (a video, or one image per frame for a family that takes
images), the processor's tokenizer padding on the left. The frames are timefoil's sampling,
passed with their real metadata and ``do_sample_frames=False``, so the processor does not
sample them again. The tiny tokenizers add their begin token where the family's real one does
(``TinyRecipe.adds_bos``), so a template that writes the token itself is seen to get it once.

Cases: several frame shapes per family (odd counts and sizes that pad or crop), and for each
input a family takes a batch of two prompts of different token lengths in one call, which the
processor pads on the left. timefoil's own builder is checked against each on the spot.
"""
from __future__ import annotations

import json
import sys
import tempfile

import torch

from timefoil.models.families import FAMILIES, build_vision
from timefoil.models.video_inputs import Timing, build_batch
from timefoil.testing import pattern_frames, tensor_digest, vlm_tokenizer, write_processor_files

SHAPES = [(8, 240, 320), (7, 203, 367), (8, 720, 1280), (8, 128, 128), (5, 100, 340)]
# a portrait frame, for families whose resize follows the shorter or the longer side
PORTRAIT = (8, 300, 200)
FPS = 0.8  # 8 frames over a 10 s clip
CAPTIONS = ["Does the video entail the caption a man opens the door", "a man"]
# what the tiny tokenizers know beyond the captions: the templates' words and the digits, so that
# Qwen3-VL's timestamps and InternVL's frame numbers are tokens of their own, not <unk>
WORDS = CAPTIONS + ["USER ASSISTANT : seconds 0 1 2 3 4 5 6 7 8 9", " ".join(f"Frame{i}" for i in range(1, 9))]
# the two-prompt batches: an odd frame count taken from 3.75 s on (frame indices 3.. at 0.8 fps)
BATCH_SHAPE, BATCH_START = (7, 203, 367), 3.75


def times_of(count: int, start: float) -> list[float]:
    return [start + i / FPS for i in range(count)]


def messages(frames, caption: str, mode: str) -> list[dict]:
    """One user turn as a model card writes it, the frames themselves in place of a file."""
    visual = ([{"type": "video", "video": frames}] if mode == "video"
              else [{"type": "image", "image": frame} for frame in frames])
    return [{"role": "user", "content": visual + [{"type": "text", "text": caption}]}]


def model_card(processor, frames, captions: list[str], mode: str, start: float) -> dict:
    conversations = [messages(frames, caption, mode) for caption in captions]
    kwargs = {"padding": True}
    if mode == "video":
        # the frames' real metadata: their indices at the sampling rate, so a processor that
        # writes times (index / fps) writes when they were taken; no sampling on top of timefoil's.
        # Not the source clip's frame count and rate: transformers takes the rate as frames /
        # total * fps, true only for frames spread over the whole clip, so frames taken at 0.8 fps
        # from an 11 s clip would be told 0.82 fps (Qwen2.5-VL: 2.44 s per grid for 2.5)
        first = round(start * FPS)
        metadata = {"total_num_frames": len(frames), "fps": FPS,
                    "frames_indices": list(range(first, first + len(frames)))}
        kwargs.update(do_sample_frames=False, video_metadata=[metadata] * len(captions))
    return processor.apply_chat_template(conversations, tokenize=True, return_dict=True, return_tensors="pt",
                                         add_generation_prompt=True, processor_kwargs=kwargs)


def prompt(tokenizer, frames, caption: str, mode: str) -> str:
    """The rendered prompt timefoil tokenises: the same messages without the pixels."""
    visual = [{"type": "video"}] if mode == "video" else [{"type": "image"}] * len(frames)
    return tokenizer.apply_chat_template([{"role": "user", "content": visual + [{"type": "text", "text": caption}]}],
                                         add_generation_prompt=True, tokenize=False)


def timefoil_batch(builder, tokenizer, frames, captions, mode, start):
    texts = [prompt(tokenizer, frames, caption, mode) for caption in captions]
    if mode == "video":
        timing = Timing(FPS, tuple(times_of(len(frames), start)))
        return build_batch(builder, tokenizer, texts, [frames] * len(texts), [timing] * len(texts))
    return build_batch(builder, tokenizer, texts, [frames] * len(texts), as_images=True)


def cases_of(family: str, spec) -> list[dict]:
    size = spec.tiny.video_processor.get("size", {})
    shapes = SHAPES + ([PORTRAIT] if "shortest_edge" in size or "longest_edge" in size else [])
    out = []
    for mode in spec.inputs:
        for shape in shapes:
            out.append({"family": family, "mode": mode, "shape": list(shape), "captions": CAPTIONS[:1], "start": 0.0})
        out.append({"family": family, "mode": mode, "shape": list(BATCH_SHAPE), "captions": CAPTIONS,
                    "start": BATCH_START})
    return out


def main(out: str, only: list[str]) -> None:
    import transformers
    from transformers import AutoProcessor

    torch.set_num_threads(2)
    results = {"transformers": transformers.__version__, "torch": torch.__version__, "fps": FPS, "words": WORDS,
               "path": "processor.apply_chat_template(tokenize=True, return_dict=True), padding left", "cases": []}
    if only:
        with open(out) as handle:
            results = json.load(handle)
        results["cases"] = [case for case in results["cases"] if case["family"] not in only]
    for family, spec in FAMILIES.items():
        if only and family not in only:
            continue
        folder = tempfile.mkdtemp()
        tokenizer = vlm_tokenizer(WORDS, family, adds_bos=spec.tiny.adds_bos)
        tokenizer.padding_side = "left"
        write_processor_files(folder, family, tokenizer)
        processor = AutoProcessor.from_pretrained(folder)
        processor.tokenizer.padding_side = "left"  # as the model cards say for batches
        bos = processor.tokenizer("a man")["input_ids"][0] == processor.tokenizer.bos_token_id
        assert bos == spec.tiny.adds_bos, f"{family}: the saved tokenizer lost its begin-token rule"
        builder = build_vision(family, folder, tokenizer)
        for case in cases_of(family, spec):
            shape, mode = tuple(case["shape"]), case["mode"]
            frames = pattern_frames(*shape)
            if mode == "images" and spec.inputs != ("images",):
                frames = frames[:3]  # an image-only family is shown every sampled frame; the others, three
                case["shape"] = list(frames.shape[:3])
            reference = model_card(processor, frames, case["captions"], mode, case["start"])
            ours = timefoil_batch(builder, tokenizer, frames, case["captions"], mode, case["start"])
            case["adds_bos"] = spec.tiny.adds_bos
            case["digests"] = {}
            for key, value in reference.items():
                case["digests"][key] = tensor_digest(value)
                same = key in ours and torch.equal(torch.as_tensor(ours[key]), torch.as_tensor(value))
                print(f"{family:16s} {mode:6s} {str(tuple(case['shape'])):16s} x{len(case['captions'])} {key:22s} "
                      f"{'equal' if same else 'DIFFERENT'}")
                if not same:
                    raise SystemExit(f"timefoil differs from the model card's path on {family} {shape} {key}")
            extra = set(ours) - set(reference)
            if extra:
                raise SystemExit(f"timefoil gives inputs the model card's path does not on {family}: {sorted(extra)}")
            results["cases"].append(case)
    with open(out, "w") as handle:
        json.dump(results, handle, indent=1)
        handle.write("\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
