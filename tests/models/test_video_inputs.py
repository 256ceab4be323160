"""timefoil's own video LLM inputs equal the model card's path bit for bit.

The digests in data/processor_digests.json were made once, in an environment with torchvision
(tests/reference/make_processor_digests.py says how), by the path a model card gives:
``processor.apply_chat_template(messages, tokenize=True, return_dict=True)`` with the frames in
the messages, padding on the left, with tokenizers that add their begin token where the real
one does. Each case is one prompt or a batch of two prompts of different token lengths; here
each is recomputed with torch alone. Where torchvision imports, a second test compares live.
"""
import json
import os
from contextlib import nullcontext

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from timefoil.models.families import FAMILIES, build_vision  # noqa: E402
from timefoil.models.video_inputs import (  # noqa: E402
    Timing,
    UnsupportedFamily,
    build_batch,
    expand_placeholders,
    smart_resize,
)
from timefoil.models.local.hf_inputs import torchvision_imports  # noqa: E402
from timefoil.testing import (pattern_frames, tensor_digest, vlm_prompt, vlm_tokenizer,  # noqa: E402
                              write_processor_files)
from helpers import TESTS  # noqa: E402

DIGESTS = json.load(open(os.path.join(TESTS, "data", "processor_digests.json")))
WORDS = ["Does the video entail the caption a man opens the door"]


@pytest.fixture(scope="module")
def setups(tmp_path_factory):
    """Per family: the tokenizer (padding on the left, its begin token added as the family's real
    tokenizer does), timefoil's builder and the folder holding the processor files."""
    out = {}
    for family, spec in FAMILIES.items():
        folder = tmp_path_factory.mktemp(family)
        tokenizer = vlm_tokenizer(DIGESTS["words"], family, adds_bos=spec.tiny.adds_bos)
        tokenizer.padding_side = "left"
        write_processor_files(folder, family, tokenizer)
        out[family] = (tokenizer, build_vision(family, str(folder), tokenizer), str(folder))
    return out


def _prompt(tokenizer, parts, text=WORDS[0]):
    return vlm_prompt(tokenizer, parts, text)


def _case_inputs(case):
    """The frames of a case and, for a video, when they were taken (from ``start`` on at the rate)."""
    frames = pattern_frames(*case["shape"][:3])
    fps = DIGESTS["fps"]
    return frames, Timing(fps, tuple(case["start"] + i / fps for i in range(len(frames))))


def _ours(setups, case):
    tokenizer, builder, _ = setups[case["family"]]
    frames, timing = _case_inputs(case)
    parts = [{"type": "video"}] if case["mode"] == "video" else [{"type": "image"}] * len(frames)
    texts = [_prompt(tokenizer, parts, caption) for caption in case["captions"]]
    return build_batch(builder, tokenizer, texts, [frames] * len(texts), [timing] * len(texts),
                       as_images=case["mode"] == "images")


def _name(case):
    return f"{case['family']}-{case['mode']}-{'x'.join(map(str, case['shape']))}-{len(case['captions'])}prompts"


@pytest.mark.parametrize("case", DIGESTS["cases"], ids=_name)
def test_inputs_equal_the_model_card_digests(setups, case):
    torch.set_num_threads(1)
    assert case["adds_bos"] == FAMILIES[case["family"]].tiny.adds_bos  # the digests' tokenizer is the tests'
    ours = _ours(setups, case)
    assert set(ours) == set(case["digests"])  # no input more or fewer than the model card's path gives
    for key, expected in case["digests"].items():
        assert tensor_digest(ours[key]) == expected, key


def test_every_input_of_every_family_has_an_unequal_two_prompt_batch(setups):
    """A batch whose prompts differ in length is where padding and begin tokens go wrong: each
    family's digests hold one per input it takes, the shorter (second) row padded on the left."""
    batches = [c for c in DIGESTS["cases"] if len(c["captions"]) == 2]
    assert {(c["family"], c["mode"]) for c in batches} == {(name, kind) for name, spec in FAMILIES.items()
                                                           for kind in spec.inputs}
    for case in batches:
        assert case["digests"]["attention_mask"]["shape"][0] == 2
        mask = _ours(setups, case)["attention_mask"]
        lengths = mask.sum(1).tolist()
        assert lengths[0] > lengths[1] and mask[1, 0] == 0 and bool(mask[:, -1].all()), _name(case)


def test_smart_resize_by_hand():
    """Factor 28, 3136 to 256*28*28 pixels: 100x340 rounds to 4x12 patches of 28 (112x336, one
    axis grows, the other shrinks); 240x320 to 9x11 (252x308); 20x20 is below the minimum and
    grows to 56x56 (3136 = 56*56)."""
    assert smart_resize(100, 340, 28, 3136, 28 * 28 * 256) == (112, 336)
    assert smart_resize(240, 320, 28, 3136, 28 * 28 * 256) == (252, 308)
    assert smart_resize(20, 20, 28, 3136, 28 * 28 * 256) == (56, 56)


