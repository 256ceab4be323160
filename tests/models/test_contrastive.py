"""Contrastive encoders on tiny random CLIP and SigLIP models loaded by path."""
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("PIL")

from timefoil.benchmarks import get_benchmark  # noqa: E402
from timefoil.core.items import VideoRef  # noqa: E402
from timefoil.models import load_model  # noqa: E402
from timefoil import RunConfig  # noqa: E402
from timefoil.execution.runner import Runner  # noqa: E402
from timefoil.execution.store import RunLog  # noqa: E402
from timefoil.testing import tiny_clip  # noqa: E402
from timefoil.video import FrameStore, Sampling  # noqa: E402

pytestmark = pytest.mark.suite(per_family=1, seed=3)


@pytest.mark.parametrize("kind", ["clip", "siglip"])
def test_each_video_and_text_encoded_once_and_scores_match_a_direct_computation(suite, tmp_path, kind):
    texts = [t for item in get_benchmark("synth").load(suite) for t in item.texts]
    path = tiny_clip(tmp_path / kind, texts, kind=kind)
    model = load_model(f"clip:{path}")
    runner = Runner(RunConfig("synth", f"clip:{path}", data_dir=suite, sampling=Sampling(frames=4)),
                    str(tmp_path / "run"), cache_dir=str(tmp_path / "cache"), model=model, progress=False)
    report = runner.run()
    assert report.errors == 0
    records = RunLog(str(tmp_path / "run")).read()
    videos = {tuple(sorted(r["request"]["video"].items())) for r in records}
    assert model.stats["video_encodes"] == len(videos)  # unique (video, sampling) pairs
    assert model.stats["text_encodes"] == len({r["request"]["text"] for r in records})
    assert len(records) > model.stats["video_encodes"]  # videos repeat across requests

    # Direct per-pair computation with the transformers model itself.
    from transformers import AutoModel, AutoProcessor

    direct, processor = AutoModel.from_pretrained(path).eval(), AutoProcessor.from_pretrained(path)
    store = FrameStore()
    padding = "max_length" if kind == "siglip" else True
    for record in records[:12]:
        frames = store.get(VideoRef.from_json(record["request"]["video"]), Sampling(frames=4)).array
        with torch.no_grad():
            image = direct.get_image_features(**processor(images=list(frames), return_tensors="pt")).pooler_output
            image = torch.nn.functional.normalize(torch.nn.functional.normalize(image, dim=-1).mean(0), dim=-1)
            batch = processor(text=[record["request"]["text"]], return_tensors="pt", padding=padding)
            text = direct.get_text_features(input_ids=batch["input_ids"]).pooler_output[0]
            expected = float(image @ torch.nn.functional.normalize(text, dim=-1))
        assert record["answer"]["score"] == pytest.approx(expected, abs=1e-5)


def test_logit_score_and_blind_requests(tmp_path, suite):
    path = tiny_clip(tmp_path / "clip", ["a red square"])
    cosine, logit = load_model(f"clip:{path}"), load_model(f"clip:{path}", {"score": "logit"})
    from timefoil.models.requests import Request

    video = VideoRef.file(f"{suite}/videos/order-000-a.mp4")
    request = Request("similarity", video, "a red square", Sampling(frames=2))
    store = FrameStore()
    a = cosine.answer([request], store.get)[0].score
    b = logit.answer([request], store.get)[0].score
    assert b == pytest.approx(float(cosine.model.logit_scale.detach().exp()) * a, rel=1e-5)
    blind = cosine.answer([Request("similarity", None, "a red square")], store.get)[0]
    assert blind.error and "needs the video" in blind.error


