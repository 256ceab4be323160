"""SigLIP 2 and BLIP-2 image-text matching through clip:<folder>, on tiny random models: each
run of the synthetic suite has no errors, and every stored score equals the one the
transformers model's own forward gives, fed by its own processor, frame by frame."""
import json
import os
import shutil

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("PIL")

from timefoil.benchmarks import get_benchmark  # noqa: E402
from timefoil.core.items import VideoRef  # noqa: E402
from timefoil.models import load_model  # noqa: E402
from timefoil.models.base import ranks_of  # noqa: E402
from timefoil.models.requests import Request  # noqa: E402
from timefoil import RunConfig  # noqa: E402
from timefoil.execution.runner import Runner  # noqa: E402
from timefoil.execution.store import RunLog  # noqa: E402
from timefoil.testing import pattern_frames, tensor_digest, tiny_blip2_itm, tiny_siglip2  # noqa: E402
from timefoil.video import FrameStore, Sampling  # noqa: E402
from helpers import TESTS  # noqa: E402

pytestmark = pytest.mark.suite(per_family=1, seed=3)

FRAMES = Sampling(frames=3)


@pytest.fixture(scope="module")
def texts(suite):
    return [t for item in get_benchmark("synth").load(suite) for t in item.texts]


@pytest.fixture(scope="module")
def blip2(tmp_path_factory, texts):
    return tiny_blip2_itm(tmp_path_factory.mktemp("blip2") / "model", texts)


def run_suite(suite, spec, model, out, cache):
    runner = Runner(RunConfig("synth", spec, data_dir=suite, sampling=FRAMES), str(out), cache_dir=str(cache),
                    model=model, progress=False)
    report = runner.run()
    return report, RunLog(str(out)).read()


def frames_of(record):
    return FrameStore().get(VideoRef.from_json(record["request"]["video"]), FRAMES).array


def test_siglip2_scores_are_the_models_sigmoid_of_mean_pooled_frames(suite, texts, tmp_path):
    from transformers import AutoProcessor, Siglip2Model

    path = tiny_siglip2(tmp_path / "siglip2", texts)
    model = load_model(f"clip:{path}")
    assert model.fingerprint()["score"] == "sigmoid"
    report, records = run_suite(suite, f"clip:{path}", model, tmp_path / "run", tmp_path / "cache")
    assert report.errors == 0

    direct, processor = Siglip2Model.from_pretrained(path).eval(), AutoProcessor.from_pretrained(path, backend="pil")
    # the processor's call would patch at its class defaults (16 px, 256 patches), not the checkpoint's
    patches = {"patch_size": 8, "max_num_patches": 20}
    scale, bias = float(direct.logit_scale.detach().exp()), float(direct.logit_bias.detach())
    for record in records[:8]:
        text = record["request"]["text"]
        with torch.no_grad():
            outs = [direct(**processor(images=[frame], text=[text], return_tensors="pt", **patches))
                    for frame in frames_of(record)]
        assert outs[0].vision_model_output.last_hidden_state.shape[1] == 20  # 16 patches + 4 masked
        video = torch.nn.functional.normalize(torch.cat([o.image_embeds for o in outs]).mean(0), dim=-1)
        expected = torch.sigmoid(scale * video @ outs[0].text_embeds[0] + bias)
        assert record["answer"]["score"] == pytest.approx(float(expected), abs=1e-5)

    # one frame: the score is the forward's own logit through a sigmoid, nothing pooled
    request = Request("similarity", VideoRef.from_json(records[0]["request"]["video"]), texts[1], Sampling(frames=1))
    frame = FrameStore().get(request.video, request.sampling).array[0]
    with torch.no_grad():
        logit = direct(**processor(images=[frame], text=[texts[1]], return_tensors="pt", **patches)).logits_per_text
    assert model.answer([request], FrameStore().get)[0].score == pytest.approx(float(torch.sigmoid(logit)), abs=1e-5)


def test_siglip2_keeps_a_wide_frames_aspect(tmp_path, texts):
    """A 40x96 frame is cut into a 3x6 patch grid (not squashed into 4x4) and encoded as the
    model encodes it alone. The grid: at scale 1/2 the frame is 20x48 px, rounded up to whole
    8 px patches 3x6 = 18 <= 20; any larger scale makes 48 px more than 6 patches, 3x7 = 21 > 20."""
    from transformers import AutoProcessor, Siglip2Model

    path = tiny_siglip2(tmp_path / "siglip2", texts)
    model = load_model(f"clip:{path}", {"score": "logit"})
    frames = pattern_frames(2, 40, 96)
    with torch.inference_mode():
        pooled = model._encode_frames(frames)
    direct, processor = Siglip2Model.from_pretrained(path).eval(), AutoProcessor.from_pretrained(path, backend="pil")
    inputs = processor.image_processor(list(frames), return_tensors="pt")
    assert inputs["spatial_shapes"].tolist() == [[3, 6], [3, 6]]
    with torch.no_grad():
        embeds = [direct.get_image_features(**processor.image_processor([f], return_tensors="pt")).pooler_output
                  for f in frames]
    embeds = torch.nn.functional.normalize(torch.cat(embeds), dim=-1)
    assert torch.allclose(pooled, torch.nn.functional.normalize(embeds.mean(0), dim=-1), atol=1e-5)


