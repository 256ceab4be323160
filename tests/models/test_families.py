"""The table of video-LLM families says what the code does: each row's inputs, time statement,
position scheme and prefix reuse are checked against its builder and its tiny model, and every
row is held to committed digests of the official processor."""
import json
import os
import re
from dataclasses import replace

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from timefoil.core.items import VideoRef  # noqa: E402
from timefoil.models.families import FAMILIES, FamilySpec, build_vision  # noqa: E402
from timefoil.models.families.gemma4 import patch_budget_size  # noqa: E402
from timefoil.models.local.hf_generative import HFGenerative  # noqa: E402
from timefoil.models.local.hf_inputs import frames_of  # noqa: E402
from timefoil.models.video_inputs import Timing, UnsupportedFamily, build_batch  # noqa: E402
from timefoil.protocols import Prompts  # noqa: E402
from timefoil.models.requests import Request  # noqa: E402
from timefoil import RunConfig, run  # noqa: E402
from timefoil.synth import generate  # noqa: E402
from timefoil.testing import pattern_frames, tiny_vlm, vlm_prompt, vlm_tokenizer, write_processor_files  # noqa: E402
from timefoil.video.sampling import Sampling  # noqa: E402
from helpers import REPO, TESTS  # noqa: E402

DIGESTS = json.load(open(os.path.join(TESTS, "data", "processor_digests.json")))
WORDS = ["Does the video entail the caption a man opens the door"]
CLIP = frames_of(pattern_frames(8, 60, 80), rate=0.8)
REF = VideoRef.file("/nonexistent/clip.mp4")


def source(ref, sampling):
    return CLIP


@pytest.fixture(scope="module")
def builders(tmp_path_factory):
    out = {}
    for family in FAMILIES:
        folder = tmp_path_factory.mktemp(family)
        tokenizer = vlm_tokenizer(WORDS, family)
        write_processor_files(folder, family, tokenizer)
        out[family] = (tokenizer, build_vision(family, str(folder), tokenizer))
    return out


@pytest.fixture(scope="module")
def qwen2_vl(tmp_path_factory):
    prompts = Prompts()
    return tiny_vlm(tmp_path_factory.mktemp("qwen2_vl"), "qwen2_vl", [prompts.entailment, "a b c d"])


def test_every_family_is_held_to_official_digests_of_each_input_it_takes():
    """A row without digests would let its inputs drift from the official processor unseen."""
    covered = {(case["family"], case["mode"]) for case in DIGESTS["cases"]}
    assert covered == {(name, kind) for name, spec in FAMILIES.items() for kind in spec.inputs}


@pytest.mark.parametrize("family", FAMILIES)
def test_inputs_and_time_are_what_the_table_says(builders, family):
    spec, (tokenizer, builder) = FAMILIES[family], builders[family]
    frames = pattern_frames(4, 56, 56)
    for kind, token in (("video", builder.video_token), ("images", builder.image_token)):
        parts = [{"type": "video"}] if kind == "video" else [{"type": "image"}] * len(frames)
        prompt = vlm_prompt(tokenizer, parts, WORDS[0])
        if kind not in spec.inputs:
            with pytest.raises(UnsupportedFamily):
                build_batch(builder, tokenizer, [prompt], [frames], [Timing(0.8)], as_images=kind == "images")
            continue
        batch = build_batch(builder, tokenizer, [prompt], [frames], [Timing(0.8)], as_images=kind == "images")
        # each placeholder became the input's tokens, whatever they are (InternVL writes a video's
        # frames as image tiles, Gemma 3 its images' soft tokens between begin and end tokens)
        added = batch["input_ids"].shape[1] - len(tokenizer(prompt)["input_ids"])
        assert added >= 2 * len(parts)
    video = build_batch(builder, tokenizer, [vlm_prompt(tokenizer, [{"type": "video"}], WORDS[0])], [frames],
                        [Timing(0.8)]) if "video" in spec.inputs else {}
    assert ("second_per_grid_ts" in video) == (spec.time == "second_per_grid_ts")
    # time is stated in the text exactly where the text changes with the frames' times (InternVL's
    # "Frame<i>:" numbers frames, which is no statement of time)
    stated = builder.placeholders("<t>", [3], Timing(0.8, (0.5, 1.75, 3.0)))
    later = builder.placeholders("<t>", [3], Timing(0.8, (9.5, 10.75, 12.0)))
    assert (stated != later) == (spec.time == "text_timestamps")