def test_qwen_pads_an_odd_frame_count_with_the_last_frame(setups):
    """7 frames make 4 temporal patches of 2: the last one holds frame 7 twice."""
    tokenizer, builder, _ = setups["qwen2_vl"]
    batch = build_batch(builder, tokenizer, [_prompt(tokenizer, [{"type": "video"}])], [pattern_frames(7, 56, 56)],
                        [Timing(1.0)])
    t, h, w = batch["video_grid_thw"][0].tolist()
    assert (t, h, w) == (4, 4, 4)
    patches = batch["pixel_values_videos"].reshape(t, h * w, 3, 2, 14, 14)  # channel, time, row, column
    assert torch.equal(patches[3, :, :, 0], patches[3, :, :, 1])
    assert not torch.equal(patches[0, :, :, 0], patches[0, :, :, 1])


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
    with pytest.raises(UnsupportedFamily, match=", ".join(FAMILIES)):
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


@pytest.mark.skipif(not torchvision_imports(), reason="torchvision does not import here")
def test_live_against_the_model_card_path(setups):
    """Every two-prompt batch, rebuilt by the processor as a model card calls it."""
    from transformers import AutoProcessor

    for case in [c for c in DIGESTS["cases"] if len(c["captions"]) == 2]:
        tokenizer, _, folder = setups[case["family"]]
        processor = AutoProcessor.from_pretrained(folder)
        processor.tokenizer.padding_side = "left"
        frames, timing = _case_inputs(case)
        visual = ([{"type": "video", "video": frames}] if case["mode"] == "video"
                  else [{"type": "image", "image": frame} for frame in frames])
        conversations = [[{"role": "user", "content": visual + [{"type": "text", "text": caption}]}]
                         for caption in case["captions"]]
        indices = [round(t * timing.sampled_fps) for t in timing.times]
        kwargs = {"padding": True}
        if case["mode"] == "video":
            kwargs.update(do_sample_frames=False, video_metadata=[{
                "total_num_frames": len(frames), "fps": timing.sampled_fps, "frames_indices": indices}] * 2)
        reference = processor.apply_chat_template(conversations, tokenize=True, return_dict=True,
                                                  return_tensors="pt", add_generation_prompt=True,
                                                  processor_kwargs=kwargs)
        ours = _ours(setups, case)
        assert set(ours) == set(reference), _name(case)
        for key in reference:
            assert torch.equal(torch.as_tensor(ours[key]), torch.as_tensor(reference[key])), (_name(case), key)


def test_the_default_paths_check_compares_an_unequal_batch_input_by_input(tmp_path, monkeypatch):
    """run.json's preprocess_check on two prompts of different lengths, against Gemma 3's real
    processor (its PIL image processor loads without torchvision): token ids, attention mask and
    token types are equal (one begin token, pads on the left); without torchvision only the pixels
    differ, by PIL's resize. A processor padding on the right, as processors do unless told,
    differs in the token ids and in the attention mask."""
    from timefoil.models.local import hf_inputs

    tokenizer = vlm_tokenizer(WORDS, "gemma3", adds_bos=True)
    tokenizer.padding_side = "left"
    write_processor_files(tmp_path, "gemma3", tokenizer)
    encoder = hf_inputs.InputEncoder(str(tmp_path), "gemma3", tokenizer, vision=True)
    frames = hf_inputs.frames_of(pattern_frames(2, 40, 50), rate=0.8)
    texts = [encoder.prompt(WORDS[0], None, 2), encoder.prompt("a man", None, 2)]
    batch = build_batch(encoder.builder, tokenizer, texts, [frames.array] * 2, as_images=True)
    assert batch["attention_mask"][1, 0] == 0  # the second prompt is the shorter
    pixels_only = [] if torchvision_imports() else ["pixel_values"]
    with pytest.warns(UserWarning, match="differ from the official") if pixels_only else nullcontext():
        encoder._compare_with_official(texts, [frames, frames], batch)
    assert encoder.check["compared"] and list(encoder.check["differences"]) == pixels_only

    loaded = hf_inputs.official_processor

    def right_padded(path, revision=None):
        processor = loaded(path, revision)
        processor.tokenizer.padding_side = "right"
        return processor

    monkeypatch.setattr(hf_inputs, "official_processor", right_padded)
    with pytest.warns(UserWarning, match="differ from the official"):
        encoder._compare_with_official(texts, [frames, frames], batch)
    assert {"input_ids", "attention_mask", "token_type_ids"} <= set(encoder.check["differences"])


