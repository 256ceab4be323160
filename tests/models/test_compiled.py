"""Suffix chunks and decoding steps run compiled (``compile=on``; on a CUDA GPU ``auto``) answer
as the model's own forward does: p(yes) and caption log-likelihoods within 1e-4 in float32,
greedy texts equal, with reads-only chunks padded to bucketed shapes; a compile that fails is
one line and the model's own forward answers."""
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from timefoil.core.items import VideoRef  # noqa: E402
from timefoil.models.local import compiled  # noqa: E402
from timefoil.models.local.hf_generative import HFGenerative  # noqa: E402
from timefoil.models.local.hf_inputs import frames_of  # noqa: E402
from timefoil.models.requests import Request  # noqa: E402
from timefoil.protocols import Prompts  # noqa: E402
from timefoil.testing import pattern_frames, tiny_llama, tiny_vlm  # noqa: E402

PROMPTS = Prompts()
# five captions of unequal lengths: a chunk of 5 rows is padded to 6, its width to a power of two
CAPTIONS = ["a man opens the door", "a man closes the door slowly", "two birds fly",
            "the dog runs after the ball", "a woman opens the red door quickly again"]
REF = VideoRef.file("/nonexistent/clip.mp4")
CLIP = frames_of(pattern_frames(6, 48, 64), rate=1.5)


def source(ref, sampling):
    return CLIP


def requests(video: VideoRef | None) -> dict[str, list[Request]]:
    pairs = [(CAPTIONS[0], CAPTIONS[1]), (CAPTIONS[1], CAPTIONS[0]), (CAPTIONS[2], CAPTIONS[4])]
    return {"entailment": [Request("entailment", video, PROMPTS.entailment.format(caption=c), caption=c)
                           for c in CAPTIONS],
            "similarity": [Request("similarity", video, c, caption=c) for c in CAPTIONS],
            "choice": [Request("choice", video, PROMPTS.choice.format(options=f"A. {a}\nB. {b}"), labels=("A", "B"),
                               option_texts=(a, b), max_tokens=8) for a, b in pairs],
            "generation": [Request("generation", video, "Describe the video", max_tokens=6),
                           Request("generation", video, "What happens first in the video and then", max_tokens=5)]}


def answered(model: HFGenerative, video: VideoRef | None, kinds=("entailment", "similarity", "choice", "generation")):
    asked = requests(video)
    answers = {}
    for kind in kinds:
        got = getattr(model, f"answer_{kind}")(asked[kind], source)
        assert all(a.error is None for a in got), kind
        answers[kind] = got
    return answers


def assert_equal(eager: dict, ours: dict) -> None:
    for kind in eager:
        for a, b in zip(eager[kind], ours[kind]):
            if kind == "entailment":
                assert abs(a.probs["yes"] - b.probs["yes"]) <= 1e-4 and abs(a.probs["no"] - b.probs["no"]) <= 1e-4
            elif kind == "similarity":  # the caption's mean token log-probability
                assert abs(a.score - b.score) <= 1e-4
            else:
                assert a.raw == b.raw and a.meta["stopped"] == b.meta["stopped"], kind
                assert all(abs(a.probs[k] - b.probs[k]) <= 1e-4 for k in a.probs or {})


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    words = [PROMPTS.entailment, PROMPTS.choice, "Yes No A B", "Describe the video",
             "What happens first in the video and then"] + CAPTIONS
    return {"qwen2_vl": tiny_vlm(tmp_path_factory.mktemp("qwen2_vl"), "qwen2_vl", words),
            "text": tiny_llama(tmp_path_factory.mktemp("text"), words, layers=1)}


