"""Where a local model runs when nobody says: the first GPU, in bfloat16 where it computes it
natively (else float32), with flash-attention where it imports and can run (else sdpa); on this
CPU machine float32 as always. The GPU's capability is faked. run.json and the report name
the device, dtype and attention each run used."""
import json
import sys
import types
import weakref

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from timefoil import RunConfig, run  # noqa: E402
from timefoil.models.local import hf_loading  # noqa: E402
from timefoil.models.local.hf_generative import HFGenerative  # noqa: E402
from timefoil.models.local.placement import FLOAT16_NOTE, Placement, place, ran_on  # noqa: E402
from timefoil.reports.html.page import write_html  # noqa: E402
from timefoil.reports.report import failure_lines, load_scored  # noqa: E402
from timefoil.testing import tiny_llama  # noqa: E402
from timefoil.video.sampling import Sampling  # noqa: E402

pytestmark = pytest.mark.suite(per_family=1, seed=2, families=("order",))


def gpus(monkeypatch, present: bool, flash: bool = False, capability: tuple[int, int] = (9, 0), count: int = 1):
    """A machine with ``count`` GPUs of ``capability`` (9.0: H100/H200, 8.0: A100, 7.5: T4,
    7.0: V100), flash_attn importable or not."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: present)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: count if present else 0)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: capability)
    monkeypatch.setattr(torch.version, "hip", None)
    # None in sys.modules makes ``import flash_attn`` raise ImportError, as where it is not installed
    monkeypatch.setitem(sys.modules, "flash_attn", types.ModuleType("flash_attn") if flash else None)


def test_without_a_gpu_nothing_changes(monkeypatch):
    gpus(monkeypatch, False)
    assert place() == Placement("cpu", None, "float32", None)
    assert place(dtype="bfloat16") == Placement("cpu", None, "bfloat16", None)


def test_with_a_gpu_the_first_one_in_bfloat16_with_the_best_attention(monkeypatch):
    gpus(monkeypatch, True)
    assert place() == Placement("cuda:0", "cuda:0", "bfloat16", "sdpa")  # loaded straight onto the GPU
    gpus(monkeypatch, True, flash=True)
    assert place() == Placement("cuda:0", "cuda:0", "bfloat16", "flash_attention_2")
    # what the user says still decides
    assert place(device="cpu") == Placement("cpu", None, "float32", None)
    assert place(device_map="auto", dtype="float16", attention="eager") == Placement("cuda:0", "auto", "float16",
                                                                                    "eager")


@pytest.mark.parametrize("capability, flash, dtype, chosen", [
    ((9, 0), True, "auto", ("bfloat16", "flash_attention_2")),  # H100/H200
    ((8, 0), True, "auto", ("bfloat16", "flash_attention_2")),  # A100: the first with both
    ((8, 0), False, "auto", ("bfloat16", "sdpa")),  # flash_attn not installed
    ((7, 5), True, "auto", ("float32", "sdpa")),  # T4: no native bfloat16, so float32, and no flash in float32
    ((7, 0), False, "auto", ("float32", "sdpa")),  # V100
    ((7, 5), True, "float16", ("float16", "sdpa")),  # float16 asked on a T4: flash-attention 2 needs Ampere
    ((8, 6), True, "float16", ("float16", "flash_attention_2")),  # asked on an RTX 3090
    ((9, 0), True, "float32", ("float32", "sdpa")),  # flash-attention has no float32 kernels
])
def test_auto_dtype_and_attention_follow_the_gpus_capability(monkeypatch, capability, flash, dtype, chosen):
    gpus(monkeypatch, True, flash=flash, capability=capability)
    placed = place(dtype=dtype)
    assert (placed.dtype, placed.attention) == chosen


def test_a_flash_attn_that_is_found_but_fails_to_import_is_not_chosen(monkeypatch, tmp_path):
    """A flash_attn built for another torch is found on the path and fails at import (an
    undefined symbol): sdpa, rather than a model that fails at its first forward."""
    gpus(monkeypatch, True)
    (tmp_path / "flash_attn").mkdir()
    (tmp_path / "flash_attn" / "__init__.py").write_text("raise OSError('undefined symbol: _ZN3c10')\n")
    monkeypatch.delitem(sys.modules, "flash_attn")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert place().attention == "sdpa"
    assert "flash_attn" not in sys.modules or sys.modules["flash_attn"] is None


def test_a_gpu_asked_for_where_torch_sees_none_and_unknown_values_are_one_line(monkeypatch):
    gpus(monkeypatch, False)
    with pytest.raises(ValueError, match=r"^model-arg device=cuda:1, but torch sees no GPU on this machine"):
        place(device="cuda:1")
    with pytest.raises(ValueError, match=r"^model-arg dtype must be one of auto, float32, bfloat16, float16, not "
                                         r"'bf16'$"):
        place(dtype="bf16")
    with pytest.raises(ValueError, match=r"^model-arg attention must be one of auto, sdpa, eager"):
        place(attention="flash")


@pytest.mark.parametrize("device, said", [
    ("meta", r"^model-arg device must be cpu, cuda, cuda:N or mps, not 'meta'$"),
    ("bogus", r"^model-arg device must be cpu, cuda, cuda:N or mps, not 'bogus'$"),
    ("cuda:x", r"^model-arg device must be cpu, cuda, cuda:N or mps, not 'cuda:x'$"),
    ("CPU", r"^model-arg device must be cpu, cuda, cuda:N or mps, not 'CPU'$"),
    ("cuda:2", r"^model-arg device=cuda:2, but torch sees 2 GPUs on this machine \(cuda:0 to cuda:1\)$"),
])
def test_a_device_torch_cannot_run_on_is_one_line(monkeypatch, device, said):
    gpus(monkeypatch, True, count=2)
    with pytest.raises(ValueError, match=said):
        place(device=device)
    assert place(device="cuda:1") == Placement("cuda:1", "cuda:1", "bfloat16", "sdpa")
    assert place(device="cuda").device_map == "cuda"


def test_mps_only_where_torch_has_it(monkeypatch):
    gpus(monkeypatch, False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    with pytest.raises(ValueError, match=r"^model-arg device=mps, but this torch has no Apple GPU \(MPS\) backend"):
        place(device="mps")
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    assert place(device="mps") == Placement("mps", None, "float32", None)


def test_float16_is_said_when_asked_and_in_what_the_run_ran_on(monkeypatch, capsys):
    """auto never picks float16; asked for, it is said on stderr, and a model in it (asked for,
    or handed over) carries a note to run.json."""
    gpus(monkeypatch, True, capability=(7, 5))
    assert place().dtype == "float32" and capsys.readouterr().err == ""
    assert place(dtype="float16").dtype == "float16"
    assert capsys.readouterr().err == f"timefoil: {FLOAT16_NOTE}\n"
    model = torch.nn.Linear(2, 2)
    assert "dtype_note" not in ran_on(model, "cpu")
    said = ran_on(model.half(), "cuda:0")
    assert said["dtype"] == "float16" and said["dtype_note"] == FLOAT16_NOTE


def test_an_hf_model_on_a_gpu_machine_is_loaded_onto_the_gpu_in_bfloat16(tmp_path, monkeypatch):
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
    assert (asked["dtype"], asked["device_map"], asked["attn_implementation"]) == (torch.bfloat16, "cuda:0", "sdpa")


def test_a_cpu_run_says_where_it_ran_in_run_json_the_terminal_and_the_page(suite, tmp_path):
    folder = tiny_llama(tmp_path / "lm", ["yes no"])
    config = RunConfig("synth", f"hf:{folder}", data_dir=suite, protocol="entailment", blind=True,
                       sampling=Sampling(frames=1))
    run(config, str(tmp_path / "run"), cache_dir=str(tmp_path / "cache"), progress=False)
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["model_notes"]["ran_on"] == {"device": "cpu", "dtype": "float32", "attention": "sdpa",
                                             "forward": "eager"}  # compile=auto compiles on a CUDA GPU only
    assert meta["model_fingerprint"]["dtype"] == "float32"  # "auto" on the CPU: the answers cached before
    scored = load_scored(str(tmp_path / "run"))
    assert "  ran on cpu · float32 · sdpa · eager" in failure_lines(scored)
    page = open(write_html([str(tmp_path / "run")], str(tmp_path / "report.html"), thumbnails=False)).read()
    assert page.count("ran on cpu · float32 · sdpa · eager") == 2  # the list of runs, and the table's counts


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


def test_out_of_memory_at_load_is_one_line_naming_the_settings(tmp_path, monkeypatch):
    """A checkpoint that does not fit: the settings that decided its size and what asks less, in
    one line (it was "unexpected OutOfMemoryError"), the half-loaded weights let go first."""
    from timefoil.cli.common import Failure, guard

    folder = tiny_llama(tmp_path / "lm", ["yes no"])
    gpus(monkeypatch, True)
    emptied, loaded = [], []
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: emptied.append(loaded[0]() is None))

    class Weights:
        pass

    class TooBig:
        @classmethod
        def from_pretrained(cls, path, **kwargs):
            half = Weights()  # what was loaded before the GPU ran out
            loaded.append(weakref.ref(half))
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 1.02 GiB. GPU 0 has a total "
                                         "capacity of 79.19 GiB of which 512.00 MiB is free.")

    monkeypatch.setattr(hf_loading, "model_class_of", lambda config: TooBig)
    with pytest.raises(Failure) as caught:
        guard(HFGenerative)(folder)
    assert caught.value.message == (
        f"{folder}: out of memory loading its weights (device=cuda:0, device_map=cuda:0, dtype=bfloat16); try "
        "device_map=auto (the layers spread over every GPU torch sees) or a GPU with more free memory")
    assert emptied == [True]  # the cache emptied once, after the half-loaded weights were freed
    with pytest.raises(Failure) as caught:
        guard(HFGenerative)(folder, device_map="auto", dtype="float32")
    assert caught.value.message == (
        f"{folder}: out of memory loading its weights (device=cuda:0, device_map=auto, dtype=float32); try "
        "dtype=bfloat16 (half the memory) or a GPU with more free memory")


def test_out_of_memory_moving_a_contrastive_model_is_one_line(monkeypatch):
    """Contrastive models load on the host and move: no room on the device is one line, with no
    device_map to suggest (they take none)."""
    from timefoil.models.local.contrastive import Contrastive

    gpus(monkeypatch, True)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)

    class TooBig:
        def eval(self):
            return self

        def to(self, device):
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 4.00 GiB")

    with pytest.raises(ValueError) as caught:
        Contrastive("/models/siglip2-giant", model=TooBig(), processor=None)
    assert str(caught.value) == ("/models/siglip2-giant: out of memory moving its weights to the device "
                                 "(device=cuda:0, device_map=none, dtype=bfloat16); try a GPU with more free memory")


def test_a_model_spread_by_a_device_map_says_where_its_layers_went():
    """Read from transformers' hf_device_map; a model over two GPUs is not told to spread itself."""
    from timefoil.models.local.placement import out_of_memory

    model = torch.nn.Linear(2, 2)
    model.hf_device_map = {"model.embed_tokens": 0, "model.layers.0": 0, "model.layers.27": 1, "lm_head": 1}
    said = ran_on(model, "cuda:0")
    assert said["device_map"] == "cuda:0+cuda:1"
    assert out_of_memory("in a batch of 8", device=said["device"], device_map=said["device_map"], dtype="bfloat16",
                         batch_size=8) == ("out of memory in a batch of 8 (device=cuda:0, device_map=cuda:0+cuda:1, "
                                           "dtype=bfloat16, batch_size=8); try a smaller batch_size or a GPU with "
                                           "more free memory")
    model.hf_device_map = {"": "cuda:0"}  # device_map="cuda:0": the whole model on one GPU
    assert ran_on(model, "cuda:0")["device_map"] == "cuda:0"
    assert "device_map" not in ran_on(torch.nn.Linear(2, 2), "cpu")