@pytest.mark.parametrize("family", FAMILIES)
def test_position_scheme_is_the_tiny_models(family):
    """m-RoPE in the table exactly where the model computes its own 3-D rope index."""
    recipe = FAMILIES[family].tiny
    tokenizer = vlm_tokenizer(WORDS, family)
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in recipe.special_tokens}
    text = dict(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512)
    model = recipe.model(text, ids, 32)
    assert hasattr(getattr(model, "model", model), "get_rope_index") == FAMILIES[family].mrope


def test_a_row_that_switches_prefix_reuse_off_says_why_in_run_json(qwen2_vl, tmp_path, monkeypatch):
    requests = [Request("entailment", REF, Prompts().entailment.format(caption=c), caption=c) for c in "abcd"]
    on = HFGenerative(qwen2_vl)
    monkeypatch.setitem(FAMILIES, "qwen2_vl", replace(FAMILIES["qwen2_vl"], prefix_reuse_off="a test's reason"))
    off = HFGenerative(qwen2_vl)
    assert "prefix_reuse" not in on.notes and off.notes["prefix_reuse"] == "off for qwen2_vl: a test's reason"
    answers = on.answer(requests, source), off.answer(requests, source)
    assert (on.stats["prefix_hits"], off.stats["prefix_hits"]) == (3, 0)  # one prefix, three suffixes reuse it
    assert [a.probs["yes"] for a in answers[0]] == pytest.approx([a.probs["yes"] for a in answers[1]], abs=1e-5)
    suite = str(tmp_path / "suite")
    generate(suite, per_family=1, seed=3, families=("order",))
    config = RunConfig("synth", f"hf:{qwen2_vl}", data_dir=suite, protocol="entailment", sampling=Sampling(frames=2))
    report = run(config, str(tmp_path / "run"), cache_dir=str(tmp_path / "cache"), progress=False)
    assert report.errors == 0
    notes = json.load(open(tmp_path / "run" / "run.json"))["model_notes"]
    assert notes["prefix_reuse"] == "off for qwen2_vl: a test's reason"


def test_video_as_defaults_to_the_first_input_the_family_takes(qwen2_vl, monkeypatch):
    assert HFGenerative(qwen2_vl).fingerprint()["video_as"] == "video"
    monkeypatch.setitem(FAMILIES, "qwen2_vl", replace(FAMILIES["qwen2_vl"], inputs=("images",)))
    images_only = HFGenerative(qwen2_vl)
    assert images_only.fingerprint()["video_as"] == "images"
    assert images_only._prompt(Request("entailment", None, "a"), CLIP)[0].count("<|image_pad|>") == 8
    others = ", ".join(name for name in FAMILIES if name != "qwen2_vl" and "video" in FAMILIES[name].inputs)
    with pytest.raises(UnsupportedFamily, match=re.escape(f"qwen2_vl takes frames as its images input only "
                                                          f"(video_as=video is for {others})")):
        HFGenerative(qwen2_vl, video_as="video")


def test_a_row_is_checked_when_it_is_made():
    spec = FAMILIES["qwen2_vl"]
    with pytest.raises(ValueError, match="inputs must be some of video, images"):
        FamilySpec("x", "X", spec.vision, spec.tiny, inputs=("audio",))
    with pytest.raises(ValueError, match="time must be one of none, second_per_grid_ts, text_timestamps"):
        FamilySpec("x", "X", spec.vision, spec.tiny, time="frame numbers")


def test_an_unknown_family_is_refused_naming_the_table(qwen2_vl):
    tokenizer = vlm_tokenizer(WORDS, "qwen2_vl")
    with pytest.raises(UnsupportedFamily, match=f"builds video inputs for {', '.join(FAMILIES)}; 'idefics3' is not"):
        build_vision("idefics3", qwen2_vl, tokenizer)


def test_an_internvl_folder_set_to_centre_crop_is_refused_in_one_line(tmp_path):
    """timefoil builds InternVL's squashed frames only; a crop would make other pixels unseen."""
    tokenizer = vlm_tokenizer(WORDS, "internvl")
    write_processor_files(tmp_path, "internvl", tokenizer, video={"do_center_crop": True,
                                                                  "crop_size": {"height": 32, "width": 32}})
    with pytest.raises(ValueError, match=r"^InternVL's video processor is set to centre-crop, which timefoil does "
                                         r"not build \(--model-arg preprocess=official"):
        build_vision("internvl", str(tmp_path), tokenizer)