def test_buckets_are_worked_out_by_hand():
    assert [compiled.row_bucket(n) for n in range(1, 14)] == [1, 2, 3, 4, 6, 6, 8, 8, 12, 12, 12, 12, 16]
    assert [compiled.width_bucket(n) for n in (1, 8, 9, 16, 17, 40)] == [8, 8, 16, 16, 32, 64]
    ids = torch.tensor([[5, 6, 7], [8, 9, 0]])
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 1, 0]])  # 2 prefix tokens, then the suffixes
    where = torch.tensor([[[4, 5, 6], [4, 5, 0]]] * 3)  # 3-D positions: [3, rows, width]
    inputs = {"input_ids": ids, "attention_mask": mask, "position_ids": where,
              "cache_position": torch.tensor([2, 3, 4]), "logits_to_keep": torch.tensor([1, 2])}
    padded, reads = compiled.bucketed(inputs, rows=2)
    assert reads == 2 and padded["input_ids"].shape == (2, 8) and padded["attention_mask"].shape == (2, 10)
    assert padded["position_ids"].shape == (3, 2, 8)
    assert padded["attention_mask"][:, 5:].sum() == 0 and padded["input_ids"][:, 3:].sum() == 0  # pads masked
    assert padded["cache_position"].tolist() == list(range(2, 10))
    assert padded["logits_to_keep"].tolist() == [1, 2, 2, 2, 2, 2, 2, 2]
    three, _ = compiled.bucketed({**inputs, "input_ids": torch.cat([ids, ids[:1]]),
                                  "attention_mask": torch.cat([mask, mask[:1]]),
                                  "position_ids": torch.cat([where, where[:, :1]], dim=1)}, rows=3)
    assert three["input_ids"].shape == (3, 8)  # 3 is a bucket of its own
    five, _ = compiled.bucketed({**inputs, "input_ids": ids.repeat(3, 1)[:5], "attention_mask": mask.repeat(3, 1)[:5],
                                 "position_ids": where.repeat(1, 3, 1)[:, :5]}, rows=5)
    # the extra row repeats the last (rows 0, 2, 4 are alike here, so the first too)
    assert five["input_ids"].shape == (6, 8) and torch.equal(five["input_ids"][5], five["input_ids"][4])
    assert torch.equal(five["position_ids"][:, 5], five["position_ids"][:, 4])


@pytest.mark.parametrize("family", ["qwen2_vl", "text"])
def test_compiled_suffixes_and_decoding_steps_answer_as_the_models_own_forward(folders, family, monkeypatch):
    """Through dynamo's capture (the eager backend, where inductor would compile for a minute a
    model): every suffix chunk and decoding step went through torch.compile, reads-only chunks
    padded (5 rows to 6), and the answers are the model's own forward's."""
    torch.set_num_threads(1)
    monkeypatch.setattr(compiled, "BACKEND", "eager")
    video = REF if family == "qwen2_vl" else None
    eager = HFGenerative(folders[family], batch_size=8, compile="off")
    expected = answered(eager, video)
    assert eager.forwards.counts == {"graphed": 0, "compiled": 0, "eager": eager.forwards.counts["eager"]}
    shapes = []
    bucketed = compiled.bucketed

    def seen(inputs, rows):
        padded, reads = bucketed(inputs, rows)
        shapes.append((rows, tuple(padded["input_ids"].shape)))
        return padded, reads

    monkeypatch.setattr(compiled, "bucketed", seen)
    model = HFGenerative(folders[family], batch_size=8, compile="on")
    assert_equal(expected, answered(model, video))
    assert model.forwards.counts["eager"] == 0 and model.forwards.counts["compiled"] >= 4
    assert set(model.forwards.first_compile_s) == {"suffix", "step"}
    # reads-only chunks, 5 rows to 6: entailment's suffixes (caption and question) to 32 tokens,
    # similarity's (the caption) to 16; choice and generation rows go on to generate, unpadded
    assert shapes == [(5, (6, 32)), (5, (6, 16))]
    # decoding steps compile for a few shapes (dynamic from the start), not one a step
    graphs, calls = dict(model.forwards.graphs_compiled), dict(model.forwards.calls)
    assert graphs["step"] <= 3 and calls["step"] >= 10, (graphs, calls)
    # six captions, of widths within the same bucket: the entailment chunk's graph again, none made
    six = [Request("entailment", video, PROMPTS.entailment.format(caption=c), caption=c)
           for c in CAPTIONS + ["two dogs run"]]
    plain, ours = eager.answer_entailment(six, source), model.answer_entailment(six, source)
    assert all(abs(a.probs["yes"] - b.probs["yes"]) <= 1e-4 for a, b in zip(plain, ours))
    assert shapes[-1] == (6, (6, 32)) and model.forwards.calls["suffix"] == calls["suffix"] + 1
    assert model.forwards.graphs_compiled["suffix"] == graphs["suffix"]
    assert model.notes["ran_on"]["forward"] == "torch.compile" and "compile_failed" not in model.notes["ran_on"]


