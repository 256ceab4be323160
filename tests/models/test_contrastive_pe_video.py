"""PE-Video through ``clip:``: a tiny random PeVideoModel saved with its processor files and
loaded by path. Its frame encoder (a timm model, which needs torchvision) is a small torch
classifier registered for transformers' timm configuration (``register_frame_encoder_standin``);
everything around it is transformers' own."""
import json
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from timefoil import RunConfig  # noqa: E402
from timefoil.benchmarks import get_benchmark  # noqa: E402
from timefoil.core.items import VideoRef  # noqa: E402
from timefoil.execution.runner import Runner  # noqa: E402
from timefoil.execution.store import RunLog  # noqa: E402
from timefoil.models import load_model  # noqa: E402
from timefoil.models.local.pe_video import PeVideoPixels  # noqa: E402
from timefoil.testing import pattern_frames, tiny_pe_video  # noqa: E402
from timefoil.video import FrameStore, Sampling  # noqa: E402

pytestmark = pytest.mark.suite(per_family=1, seed=5)


def official_steps(frames: np.ndarray, height: int, width: int):
    """The video processor's steps written out plainly: uint8 NCHW, antialiased bilinear resize
    (torch's uint8 kernel, which torchvision's tensor resize calls on the CPU), x / 255, then
    (x - 0.5) / 0.5."""
    video = torch.tensor(frames).permute(0, 3, 1, 2).contiguous()  # a copy: the frame store's arrays are read-only
    if video.shape[-2:] != (height, width):
        video = torch.nn.functional.interpolate(video, size=[height, width], mode="bilinear", antialias=True,
                                                align_corners=False)
    return ((video.float() / 255 - 0.5) / 0.5)[None]


def test_a_run_encodes_each_video_once_and_scores_equal_the_models_own_forward(suite, tmp_path):
    texts = [t for item in get_benchmark("synth").load(suite) for t in item.texts]
    path = tiny_pe_video(tmp_path / "pe", texts)
    model = load_model(f"clip:{path}")
    assert model.fingerprint()["pooling"] == "whole clip" and model.fingerprint()["image_backend"] == "timefoil"
    sampling = Sampling(frames=6)
    runner = Runner(RunConfig("synth", f"clip:{path}", data_dir=suite, protocol="similarity", sampling=sampling),
                    str(tmp_path / "run"), cache_dir=str(tmp_path / "cache"), model=model, progress=False)
    assert runner.run().errors == 0
    records = RunLog(str(tmp_path / "run")).read()
    videos = {json.dumps(r["request"]["video"], sort_keys=True) for r in records}
    assert model.stats["video_encodes"] == len(videos) and len(records) > len(videos)
    assert model.stats["frames_encoded"] == 6 * len(videos)  # the frames as sampled: none added or dropped
    assert model.stats["text_encodes"] == len({r["request"]["text"] for r in records})

    # The model's own forward (transformers 5.24 defines get_video_features and get_text_features
    # inside __init__, so the model has neither): its video_embeds and text_video_embeds.
    from transformers import AutoModel, AutoTokenizer

    direct, tokenizer = AutoModel.from_pretrained(path).eval(), AutoTokenizer.from_pretrained(path)
    store = FrameStore()
    for record in records:
        frames = store.get(VideoRef.from_json(record["request"]["video"]), sampling).array
        with torch.no_grad():
            ids = tokenizer([record["request"]["text"]], return_tensors="pt")
            out = direct(input_ids=ids["input_ids"], attention_mask=ids["attention_mask"],
                         pixel_values_videos=official_steps(frames, 32, 32))
            video, text = (torch.nn.functional.normalize(e[0], dim=-1) for e in (out.video_embeds,
                                                                                  out.text_video_embeds))
        assert record["answer"]["score"] == pytest.approx(float(video @ text), abs=1e-5)


def test_the_clip_is_encoded_whole_so_frame_order_counts(tmp_path):
    model = load_model(f"clip:{tiny_pe_video(tmp_path / 'pe', ['x'])}")
    frames = pattern_frames(5, 24, 40)
    with torch.no_grad():
        forward, backward = model._encode_frames(frames), model._encode_frames(frames[::-1].copy())
    # a mean of frame embeddings would be the same both ways
    assert float(forward @ backward) < 1 - 1e-4


def test_pixels_follow_the_configured_steps_by_hand(tmp_path):
    """Halving with antialiased bilinear weighs the input columns by a triangle twice as wide:
    at an edge the nearest three columns 3:3:1, inside four columns 1:3:3:1. A 2x4 frame with
    equal rows [10, 24, 66, 101] to 1x2: (30 + 72 + 66) / 7 = 24 and (24 + 198 + 303) / 7 = 75,
    then (x/255 - 0.5)/0.5. The configured frame count (16) and sampling are ignored: the three
    frames go in as given."""
    path = tiny_pe_video(tmp_path / "pe", ["x"], size={"height": 1, "width": 2})
    row = np.array([10, 24, 66, 101], dtype=np.uint8)
    frames = np.broadcast_to(row[None, None, :, None], (3, 2, 4, 3)).copy()
    pixels = PeVideoPixels.read(path)(frames)
    assert tuple(pixels.shape) == (1, 3, 3, 1, 2)
    assert pixels[0, :, :, 0, 0].flatten().tolist() == pytest.approx([24 / 127.5 - 1] * 9, abs=1e-6)
    assert pixels[0, :, :, 0, 1].flatten().tolist() == pytest.approx([75 / 127.5 - 1] * 9, abs=1e-6)