@pytest.mark.parametrize("family, parts", [("gemma3", [{"type": "image"}] * 2),
                                           ("llava_next_video", [{"type": "video"}])])
def test_the_begin_token_stands_once_in_every_row_of_an_unequal_batch(tmp_path, family, parts):
    """As a model card's apply_chat_template(..., tokenize=True) tokenises: a template that
    writes <bos> (Gemma 3) gets no second one from the tokenizer, a template that does not
    (LLaVA-NeXT-Video's) gets the tokenizer's. Two prompts of different lengths: the shorter
    is padded on the left, and each row's first real token is its only <bos>."""
    tokenizer = vlm_tokenizer(WORDS, family, adds_bos=True)
    tokenizer.padding_side = "left"
    assert tokenizer("a man")["input_ids"][0] == tokenizer.bos_token_id  # the tokenizer does add one
    write_processor_files(tmp_path, family, tokenizer)
    builder = build_vision(family, str(tmp_path), tokenizer)
    frames = pattern_frames(2, 64, 64)
    texts = [vlm_prompt(tokenizer, parts, "a man"), vlm_prompt(tokenizer, parts, WORDS[0])]
    assert texts[0].startswith(tokenizer.bos_token) == (family == "gemma3")
    batch = build_batch(builder, tokenizer, texts, [frames, frames], [Timing(1.0)] * 2, as_images=family == "gemma3")
    lengths = batch["attention_mask"].sum(1).tolist()
    assert lengths[0] < lengths[1] and batch["attention_mask"][0, 0] == 0  # the short row is padded first
    for row, mask in zip(batch["input_ids"], batch["attention_mask"]):
        real = row[mask.bool()]
        assert real[0] == tokenizer.bos_token_id and int((real == tokenizer.bos_token_id).sum()) == 1


def test_shorter_side_resize_and_centre_crop_by_hand():
    """The longer side is truncated: 203x367 at 336 gives 336 x int(607.4) = 607; a portrait
    300x200 gives 504x336. A crop larger than the frame pads zeros, the odd pixel after: 2x3 to
    4x4 adds one row above and below and one column on the right; a 5-wide frame cropped to 2
    starts at int(1.5) = 1."""
    from timefoil.models.video_inputs import center_crop, shortest_edge_size

    assert shortest_edge_size(203, 367, 336) == (336, 607)
    assert shortest_edge_size(300, 200, 336) == (504, 336)
    assert shortest_edge_size(336, 500, 336) == (336, 500)
    frame = torch.arange(1, 7).reshape(1, 2, 3)
    assert center_crop(frame, 4, 4).tolist() == [[[0, 0, 0, 0], [1, 2, 3, 0], [4, 5, 6, 0], [0, 0, 0, 0]]]
    assert center_crop(torch.arange(5).reshape(1, 1, 5), 1, 2).tolist() == [[[1, 2]]]


@pytest.mark.parametrize("family,frames,tokens", [("llava_next_video", 8, 8 * 12 * 12),
                                                   ("video_llava", 8, 8 * (16 * 16 + 1)),
                                                   ("video_llava", 7, 7 * (16 * 16 + 1))])
def test_cropped_families_token_counts_by_hand(setups, family, frames, tokens):
    """LLaVA-NeXT-Video: a 336 crop in 14-pixel patches is 24x24, pooled with stride 2 to 12x12
    a frame; Video-LLaVA: a 224 crop is 16x16 patches plus the class token a frame (8 frames:
    2056, its config's video_seq_length)."""
    tokenizer, builder, _ = setups[family]
    batch = build_batch(builder, tokenizer, [_prompt(tokenizer, [{"type": "video"}])],
                        [pattern_frames(frames, 240, 320)], [Timing(0.8)])
    assert int((batch["input_ids"] == tokenizer.convert_tokens_to_ids("<video>")).sum()) == tokens
    side = 336 if family == "llava_next_video" else 224
    assert tuple(batch["pixel_values_videos"].shape) == (1, frames, 3, side, side)


