"""Video LLMs end to end on tiny random LLaVA-OneVision, Qwen2-VL and Qwen2.5-VL folders,
loaded by path through the real loading code, with no torchvision."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from helpers import resumes_as_uninterrupted, run_protocol  # noqa: E402
from timefoil.core.items import VideoRef  # noqa: E402
from timefoil.models.families import FAMILIES, taking  # noqa: E402
from timefoil.models.local.hf_generative import HFGenerative  # noqa: E402
from timefoil.models.local.hf_inputs import frames_of, torchvision_imports  # noqa: E402
from timefoil.models.video_inputs import Timing, build_batch  # noqa: E402
from timefoil.protocols import Prompts  # noqa: E402
from timefoil.models.requests import Request  # noqa: E402
from timefoil.testing import pattern_frames, tiny_vlm  # noqa: E402
from timefoil.video.frames import FrameStore  # noqa: E402
from timefoil.video.sampling import Sampling  # noqa: E402

pytestmark = pytest.mark.suite(per_family=1, seed=3, families=("order", "direction"))

PROMPTS = Prompts()
CAPTIONS = ["a man opens the door", "a man closes the door slowly", "two birds fly", "the dog runs after the ball"]
REF = VideoRef.file("/nonexistent/clip.mp4")
CLIP = frames_of(pattern_frames(8, 60, 80), rate=0.8)  # 8 frames of a 10 s clip


def source(ref, sampling):
    return CLIP


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    words = [PROMPTS.entailment, PROMPTS.choice, PROMPTS.similarity if hasattr(PROMPTS, "similarity") else ""]
    return {f: tiny_vlm(tmp_path_factory.mktemp(f), f, words + CAPTIONS) for f in FAMILIES}


def entailment(captions):
    return [Request("entailment", REF, PROMPTS.entailment.format(caption=c), caption=c) for c in captions]


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("protocol,order", [("entailment", None), ("choice", "both"), ("similarity", None)])
def test_every_protocol_runs_with_no_error(folders, suite, tmp_path, family, protocol, order):
    records, meta = run_protocol(f"hf:{folders[family]}", suite, tmp_path, protocol, order)
    assert meta["model_fingerprint"]["preprocess"] == "timefoil"
    assert meta["model_fingerprint"]["inputs"]["family"] == family
    assert meta["threads"] == 1  # the tests' TIMEFOIL_THREADS
    if protocol == "choice":
        shown = {tuple(r["request"]["option_texts"]) for r in records if r["request"]["option_texts"]}
        assert len(shown) == len({frozenset(s) for s in shown}) * 2  # both orders of every item


@pytest.mark.parametrize("family", FAMILIES)
def test_batched_and_prefix_reuse_equal_the_models_own_forward(folders, family):
    """The reference is the model's forward on the batch alone, positions computed by the model
    itself (Qwen: its rope index from mm_token_type_ids), one request at a time."""
    path = folders[family]
    batched = HFGenerative(path, prefix_reuse=False, batch_size=4)
    reuse = HFGenerative(path, prefix_reuse=True, batch_size=4)
    requests = entailment(CAPTIONS)
    plain, shared = batched.answer(requests, source), reuse.answer(requests, source)
    assert reuse.stats["prefix_hits"] == 3 and reuse.stats["forward_tokens"] < batched.stats["forward_tokens"]
    model = batched.model
    for request, a, b in zip(requests, plain, shared):
        prompt = batched._prompt(request, CLIP)[0]
        inputs = build_batch(batched.inputs.builder, batched.tokenizer, [prompt], [CLIP.array], [Timing(0.8)],
                             as_images=batched.inputs.video_as == "images")
        with torch.inference_mode():
            probs = model(**inputs).logits[0, -1].float().softmax(-1)
        direct = float(probs[a.meta["yes_ids"]].sum())
        assert abs(a.probs["yes"] - direct) <= 1e-5 and abs(b.probs["yes"] - direct) <= 1e-5
    sims = [Request("similarity", REF, c) for c in CAPTIONS]
    for a, b in zip(batched.answer(sims, source), reuse.answer(sims, source)):
        assert abs(a.score - b.score) <= 1e-4


def test_prefix_reuse_uses_the_suffix_positions(folders):
    """Qwen's text after the video continues from the prefix's largest position, not from the
    token count: giving the suffix plain counted positions changes the answer."""
    model = HFGenerative(folders["qwen2_5_vl"], prefix_reuse=False)
    request = entailment(CAPTIONS[:1])[0]
    prompt = model._prompt(request, CLIP)[0]
    inputs = build_batch(model.inputs.builder, model.tokenizer, [prompt], [CLIP.array], [Timing(0.8)])
    rope = model.inputs.positions(model.model, inputs)
    counted = torch.arange(inputs["input_ids"].shape[1])[None, None].expand(3, 1, -1)
    assert int(rope[0, 0, -1]) < int(counted[0, 0, -1])  # the video's tokens share positions
    with torch.inference_mode():
        right = model.model(**inputs, position_ids=rope).logits[0, -1]
        wrong = model.model(**inputs, position_ids=counted).logits[0, -1]
    assert float((right - wrong).abs().max()) > 1e-4


def test_qwen25_temporal_positions_strictly_increase(folders):
    """8 frames of a 10 s clip: second_per_grid_ts = 2 / 0.8 s; with tokens_per_second = 2 the
    4 temporal groups sit 5 positions apart. Without the rate (transformers' 24 fps guess) they
    would all share one position."""
    model = HFGenerative(folders["qwen2_5_vl"])
    assert model.inputs.builder.timed
    prompt = model._prompt(entailment(CAPTIONS[:1])[0], CLIP)[0]
    for rate, expect_steps in ((0.8, {5}), (24.0, {0})):
        inputs = build_batch(model.inputs.builder, model.tokenizer, [prompt], [CLIP.array], [Timing(rate)])
        positions = model.inputs.positions(model.model, inputs)[0, 0]
        video = inputs["mm_token_type_ids"][0] == 2
        t = int(inputs["video_grid_thw"][0, 0])
        per_group = positions[video].reshape(t, -1)[:, 0]
        assert set(torch.diff(per_group).tolist()) == expect_steps


@pytest.mark.parametrize("family", taking("images"))
def test_frames_as_images(folders, family):
    model = HFGenerative(folders[family], video_as="images")
    answers = model.answer(entailment(CAPTIONS[:2]), source)
    assert all(0 < a.probs["yes"] < 1 for a in answers)
    prompt = model._prompt(entailment(CAPTIONS[:1])[0], CLIP)[0]
    builder = model.inputs.builder
    assert prompt.count(builder.image_token) == 8 and builder.video_token not in prompt
    assert model.fingerprint()["video_as"] == "images"
    # the default shows video where the family takes it, so the answers are not shared
    assert (model.fingerprint() != HFGenerative(folders[family]).fingerprint()) == ("video" in FAMILIES[family].inputs)


@pytest.mark.parametrize("family", [f for f in FAMILIES if "images" not in FAMILIES[f].inputs])
def test_frames_as_images_is_refused_at_load_where_the_family_takes_none(folders, family):
    with pytest.raises(ValueError, match=f"{family} takes frames as its video input only \\(video_as=images is for "
                                         f"{', '.join(taking('images'))}\\)"):
        HFGenerative(folders[family], video_as="images")


@pytest.mark.parametrize("family", FAMILIES)
def test_generation_and_choice(folders, family):
    model = HFGenerative(folders[family], max_new_tokens=3)
    generated = model.answer([Request("generation", REF, "Describe the video")], source)[0]
    assert 1 <= len(generated.raw.split()) <= 3
    options = "A. " + CAPTIONS[0] + "\nB. " + CAPTIONS[1]
    choice = model.answer([Request("choice", REF, PROMPTS.choice.format(options=options), labels=("A", "B"),
                                   option_texts=tuple(CAPTIONS[:2]))], source)[0]
    assert set(choice.probs) == {"A", "B"} and isinstance(choice.raw, str)


@pytest.mark.skipif(torchvision_imports(), reason="torchvision imports here")
def test_official_preprocessing_without_torchvision_fails_with_one_line(folders):
    with pytest.raises(ImportError, match="drop preprocess=official"):
        HFGenerative(folders["qwen2_vl"], preprocess="official")


def test_frames_carry_timestamps_and_the_sampling_rate(tmp_path):
    from timefoil.video.decode import write_video

    path = str(tmp_path / "clip.mp4")
    write_video(path, pattern_frames(100, 16, 16), fps=10)  # 10 s at 10 fps
    store = FrameStore()
    uniform = store.get(VideoRef.file(path), Sampling(frames=8))
    assert uniform.sampled_fps == pytest.approx(0.8)
    assert np.all(np.diff(uniform.times) > 0) and uniform.times[0] == pytest.approx(0.6)  # frame 6 of 100
    per_second = store.get(VideoRef.file(path), Sampling(frames=None, fps=1.0))
    assert per_second.sampled_fps == 1.0 and per_second.times == pytest.approx([k + 0.5 for k in range(10)])
    reversed_ = store.get(VideoRef.file(path), Sampling(frames=8, order="reversed"))
    assert reversed_.times == uniform.times[::-1]


def test_gemma3_prefix_reuse_keeps_each_images_two_way_attention(folders):
    """Gemma 3 lets an image's tokens attend to each other both ways, read from token_type_ids:
    the prefix is run with its types, so reusing it gives the plain path's answers, also when the
    prompt is longer than the sliding window of the model's local layers."""
    reuse, plain = HFGenerative(folders["gemma3"], prefix_reuse=True), HFGenerative(folders["gemma3"],
                                                                                    prefix_reuse=False)
    prompt = plain._prompt(entailment(CAPTIONS[:1])[0], CLIP)[0]
    inputs = plain.inputs.encode([prompt], [CLIP])
    assert inputs["input_ids"].shape[1] > plain.model.config.text_config.sliding_window
    with torch.inference_mode():
        both_ways = plain.model(**inputs).logits[0, -1]
        causal = plain.model(**{k: v for k, v in inputs.items() if k != "token_type_ids"}).logits[0, -1]
    assert float((both_ways - causal).abs().max()) > 1e-3  # the types change what the model computes
    requests = entailment(CAPTIONS)
    shared, alone = reuse.answer(requests, source), plain.answer(requests, source)
    assert reuse.stats["prefix_hits"] == 3
    assert [a.probs["yes"] for a in shared] == pytest.approx([a.probs["yes"] for a in alone], abs=1e-6)



@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_resumes_a_finished_and_an_interrupted_run(folders, suite, tmp_path, family, monkeypatch):
    """The fingerprints of these models hold tuples (image_mean, ...) that run.json stores as
    lists: a resume must still see the same configuration."""
    resumes_as_uninterrupted(f"hf:{folders[family]}", suite, tmp_path, monkeypatch, HFGenerative)
