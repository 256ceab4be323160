"""A video's work is done once through the runner, whatever the batch size: one prefix forward
(the vision tower's one call), one pixel build, no copy of the prefix's KV cache, and one read
of the answers off the device per video; the answers equal the plain path's (prefix reuse off).
VELOCITI-shaped: 20 captions a video, on tiny random models of every built family."""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from timefoil import RunConfig  # noqa: E402
from timefoil.execution.runner import Runner  # noqa: E402
from timefoil.models.families import FAMILIES  # noqa: E402
from timefoil.models.local.hf_generative import HFGenerative  # noqa: E402
from timefoil.models.local.hf_inputs import frames_of  # noqa: E402
from timefoil.models.requests import Request  # noqa: E402
from timefoil.core.items import VideoRef  # noqa: E402
from timefoil.testing import pattern_frames, tiny_vlm  # noqa: E402
from timefoil.video.sampling import Sampling  # noqa: E402
from helpers import run_records, velociti_folder  # noqa: E402

WORDS = "a man woman opens closes the door slowly quickly two birds fly dog runs after ball red blue".split()
VIDEOS, ROWS = 2, 10  # 10 rows of a caption and its foil: 20 captions a video


@pytest.fixture(scope="module")
def velociti(tmp_path_factory):
    """VELOCITI's layout: velociti.jsonl (every row in the paper subset) and videos/<id>.mp4."""
    return velociti_folder(tmp_path_factory.mktemp("velociti"), VIDEOS, ROWS, WORDS, seed=5)


class Counted:
    """What one model did on the host and the device while answering."""

    def __init__(self, model: HFGenerative, monkeypatch):
        self.vision_calls = self.pixel_builds = self.cache_copies = self.reads = 0
        model.model.register_forward_pre_hook(self._forward, with_kwargs=True)
        builder = model.inputs.builder
        for method in ("video", "images"):
            monkeypatch.setattr(builder, method, self._counting(getattr(builder, method)))
        # On the CPU every tensor is on the host; the reads that wait for a GPU are those of
        # the model's outputs, which are all floating point (token ids and positions are not)
        for name in ("tolist", "item", "__float__"):
            monkeypatch.setattr(torch.Tensor, name, self._read(getattr(torch.Tensor, name)))
        import copy

        deepcopy = copy.deepcopy

        def counting_deepcopy(value, *args, **kwargs):
            if type(value).__module__.startswith("transformers.cache_utils"):
                self.cache_copies += 1
            return deepcopy(value, *args, **kwargs)

        monkeypatch.setattr(copy, "deepcopy", counting_deepcopy)

    def _forward(self, module, args, kwargs):
        self.vision_calls += any(k.startswith("pixel_values") and v is not None for k, v in kwargs.items())

    def _counting(self, method):
        def counted(*args, **kwargs):
            self.pixel_builds += 1
            return method(*args, **kwargs)
        return counted

    def _read(self, method):
        import sys

        def read(tensor, *args, **kwargs):
            caller = sys._getframe(1).f_code.co_filename
            if tensor.is_floating_point() and "timefoil" in caller and "tests" not in caller:
                self.reads += 1
            return method(tensor, *args, **kwargs)
        return read


def probabilities(run_dir) -> dict[str, float]:
    return {r["id"]: r["answer"]["probs"]["yes"] for r in run_records(run_dir)}


@pytest.mark.parametrize("family", [f for f in FAMILIES if FAMILIES[f].prefix_reuse_off is None])
def test_one_prefix_one_pixel_build_no_cache_copy_and_one_read_per_video(velociti, family, tmp_path, monkeypatch):
    path = tiny_vlm(tmp_path / "model", family, WORDS + ["Yes No", "Does the video entail the caption"])
    config = RunConfig("velociti", f"hf:{path}", data_dir=velociti, protocol="entailment",
                       benchmark_args={"subset": "paper"}, sampling=Sampling(frames=4))

    def answered(name: str, model: HFGenerative) -> dict[str, float]:
        report = Runner(config, str(tmp_path / name), cache_dir=str(tmp_path / f"cache-{name}"), model=model,
                        progress=False).run()
        assert report.errors == 0
        return probabilities(tmp_path / name)

    plain = answered("plain", HFGenerative(path, prefix_reuse=False, batch_size=8))
    assert len(plain) == 2 * VIDEOS * ROWS
    for batch_size in (8, 64):
        with monkeypatch.context() as patched:
            model = HFGenerative(path, batch_size=batch_size)
            counted = Counted(model, patched)
            reused = answered(f"reuse{batch_size}", model)
        assert counted.vision_calls == VIDEOS and model.stats["prefix_forwards"] == VIDEOS
        assert counted.pixel_builds == VIDEOS and model.stats["host_encodes"] == VIDEOS
        assert counted.cache_copies == 0 and model.stats["cache_copies"] == 0
        assert counted.reads == VIDEOS  # the answers of each video read off the device at once
        assert reused.keys() == plain.keys()
        assert max(abs(reused[k] - plain[k]) for k in plain) <= 1e-5