def test_qwen3_vl_writes_each_temporal_patchs_time_from_the_frames_real_times(setups):
    """Seven frames taken at 0.7 s + 1.25 s each: temporal patches of two (the last frame
    repeated) average to 1.325, 3.825, 6.325 and 8.2 s, written with one decimal; the same frames
    taken 10 s later say so."""
    tokenizer, builder, _ = setups["qwen3_vl"]
    frames = pattern_frames(7, 64, 64)
    times = tuple(0.7 + 1.25 * i for i in range(7))
    inputs, count = builder.video(frames, Timing(0.8, times))
    # below the clip budget's minimum (7 x 64 x 64 < 131072): scaled by sqrt(131072 / 28672), up to 160
    assert inputs["video_grid_thw"].tolist() == [[4, 10, 10]] and count == 4 * 10 * 10 // 4
    text = builder.placeholders("<v>", [count], Timing(0.8, times))[0]
    patch = "<|vision_start|>" + "<v>" * 25 + "<|vision_end|>"
    assert text == "".join(f"<{t} seconds>{patch}" for t in ("1.3", "3.8", "6.3", "8.2"))
    later = builder.placeholders("<v>", [count], Timing(0.8, tuple(t + 10 for t in times)))[0]
    assert later.startswith("<11.3 seconds>") and "<18.2 seconds>" in later
    with pytest.raises(ValueError, match="at least 2 frames"):
        builder.video(frames[:1], Timing(0.8, times[:1]))


def test_smolvlm_sizes_by_hand():
    """The longer side to the configured length, the other from the aspect ratio, truncated and
    made even: 203x367 at 64 gives int(35.4) = 35, made 36; a portrait 300x200 gives 64 x
    int(42.7) = 42; 100x340 gives int(18.8) = 18; a length above 4096 is held to 4096."""
    from timefoil.models.families.smolvlm import longest_edge_size

    assert longest_edge_size(203, 367, 64) == (36, 64)
    assert longest_edge_size(300, 200, 64) == (64, 42)
    assert longest_edge_size(100, 340, 64) == (18, 64)
    assert longest_edge_size(720, 1280, 1536) == (864, 1536)
    assert longest_edge_size(100, 200, 9000) == (2048, 4096)


def test_smolvlm_counts_frames_in_words():
    """English cardinals as num2words writes them (compared with it for every count to 200,000 and
    20,000 random ones below 10^12 in the reference environment): a hyphen inside the tens, "and"
    after a hundred, a comma between thousands unless the last group is below a hundred."""
    from timefoil.models.families.smolvlm import number_in_words

    said = {0: "zero", 7: "seven", 21: "twenty-one", 64: "sixty-four", 100: "one hundred",
            101: "one hundred and one", 1001: "one thousand and one", 1100: "one thousand, one hundred",
            101000: "one hundred and one thousand", 1001000: "one million, one thousand"}
    assert {n: number_in_words(n) for n in said} == said


def test_smolvlm_writes_each_frames_time_and_the_videos_length(setups):
    """Frames taken at 59.5, 61.25 and 125.0 s: minutes and seconds, truncated (00:59, 01:01,
    02:05); the length is the last frame's whole seconds (0:02:05); the count in words; each frame
    81 image tokens (the hub's image_seq_len) after the global-image token, between two fake
    tokens. Every frame is squashed to the tower's 384 square, every pixel marked real."""
    tokenizer, builder, _ = setups["smolvlm"]
    times = Timing(0.8, (59.5, 61.25, 125.0))
    image = "<fake_token_around_image><global-img>" + "<image>" * 81 + "<fake_token_around_image>"
    assert builder.placeholders("<video>", [3], times) == [
        "You are provided the following series of three frames from a 0:02:05 [H:MM:SS] video.\n"
        f"\nFrame from 00:59:{image}\nFrame from 01:01:{image}\nFrame from 02:05:{image}\n\n"]
    batch = build_batch(builder, tokenizer, [_prompt(tokenizer, [{"type": "video"}])], [pattern_frames(3, 30, 50)],
                        [times])
    assert tuple(batch["pixel_values"].shape) == (1, 3, 3, 384, 384)
    assert batch["pixel_attention_mask"].tolist() == torch.ones(1, 3, 384, 384, dtype=torch.int64).tolist()
    assert int((batch["input_ids"] == tokenizer.convert_tokens_to_ids("<image>")).sum()) == 3 * 81
    with pytest.raises(ValueError, match="SmolVLM2 needs the times of the sampled frames"):
        builder.placeholders("<video>", [3], None)


def test_a_model_folders_processor_file_that_does_not_parse_is_named(tmp_path):
    from timefoil.core.jsonfiles import UnreadableFile
    from timefoil.models.video_inputs import processor_settings

    (tmp_path / "processor_config.json").write_text('{"video_processor": {"size": ')
    said = (rf"^{tmp_path}/processor_config\.json: not a readable model configuration file "
            r"\(Expecting value at line 1 column 30 \(cut short\?\)\)$")
    with pytest.raises(UnreadableFile, match=said):
        processor_settings(str(tmp_path))
    (tmp_path / "processor_config.json").write_text('{"video_processor": {"size": 4}}')
    assert processor_settings(str(tmp_path)) == ({"size": 4}, {"video_processor": {"size": 4}})
