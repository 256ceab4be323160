"""timefoil's own video LLM inputs equal the official transformers processors' bit for bit.

The digests in data/processor_digests.json were made once with the official processors in an
environment with torchvision (tests/reference/make_processor_digests.py says how); here they
are recomputed with torch alone. Where torchvision imports, a second test compares live.
"""
import hashlib
import json
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from timefoil.models.video_inputs import (  # noqa: E402
    Timing,
    UnsupportedFamily,
    build_batch,
    build_vision,
    expand_placeholders,
    smart_resize,
)
from timefoil.testing import pattern_frames, vlm_tokenizer, write_processor_files  # noqa: E402

DIGESTS = json.load(open(os.path.join(os.path.dirname(__file__), "data", "processor_digests.json")))
WORDS = ["Does the video entail the caption a man opens the door"]


def _digest(value):
    array = value.detach().cpu().contiguous().numpy() if torch.is_tensor(value) else np.asarray(value)
    return {"sha256": hashlib.sha256(array.tobytes()).hexdigest(), "shape": list(array.shape),
            "dtype": str(array.dtype)}


@pytest.fixture(scope="module")
def setups(tmp_path_factory):
    out = {}
    for family in ("llava_onevision", "qwen2_vl", "qwen2_5_vl"):
        folder = tmp_path_factory.mktemp(family)
        tokenizer = vlm_tokenizer(WORDS, family)
        write_processor_files(folder, family, tokenizer)
        out[family] = (tokenizer, build_vision(family, str(folder), tokenizer), str(folder))
    return out


def _prompt(tokenizer, parts):
    return tokenizer.apply_chat_template([{"role": "user", "content": parts + [{"type": "text", "text": WORDS[0]}]}],
                                         add_generation_prompt=True, tokenize=False)


def _ours(setups, case):
    tokenizer, builder, _ = setups[case["family"]]
    frames = pattern_frames(*case["shape"][:3])
    if case["mode"] == "video":
        return build_batch(builder, tokenizer, [_prompt(tokenizer, [{"type": "video"}])], [frames],
                           [Timing(DIGESTS["fps"])])
    return build_batch(builder, tokenizer, [_prompt(tokenizer, [{"type": "image"}] * len(frames))], [frames],
                       as_images=True)


@pytest.mark.parametrize("case", DIGESTS["cases"], ids=lambda c: f"{c['family']}-{c['mode']}-{c['shape']}")
def test_inputs_equal_the_official_processor_digests(setups, case):
    torch.set_num_threads(1)
    ours = _ours(setups, case)
    for key, expected in case["digests"].items():
        assert _digest(ours[key]) == expected, key


def test_the_digests_cover_padding_and_a_mixed_resize():
    shapes = {tuple(c["shape"][:3]) for c in DIGESTS["cases"] if c["mode"] == "video"}
    assert len(shapes) >= 4 and any(t % 2 for t, _, _ in shapes)  # a frame count Qwen pads
    grows = []
    for t, h, w in shapes:  # with the digests' budget (3136 to 256*28*28 pixels)
        new_h, new_w = smart_resize(h, w, 28, 3136, 28 * 28 * 256)
        grows.append((new_h > h) != (new_w > w))
    assert any(grows)  # one axis grows while the other shrinks


def test_qwen25_second_per_grid_ts_comes_from_the_sampling_rate(setups):
    tokenizer, builder, _ = setups["qwen2_5_vl"]
    batch = build_batch(builder, tokenizer, [_prompt(tokenizer, [{"type": "video"}])], [pattern_frames(8, 56, 56)],
                        [Timing(0.8)])
    assert batch["second_per_grid_ts"].tolist() == pytest.approx([2 / 0.8])  # temporal_patch_size / fps
    with pytest.raises(ValueError, match="sampled"):
        build_batch(builder, tokenizer, [_prompt(tokenizer, [{"type": "video"}])], [pattern_frames(8, 56, 56)])


def test_placeholder_expansion_and_unsupported_families(setups):
    assert expand_placeholders("a <v> b <v>", "<v>", [2, 1]) == "a <v><v> b <v>"
    with pytest.raises(ValueError, match="2 <v> placeholders for 1"):
        expand_placeholders("<v><v>", "<v>", [3])
    tokenizer, _, folder = setups["qwen2_vl"]
    with pytest.raises(UnsupportedFamily, match="llava_onevision, qwen2_vl, qwen2_5_vl"):
        build_vision("idefics3", folder, tokenizer)
    _, llava, _ = setups["llava_onevision"]
    with pytest.raises(UnsupportedFamily, match="video input only"):
        llava.images(pattern_frames(2, 32, 32))


def test_configuration_is_read_in_transformers_order(tmp_path):
    """processor_config.json's entry wins over video_preprocessor_config.json, which wins
    over preprocessor_config.json; min_pixels/max_pixels set the size; the rest is defaults."""
    tokenizer = vlm_tokenizer(WORDS, "qwen2_vl")
    tokenizer.save_pretrained(tmp_path)
    (tmp_path / "preprocessor_config.json").write_text(json.dumps({"min_pixels": 100, "max_pixels": 1000}))
    assert build_vision("qwen2_vl", str(tmp_path), tokenizer).max_pixels == 1000
    (tmp_path / "video_preprocessor_config.json").write_text(json.dumps({"size": {"shortest_edge": 5,
                                                                                  "longest_edge": 2000}}))
    builder = build_vision("qwen2_vl", str(tmp_path), tokenizer)
    assert (builder.min_pixels, builder.max_pixels, builder.patch_size) == (5, 2000, 14)
    (tmp_path / "processor_config.json").write_text(json.dumps({"video_processor": {"max_pixels": 3000}}))
    builder = build_vision("qwen2_vl", str(tmp_path), tokenizer)
    assert (builder.min_pixels, builder.max_pixels) == (128 * 28 * 28, 3000)  # class default for the rest


def _torchvision_imports():
    try:
        import torchvision  # noqa: F401
    except Exception:
        return False
    return True


@pytest.mark.skipif(not _torchvision_imports(), reason="torchvision does not import here")
def test_live_against_the_official_processor(setups):
    from transformers import AutoProcessor

    for case in DIGESTS["cases"][:6]:
        tokenizer, _, folder = setups[case["family"]]
        official = AutoProcessor.from_pretrained(folder)
        frames = pattern_frames(*case["shape"][:3])
        if case["mode"] != "video":
            continue
        reference = official(text=[_prompt(tokenizer, [{"type": "video"}])], videos=[frames], return_tensors="pt",
                             video_metadata=[{"total_num_frames": len(frames), "fps": DIGESTS["fps"],
                                              "frames_indices": list(range(len(frames)))}])
        ours = _ours(setups, case)
        for key in case["digests"]:
            assert torch.equal(torch.as_tensor(ours[key]), torch.as_tensor(reference[key])), key