def test_shortest_edge_then_centre_crop(tmp_path):
    """A 4x6 frame, shortest edge 2: 2x3. Equal rows [0, 0, 0, 80, 80, 80] give the columns
    0 (edge, 3:3:1), (0 + 0 + 240 + 80) / 8 = 40 (inside, 1:3:3:1) and (80 + 240 + 240) / 7 = 80;
    a 2x2 crop keeps the first two (its window starts at int(1 / 2) = 0); rescaled, not normalised."""
    path = tiny_pe_video(tmp_path / "pe", ["x"], size={"shortest_edge": 2})
    with open(f"{path}/video_preprocessor_config.json") as handle:
        config = json.load(handle)
    config.update(do_center_crop=True, crop_size={"height": 2, "width": 2}, do_normalize=False)
    with open(f"{path}/video_preprocessor_config.json", "w") as handle:
        json.dump(config, handle)
    row = np.array([0, 0, 0, 80, 80, 80], dtype=np.uint8)
    frame = np.broadcast_to(row[None, None, :, None], (1, 4, 6, 3)).copy()
    pixels = PeVideoPixels.read(path)(frame)
    assert tuple(pixels.shape) == (1, 1, 3, 2, 2)
    assert pixels[0, 0, 0].numpy() == pytest.approx(np.array([[0, 40], [0, 40]]) / 255, abs=1e-6)


def test_refusals_are_one_line(tmp_path):
    path = tiny_pe_video(tmp_path / "pe", ["x"])
    with pytest.raises(ValueError, match=r"^score=logit is not offered for PE-Video; it scores cosine$"):
        load_model(f"clip:{path}", {"score": "logit"})
    with open(f"{path}/video_preprocessor_config.json") as handle:
        config = json.load(handle)
    with open(f"{path}/video_preprocessor_config.json", "w") as handle:
        json.dump({**config, "image_std": None}, handle)
    with pytest.raises(ValueError, match=r"^PE-Video's video processor normalises but names no image_std$"):
        load_model(f"clip:{path}")


def test_the_command_line_run_scores_as_the_forward(suite, tmp_path):
    """``timefoil run`` itself, in a fresh interpreter whose site hook registers the frame-encoder
    stand-in (no timm there either): no errors, every score the model's own forward's cosine."""
    from helpers import cli

    texts = [t for item in get_benchmark("synth").load(suite) for t in item.texts]
    path = tiny_pe_video(tmp_path / "pe", texts)
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text("from timefoil.testing import register_frame_encoder_standin\n"
                                           "register_frame_encoder_standin()\n")
    done = cli("run", "synth", "--model", f"clip:{path}", "--data", suite, "--protocol", "similarity", "--frames",
               "3", "--out", str(tmp_path / "run"), "--no-progress",
               env={"PYTHONPATH": os.pathsep.join([str(hook), os.environ.get("PYTHONPATH", "")]),
                    "TIMEFOIL_CACHE": str(tmp_path / "cache")}, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "not documented" not in done.stdout + done.stderr  # transformers' notice for its developers
    records = RunLog(str(tmp_path / "run")).read()
    assert records and all(r["answer"].get("error") is None for r in records)
    from transformers import AutoModel, AutoTokenizer

    direct, tokenizer = AutoModel.from_pretrained(path).eval(), AutoTokenizer.from_pretrained(path)
    store = FrameStore()
    for record in records:
        frames = store.get(VideoRef.from_json(record["request"]["video"]), Sampling(frames=3)).array
        with torch.no_grad():
            ids = tokenizer([record["request"]["text"]], return_tensors="pt")
            out = direct(**ids, pixel_values_videos=official_steps(frames, 32, 32))
        expected = torch.nn.functional.cosine_similarity(out.video_embeds, out.text_video_embeds)[0]
        assert record["answer"]["score"] == pytest.approx(float(expected), abs=1e-5)


def test_texts_of_unequal_length_batched_equal_each_alone_whatever_side_the_tokenizer_pads(tmp_path):
    """The text embedding is read at the first position; a tokenizer saved padding on the left
    would put a pad there for the shorter texts of a batch."""
    path = tiny_pe_video(tmp_path / "pe", ["a red square moves left", "a video"])
    with open(f"{path}/tokenizer_config.json") as handle:
        config = json.load(handle)
    with open(f"{path}/tokenizer_config.json", "w") as handle:
        json.dump({**config, "padding_side": "left"}, handle)
    model = load_model(f"clip:{path}")
    texts = ["a video", "a red square moves left"]
    with torch.no_grad():
        batched = model._encode_texts(texts)
        alone = torch.cat([model._encode_texts([text]) for text in texts])
    assert torch.allclose(batched, alone, atol=1e-5)