def test_xclip_end_to_end_with_the_pil_backend(suite, tmp_path):
    """X-CLIP encodes the clip as a whole; its score equals a direct computation, and the
    processor is the PIL one whatever is installed (recorded in the fingerprint)."""
    texts = [t for item in get_benchmark("synth").load(suite) for t in item.texts]
    path = tiny_clip(tmp_path / "xclip", texts, kind="xclip")
    model = load_model(f"clip:{path}")
    assert model.fingerprint()["image_backend"] == "pil"
    runner = Runner(RunConfig("synth", f"clip:{path}", data_dir=suite, sampling=Sampling(frames=8)),
                    str(tmp_path / "run"), cache_dir=str(tmp_path / "cache"), model=model, progress=False)
    assert runner.run().errors == 0
    records = RunLog(str(tmp_path / "run")).read()
    from transformers import AutoModel, AutoProcessor

    direct, processor = AutoModel.from_pretrained(path).eval(), AutoProcessor.from_pretrained(path, backend="pil")
    store = FrameStore()
    for record in records[:6]:
        frames = store.get(VideoRef.from_json(record["request"]["video"]), Sampling(frames=8)).array
        with torch.no_grad():
            pixels = processor(videos=[list(frames)], return_tensors="pt")["pixel_values"]
            video = direct.get_video_features(pixel_values=pixels).pooler_output[0]
            batch = processor(text=[record["request"]["text"]], return_tensors="pt", padding=True)
            text = direct.get_text_features(input_ids=batch["input_ids"]).pooler_output[0]
            expected = float(torch.nn.functional.normalize(video, dim=-1) @ torch.nn.functional.normalize(text, dim=-1))
        assert record["answer"]["score"] == pytest.approx(expected, abs=1e-5)


def test_retrieval_ranks_every_text_once_and_agrees_with_pairwise_scores(suite, tmp_path):
    """A run of the retrieval protocol: each unique video and text encoded once, and every
    asked rank equal to the rank read off the pairwise similarity scores."""
    from timefoil.benchmarks import BENCHMARKS, register
    from timefoil.models.base import ranks_of
    from timefoil.models.requests import Request

    synth = get_benchmark("synth")
    texts = [t for item in synth.load(suite) if item.options_are == "texts" for t in item.texts]
    path = tiny_clip(tmp_path / "clip", texts)
    model = load_model(f"clip:{path}")
    saved = BENCHMARKS["synth"]
    try:
        from dataclasses import replace

        register(replace(synth, opt_out={}, shapes=frozenset({"texts"}),  # text options only: videos rank texts
                         load=lambda root: [i for i in synth.load(root) if i.options_are == "texts"]))
        runner = Runner(RunConfig("synth", f"clip:{path}", data_dir=suite, protocol="retrieval",
                                  sampling=Sampling(frames=4)), str(tmp_path / "run"), cache_dir=str(tmp_path / "c"),
                        model=model, progress=False)
        report = runner.run()
    finally:
        register(saved)
    records = RunLog(str(tmp_path / "run")).read()
    main = [r for r in records if r["item"]["role"] != "proficiency"]
    assert report.errors == 0 and report.get("overall/R@10 caption").n == len(main) == report.items - report.get(
        "overall/P").n
    pools = {r["item"]["test"]: r["request"] for r in records}
    assert model.stats["text_encodes"] == len(set(texts))
    for record in records[:6]:
        item, request = record["item"], record["request"]
        pool = [t for r in records if r["item"]["test"] == item["test"] for t in r["item"]["texts"]]
        pool = list(dict.fromkeys(pool))
        ref = VideoRef.from_json(request["video"])
        scores = [a.score for a in model.answer_similarity([Request("similarity", ref, t, Sampling(frames=4))
                                                            for t in pool], FrameStore().get)]
        assert record["answer"]["meta"]["ranks"] == ranks_of(scores, [pool.index(t) for t in item["texts"]])
    for test, request in pools.items():  # the pool: every text of the test, listed or (when long) digested
        pool = {t for rec in records if rec["item"]["test"] == test for t in rec["item"]["texts"]}
        assert (request.get("candidates") or {}).get("n", len(request["option_texts"])) == len(pool)