CLIP = frames_of(pattern_frames(6, 48, 64), rate=1.5)


@pytest.mark.parametrize("family", list(FAMILIES))
def test_prompts_encoded_once_are_the_whole_encodings_token_for_token_and_position_for_position(family, tmp_path):
    """The other prompts' text after the video, tokenised alone, with the first prompt's video
    tokens, is each prompt's whole encoding; its positions continue the prefix's as the
    family's own rope index (or flat positions) places them, captions of any length included."""
    captions = ["a man opens the door", "two birds fly", "the dog runs after the red ball quickly"]
    model = HFGenerative(tiny_vlm(tmp_path, family, WORDS + ["Does the video entail the caption"]))
    for kind in FAMILIES[family].inputs:
        model.inputs.video_as = kind
        for caption in (False, True):
            prompts = [model._prompt(Request("entailment", VideoRef.file("/x.mp4"), f"Does the video entail {c}"),
                                     CLIP, caption=caption) for c in captions]
            texts = [p + c for p, c in prompts]
            encoded = model.inputs.encode_shared(model.model, texts, CLIP)
            assert encoded.whole == 1  # the first prompt alone was encoded whole
            for text, sequence in zip(texts, encoded.sequences):
                whole = model.inputs.encode([text], [CLIP])
                assert torch.equal(whole["input_ids"][0], sequence)
                positions = model.inputs.positions(model.model, whole)
                differ = int((sequence[:len(encoded.sequences[0])] != encoded.sequences[0][:len(sequence)])
                             .nonzero()[0]) if not torch.equal(sequence, encoded.sequences[0]) else len(sequence)
                shared = differ - 1  # the last shared token is text: the suffix continues from it
                after = encoded.positions[..., 0, shared - 1] + 1
                rule = after[..., None] + torch.arange(len(sequence) - shared)
                assert torch.equal(positions[..., 0, shared:], rule)


def test_the_next_videos_inputs_are_made_while_this_one_is_answered(velociti, tmp_path, monkeypatch):
    """The runner's decode-ahead workers also encode the coming videos' prompts; their
    encodings are taken by the call that answers them, and the answers are the plain path's."""
    path = tiny_vlm(tmp_path / "model", "qwen2_vl", WORDS + ["Yes No", "Does the video entail the caption"])
    config = RunConfig("velociti", f"hf:{path}", data_dir=velociti, protocol="entailment",
                       benchmark_args={"subset": "paper"}, sampling=Sampling(frames=4))
    answered = {}
    for name, ahead in (("plain", False), ("ahead", True)):
        monkeypatch.setattr(HFGenerative, "decodes_ahead", property(lambda self, ahead=ahead: ahead))
        model = HFGenerative(path, batch_size=8, prefix_reuse=name == "ahead")
        report = Runner(config, str(tmp_path / name), cache_dir=str(tmp_path / f"cache-{name}"), model=model,
                        progress=False).run()
        assert report.errors == 0
        answered[name] = probabilities(tmp_path / name)
    assert model.stats["prepared_ahead"] == VIDEOS  # every video, the first too, was ready when asked
    assert model.stats["prefix_forwards"] == VIDEOS
    assert max(abs(answered["ahead"][k] - answered["plain"][k]) for k in answered["plain"]) <= 1e-5


def test_a_bfloat16_models_answers_are_read_from_float32_logits(tmp_path):
    """The output projection runs in float32 on the kept positions of a bfloat16 model: its
    logits equal the float32 product of the last hidden states and the (exact) weights, where
    bfloat16 logits move in steps of 1/8 near 20; the fingerprint says so."""
    path = tiny_vlm(tmp_path, "qwen2_vl", WORDS + ["Yes No", "Does the video entail the caption"])
    model = HFGenerative(path, dtype="bfloat16")
    assert model.float_logits and model.fingerprint()["logits"] == "float32"
    assert "logits" not in HFGenerative(path).fingerprint()  # float32 models compute them so already
    head = model.model.get_output_embeddings()
    hidden = torch.randn(2, 3, head.in_features, dtype=torch.bfloat16) * 8
    logits = head(hidden)
    assert logits.dtype == torch.float32
    assert torch.equal(logits, torch.nn.functional.linear(hidden.float(), head.weight.float()))
    assert not torch.equal(logits, torch.nn.functional.linear(hidden, head.weight).float())
    answers = model.answer([Request("entailment", VideoRef.file("/x.mp4"), f"Does the video entail {c}")
                            for c in ("a man opens the door", "two birds fly")], lambda ref, sampling: CLIP)
    assert all(a.error is None and 0 < a.probs["yes"] < 1 for a in answers)
