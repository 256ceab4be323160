"""Where a local model runs when nobody says: the first GPU in the checkpoint's dtype with the
best attention installed; on this CPU machine float32 as always. run.json and the report name
the device, dtype and attention each run used."""
import json

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from timefoil import RunConfig, run  # noqa: E402
from timefoil.models.local import hf_loading, placement  # noqa: E402
from timefoil.models.local.hf_generative import HFGenerative  # noqa: E402
from timefoil.models.local.placement import Placement, place  # noqa: E402
from timefoil.reports.html.page import write_html  # noqa: E402
from timefoil.reports.report import failure_lines, load_scored  # noqa: E402
from timefoil.testing import tiny_llama  # noqa: E402
from timefoil.video.sampling import Sampling  # noqa: E402

pytestmark = pytest.mark.suite(per_family=1, seed=2, families=("order",))


def gpus(monkeypatch, present: bool, flash: bool = False):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: present)
    monkeypatch.setattr(placement, "best_attention", lambda: "flash_attention_2" if flash else "sdpa")


def test_without_a_gpu_nothing_changes(monkeypatch):
    gpus(monkeypatch, False)
    assert place() == Placement("cpu", None, "float32", None)
    assert place(dtype="bfloat16") == Placement("cpu", None, "bfloat16", None)


def test_with_a_gpu_the_first_one_in_the_checkpoints_dtype_with_the_best_attention(monkeypatch):
    gpus(monkeypatch, True)
    assert place() == Placement("cuda:0", "cuda:0", "auto", "sdpa")  # loaded straight onto the GPU
    gpus(monkeypatch, True, flash=True)
    assert place() == Placement("cuda:0", "cuda:0", "auto", "flash_attention_2")
    # what the user says still decides
    assert place(device="cpu") == Placement("cpu", None, "float32", None)
    assert place(device_map="auto", dtype="float16", attention="eager") == Placement("cuda:0", "auto", "float16",
                                                                                    "eager")


def test_a_gpu_asked_for_where_torch_sees_none_and_unknown_values_are_one_line(monkeypatch):
    gpus(monkeypatch, False)
    with pytest.raises(ValueError, match=r"^model-arg device=cuda:1, but torch sees no GPU on this machine"):
        place(device="cuda:1")
    with pytest.raises(ValueError, match=r"^model-arg dtype must be one of auto, float32, bfloat16, float16, not "
                                         r"'bf16'$"):
        place(dtype="bf16")
    with pytest.raises(ValueError, match=r"^model-arg attention must be one of auto, sdpa, eager"):
        place(attention="flash")


def test_an_hf_model_on_a_gpu_machine_is_loaded_onto_the_gpu_in_its_own_dtype(tmp_path, monkeypatch):
    """What from_pretrained is asked for when a GPU is present and no model-arg says otherwise."""
    folder = tiny_llama(tmp_path / "lm", ["yes no"])
    gpus(monkeypatch, True)
    asked = {}

    class Stop(Exception):
        pass

    class Recorder:
        @classmethod
        def from_pretrained(cls, path, **kwargs):
            asked.update(kwargs)
            raise Stop

    monkeypatch.setattr(hf_loading, "model_class_of", lambda config: Recorder)
    with pytest.raises(Stop):
        HFGenerative(folder)
    assert (asked["dtype"], asked["device_map"], asked["attn_implementation"]) == ("auto", "cuda:0", "sdpa")


def test_a_cpu_run_says_where_it_ran_in_run_json_the_terminal_and_the_page(suite, tmp_path):
    folder = tiny_llama(tmp_path / "lm", ["yes no"])
    config = RunConfig("synth", f"hf:{folder}", data_dir=suite, protocol="entailment", blind=True,
                       sampling=Sampling(frames=1))
    run(config, str(tmp_path / "run"), cache_dir=str(tmp_path / "cache"), progress=False)
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["model_notes"]["ran_on"] == {"device": "cpu", "dtype": "float32", "attention": "sdpa"}
    assert meta["model_fingerprint"]["dtype"] == "float32"  # "auto" on the CPU: the answers cached before
    scored = load_scored(str(tmp_path / "run"))
    assert "  ran on cpu · float32 · sdpa" in failure_lines(scored)
    page = open(write_html([str(tmp_path / "run")], str(tmp_path / "report.html"), thumbnails=False)).read()
    assert page.count("ran on cpu · float32 · sdpa") == 2  # the list of runs, and the table's counts


def test_a_videos_pixels_cross_to_the_device_once_for_all_its_questions(tmp_path, monkeypatch):
    """Prefix reuse makes each question's inputs on the host and sends the video's pixels to the
    device once, with the shared prefix; the plain path sends them once a batch."""
    from timefoil.core.items import VideoRef
    from timefoil.models.local.hf_inputs import frames_of
    from timefoil.models.requests import Request
    from timefoil.protocols import Prompts
    from timefoil.testing import pattern_frames, tiny_vlm

    prompt, captions = Prompts().entailment, ["a man opens the door", "two birds fly", "the dog runs", "a cup",
                                              "a man opens the door slowly"]
    folder = tiny_vlm(tmp_path / "qwen", "qwen2_vl", [prompt] + captions)
    clip, ref = frames_of(pattern_frames(4, 60, 80), rate=0.4), VideoRef.file("/nonexistent/a.mp4")
    requests = [Request("entailment", ref, prompt.format(caption=c), caption=c) for c in captions]
    moved = []
    sent = HFGenerative._on_device
    monkeypatch.setattr(HFGenerative, "_on_device", lambda self, batch: moved.append(
        any(k.startswith("pixel_values") for k in batch)) or sent(self, batch))
    for prefix_reuse, batches in ((True, 1), (False, 3)):
        moved.clear()
        model = HFGenerative(folder, batch_size=2, prefix_reuse=prefix_reuse)
        answers = model.answer(requests, lambda r, s: clip)
        assert all(a.probs for a in answers) and sum(moved) == batches, (prefix_reuse, moved)


def test_a_text_model_run_without_blind_is_labelled_text_only(suite, tmp_path):
    """A text LM is shown no frames whether or not --blind is given: its run is not labelled by
    a frame count it never saw."""
    folder = tiny_llama(tmp_path / "lm", ["yes no"])
    config = RunConfig("synth", f"hf:{folder}", data_dir=suite, protocol="entailment", sampling=Sampling(frames=8))
    run(config, str(tmp_path / "run"), cache_dir=str(tmp_path / "cache"), progress=False)
    assert json.loads((tmp_path / "run" / "run.json").read_text())["model_notes"]["text_only"] is True
    assert load_scored(str(tmp_path / "run")).label.startswith(f"hf:{folder} · text only")