def test_gemma3_writes_each_frame_as_an_image_between_its_own_tokens(builders):
    """The hub's settings (896 square, 256 tokens an image, mean and std 0.5): a black and a
    white frame become two 896x896 images of -1 and +1 exactly ((0 - 127.5) / 127.5 and back;
    a bilinear resize keeps a flat image flat), and each begin-image token the chat template
    wrote is followed by 256 soft tokens and an end-image token, the soft ones alone marked."""
    tokenizer, builder = builders["gemma3"]
    frames = pattern_frames(2, 3, 5) * 0
    frames[1] = 255
    prompt = vlm_prompt(tokenizer, [{"type": "image"}] * 2, WORDS[0])
    batch = build_batch(builder, tokenizer, [prompt], [frames], as_images=True)
    pixels = batch["pixel_values"]
    assert tuple(pixels.shape) == (2, 3, 896, 896)
    assert bool((pixels[0] == -1).all()) and bool((pixels[1] == 1).all())
    ids = batch["input_ids"][0].tolist()
    soft, begin, end = tokenizer.convert_tokens_to_ids(["<image_soft_token>", "<start_of_image>", "<end_of_image>"])
    assert len(ids) == len(tokenizer(prompt)["input_ids"]) + 2 * (256 + 1)  # the blank lines are no words here
    first = ids.index(begin)
    assert ids[first:first + 258] == [begin] + [soft] * 256 + [end] and ids[first + 258] == begin
    assert batch["token_type_ids"][0].tolist() == [int(i == soft) for i in ids]
    assert builder.placeholders("<start_of_image>", [2], None) == [
        "\n\n<start_of_image><image_soft_token><image_soft_token><end_of_image>\n\n"]


def test_a_gemma3_folder_set_to_pan_and_scan_is_refused_in_one_line(tmp_path):
    """Pan and scan adds crops of a wide frame, with their own text; built without them the
    model would see other inputs than its processor gives."""
    tokenizer = vlm_tokenizer(WORDS, "gemma3")
    write_processor_files(tmp_path, "gemma3", tokenizer, image={"do_pan_and_scan": True})
    with pytest.raises(ValueError, match=r"^Gemma 3's image processor is set to pan and scan, which timefoil does "
                                         r"not build \(--model-arg preprocess=official"):
        build_vision("gemma3", str(tmp_path), tokenizer)


def test_smolvlm_prompts_a_video_in_its_processors_own_layout(tmp_path):
    """SmolVLM2's processor renders a conversation holding a video with its own template, whatever
    the folder's: a folder template of another layout that writes no video still gives the
    processor's "User: <video>..."; a prompt without frames keeps the folder's template."""
    from timefoil.models.local.hf_inputs import InputEncoder

    tokenizer = vlm_tokenizer(WORDS, "smolvlm")
    tokenizer.chat_template = (
        "{% for m in messages %}<|im_start|>{{ m['role'] }}: {% for c in m['content'] %}{% if c['type'] == 'text' %}"
        "{{ c['text'] }}{% elif c['type'] == 'image' %}<image>{% endif %}{% endfor %}<end_of_utterance>\n{% endfor %}"
        "{% if add_generation_prompt %}Assistant:{% endif %}")
    write_processor_files(tmp_path, "smolvlm", tokenizer)
    encoder = InputEncoder(str(tmp_path), "smolvlm", tokenizer, vision=True)
    assert encoder.prompt("a man", None, 4) == "<|im_start|>User: <video>a man<end_of_utterance>\nAssistant:"
    assert encoder.prompt("a man", "Be brief.", 4) == (
        "<|im_start|>System: Be brief.<end_of_utterance>\nUser: <video>a man<end_of_utterance>\nAssistant:")
    assert encoder.prompt("a man", None, None) == "<|im_start|>user: a man<end_of_utterance>\nAssistant:"


def test_a_smolvlm_folder_sized_by_its_shorter_side_is_refused_in_one_line(tmp_path):
    """Its processor resizes by the longer side or to a height and width, and fails on any other size."""
    tokenizer = vlm_tokenizer(WORDS, "smolvlm")
    write_processor_files(tmp_path, "smolvlm", tokenizer, video={"size": {"shortest_edge": 300}})
    with pytest.raises(ValueError, match=r"^SmolVLM2's video processor size \{'shortest_edge': 300\} is neither a "
                                         r"longest edge nor a height and width$"):
        build_vision("smolvlm", str(tmp_path), tokenizer)


