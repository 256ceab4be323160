"""Reference digests of SigLIP 2's image processor, for tests/test_contrastive_siglip2_blip2.py.

Run ONCE in a throwaway environment that has torchvision (PyPI's torch + torchvision), never
in CI:

    PYTHONPATH=src /tmp/ref/bin/python tests/reference/make_contrastive_digests.py \\
        tests/data/siglip2_processor_digests.json

For each frame shape it saves the processor of timefoil.testing.tiny_siglip2 (8 px patches,
at most 20), loads it back with AutoProcessor and stores SHA-256 digests of what its PIL image
processor returns for the frames of timefoil.testing.pattern_frames. Next to them it records
how the default torchvision processor of the same files differs: equal masks and patch grids,
and the largest pixel difference.
"""
from __future__ import annotations

import json
import sys
import tempfile

import torch

from timefoil.testing import pattern_frames, tensor_digest, tiny_siglip2

SHAPES = [(2, 64, 64), (2, 40, 96), (2, 360, 640)]


def main(out: str) -> None:
    import transformers
    from transformers import AutoProcessor

    torch.set_num_threads(1)
    folder = tiny_siglip2(tempfile.mkdtemp(), ["a red square"])
    pil = AutoProcessor.from_pretrained(folder, backend="pil").image_processor
    default = AutoProcessor.from_pretrained(folder).image_processor
    results = {"transformers": transformers.__version__, "torch": torch.__version__,
               "default_backend": getattr(default, "backend", None), "cases": []}
    for shape in SHAPES:
        frames = list(pattern_frames(*shape))
        ours, theirs = pil(frames, return_tensors="pt"), default(frames, return_tensors="pt")
        results["cases"].append({
            "shape": list(shape), "digests": {k: tensor_digest(v) for k, v in ours.items()},
            "default_masks_equal": bool(torch.equal(ours["pixel_attention_mask"], theirs["pixel_attention_mask"])),
            "default_shapes_equal": bool(torch.equal(ours["spatial_shapes"], theirs["spatial_shapes"])),
            "default_max_pixel_difference": float((ours["pixel_values"] - theirs["pixel_values"]).abs().max())})
    with open(out, "w") as handle:
        json.dump(results, handle, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
