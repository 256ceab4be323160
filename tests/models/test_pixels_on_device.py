"""The device path of the pixel build (``pixels_on``: uint8 frames sent to the device,
resized in float32 pass by pass, rounded to uint8 values between passes, normalised there)
against the host path, which the model card digests hold bit-equal: every input but the
pixels is equal, and the pixels are within the tolerance the device path is allowed: at most
two uint8 levels before normalising (2 * rescale / std after it), and fewer than 5% of the
values differ at all (the host's uint8 kernel rounds its weights to integers: measured on
frames with sharp edges, 0.3 to 0.7% of values one level apart and a few in a million two
after one resize, 2.4% after SmolVLM2's two). Run here on the CPU device, the same operations as on a
GPU, for one video (or images) case of every family and input kind in the digests."""
import json
import os

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from timefoil.models.families import FAMILIES, build_vision  # noqa: E402
from timefoil.models.video_inputs import PIXEL_DEVICE, Timing, build_batch, pixels_on  # noqa: E402
from timefoil.testing import pattern_frames, vlm_prompt, vlm_tokenizer, write_processor_files  # noqa: E402
from helpers import TESTS  # noqa: E402

DIGESTS = json.load(open(os.path.join(TESTS, "data", "processor_digests.json")))
CASES = list({(c["family"], c["mode"]): c for c in DIGESTS["cases"] if len(c["captions"]) == 1}.values())


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c['family']}-{c['mode']}-{'x'.join(map(str, c['shape']))}")
def test_device_path_pixels_are_within_two_uint8_levels_of_the_host_path(case, tmp_path):
    torch.set_num_threads(1)
    family = case["family"]
    tokenizer = vlm_tokenizer(DIGESTS["words"], family, adds_bos=FAMILIES[family].tiny.adds_bos)
    tokenizer.padding_side = "left"
    write_processor_files(tmp_path, family, tokenizer)
    builder = build_vision(family, str(tmp_path), tokenizer)
    # a frame size the families resize (the digests' cases may already be the model's size)
    frames = pattern_frames(case["shape"][0], 61, 83)
    fps = DIGESTS["fps"]
    timing = Timing(fps, tuple(i / fps for i in range(len(frames))))
    images = case["mode"] == "images"
    parts = [{"type": "image"}] * len(frames) if images else [{"type": "video"}]
    text = vlm_prompt(tokenizer, parts, case["captions"][0])
    host = build_batch(builder, tokenizer, [text], [frames], [timing], as_images=images)
    with pixels_on("cpu"):
        device = build_batch(builder, tokenizer, [text], [frames], [timing], as_images=images)
    assert PIXEL_DEVICE.get() is None  # the setting ends with its block
    settings = builder.settings
    # one uint8 level after the rescale (and the normalisation, where there is one)
    step = (settings.rescale_factor if settings.do_rescale else 1.0) / (
        min(settings.image_std) if settings.do_normalize else 1.0)
    pixels = [key for key in host if key.startswith("pixel_values")]
    assert pixels and set(device) == set(host)
    for key in host:
        if key in pixels:
            apart = (device[key].double() - host[key].double()).abs()
            differing = float((apart > 1e-6).double().mean())
            assert device[key].dtype == host[key].dtype and float(apart.max()) <= 2 * step + 1e-5, (key, step)
            assert differing <= 0.05, (key, differing)
        elif torch.is_tensor(host[key]):
            assert torch.equal(device[key], host[key]), key
