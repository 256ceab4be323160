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

from helpers import generated_alone  # noqa: E402
from timefoil.core.items import VideoRef  # noqa: E402
from timefoil.models.local.decoding import unpaddable  # noqa: E402
from timefoil.models.local.greedy import Continuation  # noqa: E402
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
    return generated_alone(model, request, source(request.video, request.sampling))


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
        # three prefixes each; the suffixes of the three videos in one forward where their decode
        # steps are shared too, else a video's in one (on Gemma 3's sliding-window layers video by
        # video in both, one forward a suffix length)
        if family == "gemma3":
            assert shared_calls.count("prefill") == apart_calls.count("prefill")
        else:
            assert (shared_calls.count("prefill"), apart_calls.count("prefill")) == (4, 6)
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


class ByRowCache(torch.nn.Module):
    """A model that answers from its KV cache: each row's cached keys all hold the row's id
    (nonzero; masked slots must hold the padding's zeros), its logits put all mass on that id's
    scripted token at the step its own position gives, and the token it is fed is cached under
    the same id. A row that read another's slots, a pad, or a wrong position would answer
    otherwise, and a slot the mask and the cache disagree on raises."""

    def __init__(self, scripts: dict[int, list[int]], starts: dict[int, int], vocabulary: int):
        super().__init__()
        self.scripts, self.starts, self.vocabulary = scripts, starts, vocabulary
        self.steps: list[tuple[int, int]] = []  # (rows, attended slots) of each forward

    def first(self, ids):
        """The logits of each row's first answer token, as its prefill gives them."""
        return self.logits(ids, [0] * len(ids))

    def logits(self, ids, steps):
        logits = torch.full((len(ids), self.vocabulary), -1e4)
        for b, (row, step) in enumerate(zip(ids, steps)):
            logits[b, self.scripts[row][min(step, len(self.scripts[row]) - 1)]] = 0
        return logits

    def forward(self, input_ids, attention_mask, position_ids, use_cache, cache_position, cache):
        keys = cache.layers[0].keys[:, 0, :, 0]
        assert attention_mask.shape[1] == keys.shape[1] + 1 and int(cache_position) == keys.shape[1]
        assert torch.equal(position_ids[1] - position_ids[0], torch.full_like(position_ids[0], 100))  # 3-D kept
        ids = []
        for b in range(len(input_ids)):
            seen = keys[b][attention_mask[b, :-1] == 1]
            assert len(seen) and bool((seen == seen[0]).all()) and not keys[b][attention_mask[b, :-1] == 0].any()
            ids.append(int(seen[0]))
        self.steps.append((len(ids), attention_mask.shape[1]))
        new = torch.tensor(ids, dtype=torch.float)[:, None, None, None]
        cache.update(new, new, 0)
        steps = [int(position_ids[0, b, 0]) - self.starts[row] + 1 for b, row in enumerate(ids)]
        return type("Output", (), {"logits": self.logits(ids, steps)[:, None], "cache": cache})()


def test_the_queue_joins_rows_at_their_own_slots_and_positions_and_stops_each_as_alone():
    """Three groups, two rows at most before the next joins. Worked by hand from the scripts:
    row 1 ends its first line at its second token, row 2 runs to its budget of 4, row 3 meets
    the end of sequence after two, row 4 runs to its budget of 3, row 5 to its budget of 1.
    Steps (rows, attended slots incl. the fed token): group 1 (prompts 5 and 3 long) 2 rows x 6,
    then row 2 alone x 7 (and its two leading pads are dropped); group 2 (7 long) joins: 2 x 8,
    then row 3 alone x 9; group 3 (2 and 4 long) joins at 9 slots and rows 3 and 5 stop at once:
    row 4 alone x 10, then, its 7 leading pads dropped, x 4; its third token ends it."""
    from tokenizers import AddedToken
    from transformers.cache_utils import DynamicCache

    from timefoil.models.local.decoding import DecodeQueue
    from timefoil.testing import word_tokenizer

    tokenizer = word_tokenizer(["yes the answer is B"])
    tokenizer.add_tokens([AddedToken("\n", normalized=False)])
    word, eos = tokenizer.convert_tokens_to_ids, tokenizer.eos_token_id
    newline = tokenizer.encode("\n", add_special_tokens=False)[0]
    scripts = {1: [word("B"), newline, word("yes")],
               2: [word("the"), word("answer"), word("is"), word("B"), word("yes")],
               3: [word("yes"), word("the"), eos], 4: [word("yes")] * 5, 5: [word("answer")] * 2}
    lengths = {1: 5, 2: 3, 3: 7, 4: 2, 5: 4}
    starts = {row: 40 * row + length for row, length in lengths.items()}  # each row's first answer position
    model = ByRowCache(scripts, starts, len(tokenizer))

    def group(rows: list[int]):
        width = max(lengths[r] for r in rows)
        mask = torch.zeros(len(rows), width, dtype=torch.long)
        keys = torch.zeros(len(rows), 1, width, 1)
        for b, r in enumerate(rows):  # left padded within the group, as its prefill pads
            mask[b, width - lengths[r]:] = 1
            keys[b, 0, width - lengths[r]:] = r
        at = torch.tensor([starts[r] for r in rows])
        return Continuation(model.first(rows), DynamicCache([(keys, keys.clone())]), mask,
                            torch.stack([at, at + 100, at + 200]))

    queue = DecodeQueue(model, tokenizer, rows=2, cache_bytes=1 << 30)
    said = [row for rows, budgets, lines in (([1, 2], [8, 4], [True, False]), ([3], [16], [False]),
                                             ([4, 5], [3, 1], [True, False]))
            for row in queue.admit(group(rows), budgets, lines)]
    queue.finish()
    assert queue.off is None
    assert [(tokenizer.decode(r.tokens, skip_special_tokens=True).strip(), r.why, len(r.tokens)) for r in said] == [
        ("B", "line", 2), ("the answer is B", "max_tokens", 4), ("yes the", "eos", 2), ("yes yes yes", "max_tokens", 3),
        ("answer", "max_tokens", 1)]
    assert model.steps == [(2, 6), (1, 7), (2, 8), (1, 9), (1, 10), (1, 4)]
    assert queue.fed == sum(rows for rows, _ in model.steps) == 1 + 3 + 2 + 2 + 0


def test_bounds_below_one_are_refused_in_one_line(folders):
    for name, value in (("decode_rows", 0), ("decode_cache_mib", -1)):
        with pytest.raises(ValueError, match=rf"^model-arg {name} must be a whole number of 1 or more, not {value}$"):
            HFGenerative(folders["qwen2_vl"], **{name: value})
