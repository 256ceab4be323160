"""Reference digests of the official transformers processors, for tests/test_video_inputs.py.

Run ONCE in a throwaway environment that has torchvision (PyPI's torch + torchvision), never
in CI:

    python3 -m venv /tmp/ref && /tmp/ref/bin/pip install torchvision transformers==5.23.0 pillow av click rich
    PYTHONPATH=src /tmp/ref/bin/python tests/reference/make_processor_digests.py tests/data/processor_digests.json

Naming families after the file (``... processor_digests.json llava_next_video``) remakes only
their cases and keeps every other case of the file as it is.

For each family and each frame shape it builds the processor files that timefoil's tests
build (timefoil.testing.write_processor_files), calls the official AutoProcessor on the
deterministic frames of timefoil.testing.pattern_frames with the sampling rate given as
video metadata, and stores SHA-256 digests of what the processor returns. It also checks
timefoil's own builder against the official output on the spot.
"""
from __future__ import annotations

import json
import sys
import tempfile

import torch

from timefoil.models.families import FAMILIES, build_vision
from timefoil.models.video_inputs import Timing, build_batch
from timefoil.testing import pattern_frames, tensor_digest, vlm_prompt, vlm_tokenizer, write_processor_files

SHAPES = [(8, 240, 320), (7, 203, 367), (8, 720, 1280), (8, 128, 128), (5, 100, 340)]
# a portrait frame, for families whose resize follows the shorter side
PORTRAIT = (8, 300, 200)
FPS = 0.8  # 8 frames over a 10 s clip
WORDS = ["Does the video entail the caption a man opens the door"]


def main(out: str, only: list[str]) -> None:
    import transformers
    from transformers import AutoProcessor

    torch.set_num_threads(1)
    results = {"transformers": transformers.__version__, "torch": torch.__version__, "fps": FPS, "cases": []}
    if only:
        with open(out) as handle:
            results = json.load(handle)
        results["cases"] = [case for case in results["cases"] if case["family"] not in only]
    for family, spec in FAMILIES.items():
        if only and family not in only:
            continue
        folder = tempfile.mkdtemp()
        tokenizer = vlm_tokenizer(WORDS, family)
        write_processor_files(folder, family, tokenizer)
        official = AutoProcessor.from_pretrained(folder)
        builder = build_vision(family, folder, tokenizer)
        for shape in SHAPES + ([PORTRAIT] if "shortest_edge" in spec.tiny.video_processor.get("size", {}) else []):
            frames = pattern_frames(*shape)
            for mode in spec.inputs:
                if mode == "video":
                    text = vlm_prompt(tokenizer, [{"type": "video"}], WORDS[0])
                    reference = official(text=[text], videos=[frames], return_tensors="pt", padding=True,
                                         video_metadata=[{"total_num_frames": shape[0], "fps": FPS,
                                                          "frames_indices": list(range(shape[0]))}])
                    ours = build_batch(builder, tokenizer, [text], [frames], [Timing(FPS)])
                else:
                    # an image-only family is shown every sampled frame; the others' image path, three
                    frames = frames if spec.inputs == ("images",) else frames[:3]
                    text = vlm_prompt(tokenizer, [{"type": "image"}] * len(frames), WORDS[0])
                    reference = official(text=[text], images=list(frames), return_tensors="pt", padding=True)
                    ours = build_batch(builder, tokenizer, [text], [frames], as_images=True)
                case = {"family": family, "mode": mode, "shape": list(frames.shape), "digests": {}}
                for key, value in reference.items():
                    if key == "attention_mask":
                        continue
                    case["digests"][key] = tensor_digest(value)
                    same = key in ours and torch.equal(torch.as_tensor(ours[key]), torch.as_tensor(value))
                    print(f"{family:16s} {mode:6s} {str(shape):16s} {key:22s} {'equal' if same else 'DIFFERENT'}")
                    if not same:
                        raise SystemExit(f"timefoil differs from the official processor on {family} {shape} {key}")
                results["cases"].append(case)
    with open(out, "w") as handle:
        json.dump(results, handle, indent=1)
        handle.write("\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
