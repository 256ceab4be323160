"""Rows of different videos share decode steps (``decode_batching``, on by default): every
answer equals the one decoded video by video, and the one ``model.generate()`` gives on its
prompt alone, while the number of decode steps falls from the sum of each video's longest
answer to the longest answer of the call. Caches that left padding would shift (Gemma 3's
sliding-window layers) decode video by video, and the model's notes say so."""
import functools

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from timefoil.core.items import VideoRef  # noqa: E402
from timefoil.models.local.decoding import unpaddable  # noqa: E402
from timefoil.models.local.hf_generative import HFGenerative  # noqa: E402
from timefoil.models.local.hf_inputs import frames_of  # noqa: E402
from timefoil.models.requests import Request  # noqa: E402
from timefoil.protocols import Prompts  # noqa: E402
from timefoil.testing import pattern_frames, tiny_vlm  # noqa: E402

PROMPTS = Prompts()
CAPTIONS = ["a man opens the door", "a man closes the door slowly", "two birds fly", "the dog runs after the ball"]
CLIPS = {f"/videos/{v}.mp4": frames_of(np.roll(pattern_frames(8, 60, 80), 9 * v, axis=2), rate=0.8) for v in range(4)}
# seeds whose tiny models write answers of more than one token (seed 0 of qwen2_vl stops at once)
SHARPEN = 6.0
SEEDS = {"qwen2_vl": 2, "llava_onevision": 1, "gemma3": 0}


def sharp(model: HFGenerative) -> HFGenerative:
    """Queries and keys scaled up: a tiny random model's attention is near uniform and its
    answers hardly depend on positions; sharpened, a row at a wrong position answers otherwise."""
    with torch.no_grad():
        for name, module in model.model.named_modules():
            if name.endswith(("q_proj", "k_proj")) and "language_model" in name:
                module.weight *= SHARPEN
    return model


def source(ref, sampling):
    return CLIPS[ref.path]


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    words = [PROMPTS.choice, "What happens first in the video and then"] + CAPTIONS
    return {f: tiny_vlm(tmp_path_factory.mktemp(f), f, words, seed=seed) for f, seed in SEEDS.items()}


def asked(kind: str) -> list[Request]:
    """Three videos with two or three questions each: prompts of different lengths, budgets of
    1, 3 and 16 tokens; choices end at their first line, generations do not."""
    out = []
    for v, budgets in enumerate([(1, 16), (3, 16, 1), (16, 3)]):
        ref = VideoRef.file(f"/videos/{v}.mp4")
        for k, budget in enumerate(budgets):
            if kind == "generation":
                out.append(Request("generation", ref, " ".join(CAPTIONS[:(v + k) % 4 + 1]), max_tokens=budget))
            else:
                a, b = CAPTIONS[(v + k) % 4], CAPTIONS[(v + 2 * k + 1) % 4]
                out.append(Request("choice", ref, PROMPTS.choice.format(options=f"A. {a}\nB. {b}"), labels=("A", "B"),
                                   option_texts=(a, b), max_tokens=budget))
    return out


def counted(model: HFGenerative) -> list:
    """Every forward of ``model``: "prefill" for one over a prompt (or a suffix), else the rows
    of a decode step (one token each)."""
    calls: list = []
    forward = model.model.forward

    @functools.wraps(forward)  # generate() reads the forward's parameters
    def recorded(*args, **kwargs):
        ids = kwargs["input_ids"]
        calls.append(ids.shape[0] if ids.shape[1] == 1 else "prefill")
        return forward(*args, **kwargs)

    model.model.forward = recorded
    return calls


def said(answers) -> list[tuple]:
    return [(a.raw, a.meta["stopped"], a.meta["new_tokens"]) for a in answers]


def fed(answer) -> int:
    """Tokens a row is fed after its prompt: one per generated token but the last, which is fed
    only where the row goes on to end with the end of sequence."""
    return answer.meta["new_tokens"] - (answer.meta["stopped"] != "eos")


def alone(model: HFGenerative, request: Request) -> str:
    """generate() on the one prompt, greedy, to its budget; a choice read to its first line."""
    clip = source(request.video, request.sampling)
    batch = model._encode([model._prompt(request, clip)[0]], [clip])
    output = model.model.generate(**batch, max_new_tokens=request.max_tokens, do_sample=False,
                                  pad_token_id=model.tokenizer.pad_token_id)
    text = model.tokenizer.decode(output[0, batch["input_ids"].shape[1]:], skip_special_tokens=True).lstrip()
    if request.kind == "choice" and "\n" in text:
        text = text[:text.index("\n")]
    return text.strip()