def test_gemma4_writes_each_frame_after_its_time_patched_to_the_soft_token_budget(builders):
    """The hub's settings (16-pixel patches pooled 3 x 3, 70 soft tokens a video frame, 280 an
    image): a 240x320 frame is scaled by sqrt(630 * 256 / 76800) = 1.449 to 347.8x463.7, each
    side down to a multiple of 48: 336x432, 21 x 27 = 567 patches, 63 soft tokens, padded to 630
    patches at position -1; as an image by sqrt(2520 * 256 / 76800) = 2.898 to 672x912, 42 x 57 =
    2394 patches, 266 soft tokens, padded to 2520. A black and a white frame stay 0 and 1 exactly
    (rescaled, not centred: the model centres them itself); frames taken at 0.5 s and 61.25 s are
    written 00:00 and 01:01."""
    tokenizer, builder = builders["gemma4"]
    frames = pattern_frames(2, 240, 320) * 0
    frames[1] = 255
    timing = Timing(0.8, (0.5, 61.25))
    batch = build_batch(builder, tokenizer, [vlm_prompt(tokenizer, [{"type": "video"}], WORDS[0])], [frames], [timing])
    pixels, where = batch["pixel_values_videos"], batch["video_position_ids"]
    assert tuple(pixels.shape) == (2, 630, 16 * 16 * 3) and tuple(where.shape) == (2, 630, 2)
    assert bool((pixels[0] == 0).all()) and bool((pixels[1, :567] == 1).all()) and bool((pixels[1, 567:] == 0).all())
    # (x, y) of each patch, row by row over 27 columns
    assert where[1, :2].tolist() == [[0, 0], [1, 0]] and where[1, 27].tolist() == [0, 1]
    assert where[1, 566].tolist() == [26, 20] and bool((where[:, 567:] == -1).all())
    assert batch["num_frames_per_video"].tolist() == [2]
    assert builder.placeholders("<|video|>", [2 * 63], timing) == [
        " ".join(f"{t} <|image>{'<|video|>' * 63}<image|>" for t in ("00:00", "01:01"))]
    with pytest.raises(ValueError, match="one time per frame: 4 frame times cannot share 126 soft tokens"):
        builder.placeholders("<|video|>", [2 * 63], Timing(0.8, (0.5, 1.0, 2.0, 3.0)))
    ids = batch["input_ids"][0].tolist()
    video, image = tokenizer.convert_tokens_to_ids(["<|video|>", "<|image|>"])
    assert ids.count(video) == 2 * 63 and batch["mm_token_type_ids"][0].tolist() == [2 * (i == video) for i in ids]
    shown = build_batch(builder, tokenizer, [vlm_prompt(tokenizer, [{"type": "image"}] * 2, WORDS[0])], [frames],
                        as_images=True)
    assert tuple(shown["pixel_values"].shape) == (2, 2520, 768)
    assert bool((shown["pixel_values"][1, :2394] == 1).all())
    assert bool((shown["image_position_ids"][:, 2394:] == -1).all())
    ids = shown["input_ids"][0].tolist()
    assert ids.count(image) == 2 * 266 and shown["mm_token_type_ids"][0].tolist() == [int(i == image) for i in ids]


def test_gemma4_sizes_a_frame_too_thin_for_one_step_as_its_processor_does():
    """A 20x2000 frame at 630 patches is scaled by sqrt(630 * 256 / 40000) = 2.008: its height,
    40, rounds down to no 48-pixel step, so it gets one, and its width 2000 / 20 = 100 steps, cut
    to the budget's length of 630 / 9 = 70 steps (3360 pixels): 48 x 3360 = 630 patches, no more."""
    assert patch_budget_size(20, 2000, 16, 630, 3) == (48, 3360)
    assert patch_budget_size(2000, 20, 16, 630, 3) == (3360, 48)
    assert patch_budget_size(240, 320, 16, 630, 3) == (336, 432)


def test_a_gemma4_folder_set_to_a_budget_its_processor_refuses_is_refused_in_one_line(tmp_path):
    tokenizer = vlm_tokenizer(WORDS, "gemma4")
    write_processor_files(tmp_path, "gemma4", tokenizer, video={"max_soft_tokens": 100})
    with pytest.raises(ValueError, match=r"^Gemma 4's video processor is set to 100 soft tokens; its processor takes "
                                         r"70, 140, 280, 560, 1120$"):
        build_vision("gemma4", str(tmp_path), tokenizer)


def test_the_models_guide_has_a_video_llm_inputs_row_for_every_family():
    """docs/models.md's "Video LLM inputs" table names each family of the table by its model_type,
    and no other."""

    text = open(os.path.join(REPO, "docs", "models.md")).read()
    section = text.split("## Video LLM inputs", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| family")]
    named = [re.search(r"\(`(\w+)`", row).group(1) for row in rows if re.search(r"\(`(\w+)`", row)]
    assert sorted(named) == sorted(FAMILIES), named