def test_the_production_compile_inductor_on_a_text_model(folders, capsys):
    """What compile=on runs (inductor, the C++ kernels it writes on a CPU): p(yes) within 1e-4 of
    the model's own forward, and the first compile said in one line with its time."""
    torch.set_num_threads(1)
    assert compiled.BACKEND == "inductor"
    expected = answered(HFGenerative(folders["text"], batch_size=8, compile="off"), None, ("entailment",))
    model = HFGenerative(folders["text"], batch_size=8, compile="on")
    assert_equal(expected, answered(model, None, ("entailment",)))
    said = [line for line in capsys.readouterr().err.splitlines() if "compiled in" in line]
    assert len(said) == 1 and said[0].startswith("timefoil: suffix forward compiled in ")
    assert float(said[0].split("compiled in ")[1].split(" s")[0]) == pytest.approx(
        model.forwards.first_compile_s["suffix"], abs=0.06)
    assert model.forwards.counts == {"graphed": 0, "compiled": 1, "eager": 0}


def test_a_compile_that_fails_is_one_line_and_the_models_own_forward_answers(folders, monkeypatch, capsys):
    def broken(function, **options):
        def run(*args, **kwargs):
            raise RuntimeError("no C++ compiler found\nsecond line")
        return run

    monkeypatch.setattr(torch, "compile", broken)
    expected = answered(HFGenerative(folders["text"], batch_size=8, compile="off"), None)
    model = HFGenerative(folders["text"], batch_size=8, compile="on")
    assert_equal(expected, answered(model, None))
    said = [line for line in capsys.readouterr().err.splitlines() if "torch.compile" in line]
    assert said == ["timefoil: torch.compile failed (RuntimeError: no C++ compiler found second line); the model's "
                    "own forward runs instead"]
    assert model.forwards.counts["compiled"] == 0 and model.forwards.counts["eager"] > 0
    assert model.notes["ran_on"]["forward"] == "eager"
    assert model.notes["ran_on"]["compile_failed"] == "RuntimeError: no C++ compiler found second line"


def test_compile_is_on_for_a_cuda_gpu_by_default_and_refused_when_unknown(folders):
    assert compiled.compile_wanted("auto", "cuda:0") and not compiled.compile_wanted("auto", "cpu")
    assert compiled.compile_wanted("on", "cpu") and not compiled.compile_wanted("off", "cuda:0")
    assert not compiled.compile_wanted("auto", "cuda:0", spread=True)  # a device_map over several GPUs
    assert compiled.compile_wanted("on", "cuda:0", spread=True)
    assert not HFGenerative(folders["text"]).forwards.on  # on this CPU
    with pytest.raises(ValueError, match="model-arg compile must be one of auto, on, off, not 'yes'"):
        HFGenerative(folders["text"], compile="yes")