@pytest.mark.parametrize("family", list(SEEDS))
def test_rows_of_different_videos_share_decode_steps_and_answer_as_video_by_video(folders, family):
    torch.set_num_threads(1)
    shared, apart = sharp(HFGenerative(folders[family])), sharp(HFGenerative(folders[family], decode_batching=False))
    shared_calls, apart_calls = counted(shared), counted(apart)
    for kind in ("generation", "choice"):
        requests = asked(kind)
        del shared_calls[:], apart_calls[:]
        ours, theirs = shared.answer(requests, source), apart.answer(requests, source)
        assert said(ours) == said(theirs), (family, kind)
        assert {n for _, _, n in said(ours)} != {1}, "answers of one token would prove nothing"
        for a, b in zip(ours, theirs):  # the first step comes from the prefill: untouched
            assert a.probs == b.probs
        assert shared_calls.count("prefill") == apart_calls.count("prefill")
        steps, steps_apart = [c for c in shared_calls if c != "prefill"], [c for c in apart_calls if c != "prefill"]
        assert sum(steps) == sum(steps_apart) == sum(fed(a) for a in ours)  # every row fed the same tokens
        if family == "gemma3":  # sliding-window layers: video by video, as asked
            assert steps == steps_apart
            continue
        # three groups, all admitted before the first step (9 rows at most, below 32): the steps
        # are the call's longest answer, against the sum of each video's longest
        videos = {r.video.path: [] for r in requests}
        for r, a in zip(requests, ours):
            videos[r.video.path].append(fed(a))
        assert len(steps) == max(fed(a) for a in ours)
        assert len(steps_apart) == sum(max(rows) for rows in videos.values())
        assert len(steps) < len(steps_apart)
        assert max(steps) > max(len(rows) for rows in videos.values())  # rows of several videos in one step
    for request, answer in list(zip(requests, ours))[1::3]:  # a sample, against generate() alone
        assert answer.raw == alone(shared, request), (family, request.text)
    if family == "gemma3":
        assert "DynamicSlidingWindowLayer" in shared.notes["decode_batching"]
    else:
        assert "decode_batching" not in shared.notes


def test_a_long_answer_does_not_hold_the_next_videos(folders):
    """One question per video, budgets 16, 3, 3, 1, at most two rows before the next video is
    admitted. Worked by hand, every answer running to its budget (15, 2, 2 and 0 tokens fed):
    video 0 and 1 prefill; two steps of both, one of video 0 once video 1 has its three tokens;
    video 2 prefills and joins the same way; video 3 prefills, takes its one token from its
    prefill in the next step, beside video 0, which then runs alone to its sixteenth token."""
    torch.set_num_threads(1)
    path = folders["llava_onevision"]
    requests = [Request("generation", VideoRef.file(f"/videos/{v}.mp4"), " ".join(CAPTIONS[:v + 1]), max_tokens=budget)
                for v, budget in enumerate((16, 3, 3, 1))]
    model = HFGenerative(path, decode_rows=2)
    calls = counted(model)
    answers = model.answer(requests, source)
    assert said(answers) == said(HFGenerative(path, decode_batching=False).answer(requests, source))
    assert [(a.meta["stopped"], a.meta["new_tokens"]) for a in answers] == [
        ("max_tokens", 16), ("max_tokens", 3), ("max_tokens", 3), ("max_tokens", 1)]
    P = "prefill"
    assert calls == [P, P, 2, 2, 1, P, 2, 2, 1, P] + [1] * 9
    assert answers[0].raw == alone(model, requests[0])
    assert all(a.latency > 0 for a in answers)


def test_caches_that_left_padding_would_shift_are_named(folders):
    torch.set_num_threads(1)
    for family, layer in (("gemma3", "DynamicSlidingWindowLayer"), ("qwen2_vl", None)):
        model = HFGenerative(folders[family])
        batch = model._encode([model._prompt(asked("generation")[0], CLIPS["/videos/0.mp4"])[0]],
                              [CLIPS["/videos/0.mp4"]])
        with torch.inference_mode():
            cache = model.model(**batch, use_cache=True).past_key_values
        why = unpaddable(cache, sliding_window=False)
        assert (why is None) if layer is None else (layer in why), (family, why)
    assert "sliding window" in unpaddable(cache, sliding_window=True)