def test_siglip2_inputs_equal_the_reference_processors_bytes(tmp_path, monkeypatch):
    """What timefoil hands SigLIP 2's image encoder equals, bit for bit, what the checkpoint's
    PIL image processor gave in an environment with torchvision (digests made once by
    tests/reference/make_contrastive_digests.py; that environment's default, torchvision,
    processor gave the same masks and grids, pixels within one grey level)."""
    from transformers import Siglip2Model

    reference = json.load(open(os.path.join(TESTS, "data", "siglip2_processor_digests.json")))
    model = load_model(f"clip:{tiny_siglip2(tmp_path / 'siglip2', ['a red square'])}")
    seen = []
    encode = Siglip2Model.get_image_features
    monkeypatch.setattr(Siglip2Model, "get_image_features", lambda self, **inputs: seen.append(inputs) or
                        encode(self, **inputs))
    for case in reference["cases"]:
        seen.clear()
        with torch.inference_mode():
            model._encode_frames(pattern_frames(*case["shape"]))
        assert {k: tensor_digest(v) for k, v in seen[0].items()} == case["digests"], case["shape"]
        assert case["default_masks_equal"] and case["default_shapes_equal"]
        assert case["default_max_pixel_difference"] <= 2 / 255 + 1e-6  # [-1, 1] pixels: 1/255 is 2/255 here


def direct_blip2(path):
    from transformers import AutoProcessor, Blip2ForImageTextRetrieval

    return Blip2ForImageTextRetrieval.from_pretrained(path).eval(), AutoProcessor.from_pretrained(path, backend="pil")


def blip2_frame_score(direct, processor, frame, text, score):
    """One (frame, text) pair through the model's forward, as its documentation scores it."""
    inputs = processor(images=[frame], text=[text], return_tensors="pt")
    with torch.no_grad():
        logits = direct(**inputs, use_image_text_matching_head=score == "itm").logits_per_image
    return float(logits.softmax(-1)[0, 1] if score == "itm" else logits[0, 0])


@pytest.mark.parametrize("score", ["itm", "itc"])
def test_blip2_scores_are_the_mean_of_the_forwards_frame_scores(suite, blip2, tmp_path, score):
    options = {} if score == "itm" else {"score": score}  # itm by default
    model = load_model(f"clip:{blip2}", options)
    assert model.fingerprint()["score"] == score
    report, records = run_suite(suite, f"clip:{blip2}", model, tmp_path / "run", tmp_path / "cache")
    assert report.errors == 0
    direct, processor = direct_blip2(blip2)
    checked = records[:8]
    for record in checked:
        frame_scores = [blip2_frame_score(direct, processor, f, record["request"]["text"], score)
                        for f in frames_of(record)]
        assert record["answer"]["score"] == pytest.approx(sum(frame_scores) / len(frame_scores), abs=1e-5)
    assert len({round(r["answer"]["score"], 6) for r in checked}) > 1  # the texts are told apart

    # retrieval: the asked candidates' ranks are those of the pairwise scores
    video, options = VideoRef.from_json(records[0]["request"]["video"]), tuple(dict.fromkeys(texts_of(records)))[:5]
    rank = model.answer([Request("rank", video, "", FRAMES, option_texts=options, ask=(0, 3))], FrameStore().get)[0]
    pairwise = [a.score for a in model.answer([Request("similarity", video, t, FRAMES) for t in options],
                                              FrameStore().get)]
    assert rank.meta["ranks"] == ranks_of(pairwise, [0, 3])


def texts_of(records):
    return [r["request"]["text"] for r in records]


def test_blip2_heads_never_share_cached_answers(suite, blip2, tmp_path):
    """The itc run over the itm run's cache asks every request again and stores itc scores."""
    itm, itc = load_model(f"clip:{blip2}"), load_model(f"clip:{blip2}", {"score": "itc"})
    assert itm.fingerprint() != itc.fingerprint()
    _, first = run_suite(suite, f"clip:{blip2}", itm, tmp_path / "itm", tmp_path / "cache")
    _, second = run_suite(suite, f"clip:{blip2}", itc, tmp_path / "itc", tmp_path / "cache")
    assert itc.stats["video_encodes"] > 0  # nothing came from the itm answers in the cache
    direct, processor = direct_blip2(blip2)
    record = second[0]
    expected = [blip2_frame_score(direct, processor, f, record["request"]["text"], "itc") for f in frames_of(record)]
    assert record["answer"]["score"] == pytest.approx(sum(expected) / len(expected), abs=1e-5)
    by_request = {json.dumps(r["request"], sort_keys=True): r["answer"]["score"] for r in first}
    assert all(by_request[json.dumps(r["request"], sort_keys=True)] != r["answer"]["score"] for r in second)


def test_scores_of_the_other_family_and_generative_blip2_are_refused(blip2, tmp_path, texts):
    siglip2 = tiny_siglip2(tmp_path / "siglip2", texts)
    with pytest.raises(ValueError, match="score=itm is for BLIP-2"):
        load_model(f"clip:{siglip2}", {"score": "itm"})
    with pytest.raises(ValueError, match="scores with score=itm or score=itc, not 'cosine'"):
        load_model(f"clip:{blip2}", {"score": "cosine"})
    with pytest.raises(ValueError, match="score must be one of"):
        load_model(f"clip:{blip2}", {"score": "itx"})
    generative = shutil.copytree(blip2, tmp_path / "generative")
    config = json.loads((generative / "config.json").read_text())
    (generative / "config.json").write_text(json.dumps({**config, "architectures": ["Blip2ForConditionalGeneration"]}))
    with pytest.raises(ValueError, match="Blip2ForConditionalGeneration, which has no matching head"):
        load_model(f"clip:{generative}")
