"""Answers generated on from the forward pass that read the first step: equal to the plain
path (one ``model.generate()`` per question on its own prompt) for every family, with the
video prefilled once, a choice stopped at the end of its first line, and finished rows out
of the batch."""
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from helpers import generated_alone  # noqa: E402
from timefoil.core.items import VideoRef  # noqa: E402
from timefoil.models.families import FAMILIES  # noqa: E402
from timefoil.models.local.greedy import Continuation, continue_greedy  # noqa: E402
from timefoil.models.local.hf_generative import HFGenerative  # noqa: E402
from timefoil.models.local.hf_inputs import frames_of  # noqa: E402
from timefoil.models.requests import Request  # noqa: E402
from timefoil.protocols import Prompts  # noqa: E402
from timefoil.testing import pattern_frames, tiny_vlm, word_tokenizer  # noqa: E402

PROMPTS = Prompts()
CAPTIONS = ["a man opens the door", "a man closes the door slowly", "two birds fly", "the dog runs after the ball"]
REF = VideoRef.file("/nonexistent/clip.mp4")
CLIP = frames_of(pattern_frames(8, 60, 80), rate=0.8)


def source(ref, sampling):
    return CLIP


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    words = [PROMPTS.entailment, PROMPTS.choice, "What happens first in the video and then"]
    return {f: tiny_vlm(tmp_path_factory.mktemp(f), f, words + CAPTIONS) for f in FAMILIES}


def choices() -> list[Request]:
    """Both orders of a pair and a third question of another length: suffixes of three lengths."""
    pairs = [(CAPTIONS[0], CAPTIONS[1]), (CAPTIONS[1], CAPTIONS[0]), (CAPTIONS[2], CAPTIONS[3] + " again and again")]
    return [Request("choice", REF, PROMPTS.choice.format(options=f"A. {a}\nB. {b}"), labels=("A", "B"),
                    option_texts=(a, b), max_tokens=12) for a, b in pairs]


def generations() -> list[Request]:
    return [Request("generation", REF, "Describe the video", max_tokens=10),
            Request("generation", REF, "What happens first in the video and then", max_tokens=7)]


def plain(model: HFGenerative, request: Request) -> str:
    return generated_alone(model, request, CLIP)


@pytest.mark.parametrize("family", FAMILIES)
def test_greedy_answers_and_first_step_probabilities_equal_the_plain_path(folders, family):
    torch.set_num_threads(1)
    for prefix_reuse in (True, False):
        model = HFGenerative(folders[family], prefix_reuse=prefix_reuse, batch_size=4)
        asked = choices() + generations()
        answers = model.answer(choices(), source) + model.answer(generations(), source)
        assert [a.raw for a in answers] == [plain(model, r) for r in asked], (family, prefix_reuse)
        assert all(a.meta["stopped"] in ("eos", "line", "max_tokens") for a in answers)
        assert all(a.meta["new_tokens"] <= r.max_tokens for a, r in zip(answers, asked))
        letters = HFGenerative(folders[family], prefix_reuse=prefix_reuse, choice_reading="letters")
        for a, b in zip(answers, letters.answer(choices(), source)):  # the same first-step distribution
            assert max(abs(a.probs[k] - b.probs[k]) for k in a.probs) <= 1e-5


def test_the_video_is_prefilled_once_and_one_token_answers_cost_what_letters_do(folders):
    """Forward tokens, counted by hand: the shared prefix once, each suffix once, and one fed
    token for each generated token after a row's first (which comes with its prompt)."""
    torch.set_num_threads(1)
    path = folders["qwen2_vl"]
    asked = choices()
    letters = HFGenerative(path, choice_reading="letters")
    letters.answer(asked, source)
    short = [Request(r.kind, r.video, r.text, labels=r.labels, option_texts=r.option_texts, max_tokens=1)
             for r in asked]
    one = HFGenerative(path)
    assert [a.meta["new_tokens"] for a in one.answer(short, source)] == [1, 1, 1]
    assert one.stats["forward_tokens"] == letters.stats["forward_tokens"]
    full = HFGenerative(path)
    answers = full.answer(asked, source)
    fed = sum(a.meta["new_tokens"] - (a.meta["stopped"] != "eos") for a in answers)
    assert full.stats["forward_tokens"] == letters.stats["forward_tokens"] + fed
    sequences = [full.inputs.encode([full._prompt(r, CLIP)[0]], [CLIP])["input_ids"][0] for r in asked]
    shared = 0
    while len({int(s[shared]) for s in sequences}) == 1:
        shared += 1
    assert letters.stats["forward_tokens"] == shared + sum(len(s) - shared for s in sequences)