def test_a_compiled_run_says_so_in_run_json_and_the_reports_ran_on_line(suite, tmp_path, monkeypatch, capsys):
    """``--model-arg compile=on`` through the runner: run.json's ran_on names torch.compile, the
    report's "ran on" line ends with it, and the answers are those of a run with compile=off."""
    import json

    from timefoil import RunConfig, run
    from timefoil.reports.report import failure_lines, load_scored
    from timefoil.video.sampling import Sampling

    monkeypatch.setattr(compiled, "BACKEND", "eager")
    folder = tiny_llama(tmp_path / "lm", ["yes no Yes No", PROMPTS.entailment], layers=1)
    answers = {}
    for setting in ("off", "on"):
        config = RunConfig("synth", f"hf:{folder}", data_dir=suite, protocol="entailment", blind=True,
                           sampling=Sampling(frames=1), model_args={"compile": setting})
        run(config, str(tmp_path / setting), cache_dir=str(tmp_path / f"cache-{setting}"), progress=False)
        answers[setting] = {record["id"]: record["answer"]["probs"]["yes"]
                            for record in map(json.loads, open(tmp_path / setting / "items.jsonl"))}
    meta = json.loads((tmp_path / "on" / "run.json").read_text())
    assert meta["model_notes"]["ran_on"]["forward"] == "torch.compile"
    assert "  ran on cpu · float32 · sdpa · torch.compile" in failure_lines(load_scored(str(tmp_path / "on")))
    assert answers["on"].keys() == answers["off"].keys() and answers["on"]
    assert max(abs(answers["on"][k] - answers["off"][k]) for k in answers["off"]) <= 1e-4
    assert "timefoil: suffix forward compiled in " in capsys.readouterr().err


def test_inductors_tf32_advice_never_reaches_the_terminal(folders, monkeypatch):
    """On an Ampere or newer GPU inductor warns, once, that float32 matrix products could use TF32:
    the float32 output projection is deliberate (TF32 would move p(yes)), so the advice is not shown."""
    import warnings

    def advising(function, **options):
        def run(*args, **kwargs):
            warnings.warn("TensorFloat32 tensor cores for float32 matrix multiplication available but not enabled.")
            warnings.warn("another warning")
            return function(*args, **kwargs)
        return run

    monkeypatch.setattr(torch, "compile", advising)
    model = HFGenerative(folders["text"], batch_size=8, compile="on")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        answered(model, None, ("entailment",))
    assert [str(w.message) for w in caught] == ["another warning"]


def test_several_videos_joined_in_one_compiled_chunk_answer_as_the_models_own_forward(folders, monkeypatch):
    """Three videos of 6, 4 and 2 frames (prefixes of three lengths) with three captions each: their
    nine rows run in one suffix forward over the joined prefix caches, padded to 12 rows (copies of
    the last video's last row, on that video's cache rows), and each answer equals the model's own
    forward's."""
    torch.set_num_threads(1)
    monkeypatch.setattr(compiled, "BACKEND", "eager")
    clips = {f"/nonexistent/clip{n}.mp4": frames_of(pattern_frames(n, 48, 64), rate=1.5) for n in (6, 4, 2)}
    asked = [Request("entailment", VideoRef.file(path), PROMPTS.entailment.format(caption=c), caption=c)
             for path in clips for c in CAPTIONS[:3]]

    def several(ref, sampling):
        return clips[ref.path]

    eager = HFGenerative(folders["qwen2_vl"], compile="off")
    model = HFGenerative(folders["qwen2_vl"], compile="on")
    shapes = []
    bucketed = compiled.bucketed

    def seen(inputs, rows):
        padded, reads = bucketed(inputs, rows)
        shapes.append((rows, padded["input_ids"].shape[0]))
        return padded, reads

    monkeypatch.setattr(compiled, "bucketed", seen)
    plain, ours = eager.answer_entailment(asked, several), model.answer_entailment(asked, several)
    assert shapes == [(9, 12)] and model.stats["suffix_forwards"] == 1 and model.stats["prefix_forwards"] == 3
    assert all(a.error is None and b.error is None for a, b in zip(plain, ours))
    assert max(abs(a.probs["yes"] - b.probs["yes"]) for a, b in zip(plain, ours)) <= 1e-4
    assert max(abs(a.probs["no"] - b.probs["no"]) for a, b in zip(plain, ours)) <= 1e-4
