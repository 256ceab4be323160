"""A video's pixels (resize and normalise) are built off the answering thread: by the runner's
decode-ahead workers, on every device, once a video, and the answers equal those of pixels
built on the answering thread. The thread that built each video's pixels is recorded by the
pixel cache (``PixelCache.built_by``)."""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from timefoil import RunConfig  # noqa: E402
from timefoil.execution.runner import Runner  # noqa: E402
from timefoil.models.local.hf_generative import HFGenerative  # noqa: E402
from timefoil.testing import pattern_frames, tiny_vlm  # noqa: E402
from timefoil.video.sampling import Sampling  # noqa: E402
from helpers import run_records, velociti_folder  # noqa: E402

WORDS = "a man woman opens closes the door slowly quickly two birds fly dog runs after ball".split()
VIDEOS, ROWS = 3, 2  # 2 rows of a caption and its foil a video: 4 captions a video


@pytest.fixture(scope="module")
def velociti(tmp_path_factory):
    return velociti_folder(tmp_path_factory.mktemp("velociti"), VIDEOS, ROWS, WORDS, seed=3, longest=7, shift=5)


@pytest.mark.parametrize("prefix_reuse", [True, False], ids=["prefix-once", "plain-rows"])
def test_pixels_are_built_on_the_decode_ahead_workers_and_answer_as_built_on_the_answering_thread(
        velociti, tmp_path, monkeypatch, prefix_reuse):
    path = tiny_vlm(tmp_path / "model", "qwen2_vl", WORDS + ["Yes No", "Does the video entail the caption"])
    config = RunConfig("velociti", f"hf:{path}", data_dir=velociti, protocol="entailment",
                       benchmark_args={"subset": "paper"}, sampling=Sampling(frames=4))
    monkeypatch.setenv("TIMEFOIL_DECODE_WORKERS", "2")
    answered, built = {}, {}
    for name, ahead in (("answering", False), ("ahead", True)):
        with monkeypatch.context() as patched:
            patched.setattr(HFGenerative, "decodes_ahead", property(lambda self, ahead=ahead: ahead))
            model = HFGenerative(path, batch_size=4, prefix_reuse=prefix_reuse)
            report = Runner(config, str(tmp_path / name), cache_dir=str(tmp_path / f"cache-{name}"), model=model,
                            progress=False).run()
        assert report.errors == 0
        answered[name] = {r["id"]: r["answer"]["probs"]["yes"] for r in run_records(tmp_path / name)}
        built[name] = dict(model.inputs.pixels.built_by)
    assert built["answering"] == {"main": VIDEOS}  # without decode-ahead: on the answering thread, once a video
    assert "main" not in built["ahead"] and sum(built["ahead"].values()) == VIDEOS, built
    assert all(thread.startswith("timefoil-decode-ahead-") for thread in built["ahead"]), built
    assert len(answered["ahead"]) == 2 * VIDEOS * ROWS and answered["ahead"] == answered["answering"]


def test_pixels_device_is_an_option_named_in_the_fingerprint_and_set_on_the_building_thread(tmp_path, monkeypatch):
    """``pixels=device`` builds the pixels on a GPU by the device path; on the CPU the host
    path is the device's (nothing changes); where the device path is on, the worker that builds
    a video's pixels runs it (the setting is made on that thread), and the fingerprint says so."""
    import threading

    from timefoil.models import video_inputs
    from timefoil.models.local.hf_inputs import frames_of

    path = tiny_vlm(tmp_path / "model", "qwen2_vl", WORDS)
    with pytest.raises(ValueError, match="pixels must be host"):
        HFGenerative(path, pixels="gpu")
    model = HFGenerative(path, pixels="device")
    assert model.inputs.pixel_device is None and "pixels" not in model.fingerprint()
    model.inputs.pixel_device = torch.device("cpu")  # as on a GPU, with the CPU standing for it
    assert model.fingerprint()["pixels"] == "device"
    separable, passes = video_inputs._separable, []
    monkeypatch.setattr(video_inputs, "_separable", lambda *a: passes.append(threading.current_thread().name)
                        or separable(*a))
    clip = frames_of(pattern_frames(4, 40, 50), rate=1.0)
    worker = threading.Thread(target=model.inputs.pixels_ahead, args=(clip,), name="timefoil-decode-ahead-0")
    worker.start()
    worker.join(60)
    assert passes == ["timefoil-decode-ahead-0"] and dict(model.inputs.pixels.built_by) == {passes[0]: 1}