class Scripted(torch.nn.Module):
    """A model that says a fixed token sequence per row, whatever it is shown: the logits of
    step k put all mass on row r's k-th scripted token. It records each forward's batch size."""

    def __init__(self, scripts, vocabulary: int):
        super().__init__()
        self.scripts, self.vocabulary, self.batches = scripts, vocabulary, []

    def logits_for(self, rows, step):
        logits = torch.full((len(rows), 1, self.vocabulary), -1e4)
        for b, row in enumerate(rows):
            logits[b, 0, self.scripts[row][min(step, len(self.scripts[row]) - 1)]] = 0
        return logits

    def forward(self, input_ids, attention_mask, position_ids, use_cache, cache_position, cache):
        self.batches.append(input_ids.shape[0])
        cache.step += 1
        return type("Output", (), {"logits": self.logits_for(cache.rows, cache.step), "cache": cache})()


class RowCache:
    def __init__(self, rows):
        self.rows, self.step = list(rows), 0

    def batch_select_indices(self, keep):
        self.rows = [self.rows[int(i)] for i in keep]


def test_rows_stop_at_end_of_sequence_their_budget_or_their_first_line_and_leave_the_batch():
    from tokenizers import AddedToken

    tokenizer = word_tokenizer(["yes the answer is B"])
    tokenizer.add_tokens([AddedToken("\n", normalized=False)])  # a line break of its own, as real vocabularies have
    word = tokenizer.convert_tokens_to_ids
    newline = tokenizer.encode("\n", add_special_tokens=False)
    assert len(newline) == 1
    eos = tokenizer.eos_token_id
    scripts = [[word("B"), eos],  # ends at once
               [word("the"), word("answer"), word("is"), word("B"), word("yes"), word("yes")],  # runs to its budget
               [word("B"), *newline, word("yes"), word("yes")],  # a first line, then more
               [word("yes")] * 9]  # its budget of 3
    model = Scripted(scripts, len(tokenizer))
    state = Continuation(model.logits_for(range(4), 0)[:, 0], RowCache(range(4)), torch.ones(4, 5, dtype=torch.long),
                         torch.arange(4) + 5)
    said, fed = continue_greedy(model, tokenizer, state, [8, 4, 8, 3], [True, False, True, False])
    assert [why for _, why in said] == ["eos", "max_tokens", "line", "max_tokens"]
    assert [tokenizer.decode(tokens, skip_special_tokens=True).strip() for tokens, _ in said] == [
        "B", "the answer is B", "B", "yes yes yes"]
    assert model.batches == [4, 2, 1]  # rows leave as they finish: 0 and 2 after the second step, 3 after the third
    assert fed == sum(model.batches)


def test_a_hybrid_linear_attention_model_continues_each_row_from_its_own_state(folders):
    """Qwen3.5's gated delta layers fold every token a row is given into one state, pads after a
    shorter suffix included, and generation goes on from that state. Its tiny model's weights,
    scaled up so that its greedy tokens follow what it was shown, answer questions of three
    suffix lengths with prefix reuse exactly as generate() does on each prompt alone; rows that
    finish early leave the batch, their conv and recurrent states with them."""
    torch.set_num_threads(1)
    asked = choices() + generations()
    for prefix_reuse in (True, False):
        model = HFGenerative(folders["qwen3_5"], prefix_reuse=prefix_reuse, batch_size=4)
        assert model.recurrent
        with torch.no_grad():
            for weight in model.model.model.language_model.parameters():
                weight.mul_(8 if weight.dim() > 1 else 1)
        answers = model.answer(choices(), source) + model.answer(generations(), source)
        expected = [plain(model, r) for r in asked]
        assert len(set(expected)) > 2  # the scaled model tells its prompts apart
        assert [a.raw for a in answers] == expected, prefix_reuse
        assert len({a.meta["new_tokens"] for a in answers}) > 1  # rows left the batch at different steps
