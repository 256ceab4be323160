"""Rows a forward: at the default settings a video's suffixes run in one forward (their rows
bounded by a memory estimate, not by a fixed 8), and the suffixes of several videos with few
captions run together, on one cache joining their prefixes (each padded before its first slot
to the longest); the answers equal the plain path's. Through the runner, VELOCITI-shaped, on
the tiny models of every built family that runs a prefix."""
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from timefoil import RunConfig  # noqa: E402
from timefoil.core.items import VideoRef  # noqa: E402
from timefoil.execution.runner import Runner  # noqa: E402
from timefoil.models.families import FAMILIES  # noqa: E402
from timefoil.models.local import hf_prefix  # noqa: E402
from timefoil.models.local.hf_generative import HFGenerative  # noqa: E402
from timefoil.models.local.hf_inputs import frames_of  # noqa: E402
from timefoil.models.local.row_budget import RowCost  # noqa: E402
from timefoil.models.requests import Request  # noqa: E402
from timefoil.testing import pattern_frames, tiny_vlm  # noqa: E402
from timefoil.video.sampling import Sampling  # noqa: E402
from helpers import run_records, velociti_folder  # noqa: E402

WORDS = "a man woman opens closes the door slowly quickly two birds fly dog runs after ball red blue".split()
PREFIXED = [f for f in FAMILIES if FAMILIES[f].prefix_reuse_off is None]
SIZES = [(48, 64), (64, 96), (56, 80), (48, 64), (64, 64), (80, 112)]  # frame sizes: vision tokens differ by video


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """20 captions a video over 2 videos; 4 captions a video over 6."""
    return {20: velociti_folder(tmp_path_factory.mktemp("wide"), 2, 10, WORDS, seed=7, sizes=SIZES),
            4: velociti_folder(tmp_path_factory.mktemp("narrow"), 6, 2, WORDS, seed=7, sizes=SIZES)}


def answered(folder: str, model: HFGenerative, run_dir) -> dict[str, dict]:
    config = RunConfig("velociti", f"hf:{model.path}", data_dir=folder, protocol="entailment",
                       benchmark_args={"subset": "paper"}, sampling=Sampling(frames=4))
    report = Runner(config, str(run_dir), cache_dir=str(run_dir) + "-cache", model=model, progress=False).run()
    assert report.errors == 0
    return {r["id"]: r["answer"]["probs"] for r in run_records(run_dir)}


def log_gap(ours: dict, theirs: dict) -> float:
    """The largest difference of log p(yes) or log p(no) between two runs' answers."""
    assert ours.keys() == theirs.keys()
    return max(abs(math.log(ours[k][side]) - math.log(theirs[k][side])) for k in theirs for side in ("yes", "no"))


@pytest.mark.parametrize("family", PREFIXED)
def test_one_suffix_forward_a_video_and_one_for_several_small_videos_through_the_runner(folders, family, tmp_path):
    """At the default settings: 20 captions a video, 1 prefix and 1 suffix forward a video
    (at 8 rows a forward, 3); 4 captions a video, 6 videos in one call: 6 prefixes, 1 suffix
    forward. Answers as the plain path's (prefix reuse off: every prompt whole)."""
    torch.set_num_threads(1)
    path = tiny_vlm(tmp_path / "model", family, WORDS + ["Yes No", "Does the video entail the caption"])
    for captions, videos in ((20, 2), (4, 6)):
        plain = answered(folders[captions], HFGenerative(path, prefix_reuse=False), tmp_path / f"plain{captions}")
        assert len(plain) == videos * captions
        model = HFGenerative(path)
        ours = answered(folders[captions], model, tmp_path / f"ours{captions}")
        assert model.stats["prefix_forwards"] == videos
        assert model.stats["suffix_forwards"] == (videos if captions == 20 else 1)
        assert log_gap(ours, plain) < 1e-4, family
    capped = HFGenerative(path, batch_size=8)  # batch_size given: a cap on the rows a forward, as asked
    answered(folders[20], capped, tmp_path / "capped")
    assert capped.stats["suffix_forwards"] == 2 * 3  # 8 + 8 + 4 rows a video


CLIPS = {f"/v/{v}.mp4": frames_of(np.roll(pattern_frames(6, h, w), 5 * v, axis=2), rate=1.5)
         for v, (h, w) in enumerate(SIZES[:3])}
# instructions of different lengths: every video's prefix has a length of its own
ASKED = {"/v/0.mp4": "Does the video entail {}?", "/v/1.mp4": "Look at the video. Does the video entail {}?",
         "/v/2.mp4": "Look at the video quickly and slowly. Does it entail {}?"}
CAPTIONS = ["a man opens the door", "two birds fly", "the dog runs after the red ball quickly", "a woman closes"]


def requests_of(kind: str) -> list[Request]:
    out = []
    for v, (path, asked) in enumerate(ASKED.items()):
        for caption in CAPTIONS[:2 + v % 2]:
            out.append(Request(kind, VideoRef.file(path), asked.format(caption) if kind == "entailment" else caption))
    return out


@pytest.mark.parametrize("family", ["qwen2_vl", "llava_onevision", "gemma3", "qwen3_5"])
def test_suffixes_of_prefixes_of_different_lengths_in_one_forward_equal_the_plain_path(family, tmp_path,
                                                                                        monkeypatch):
    """Three videos, their prefixes of three lengths (instructions and frame sizes differ), 2 or
    3 captions each, suffixes of different lengths: one suffix forward over the joined cache;
    entailment's log p(yes) and log p(no) and similarity's caption log-likelihoods within 1e-4
    of the plain path's. Sliding-window layers (Gemma 3) and linear-attention states (Qwen3.5)
    included."""
    torch.set_num_threads(1)
    path = tiny_vlm(tmp_path, family, WORDS + ["Yes No", "Does the video entail", "Look at it Describe"])
    joined: list[list[int]] = []
    join = hf_prefix.joined_rows

    def recorded(caches, slots):
        joined.append([cache.get_seq_length() for cache, _ in caches])
        return join(caches, slots)

    monkeypatch.setattr(hf_prefix, "joined_rows", recorded)

    def source(ref, sampling):
        return CLIPS[ref.path]

    plain, ours = HFGenerative(path, prefix_reuse=False), HFGenerative(path)
    entail = requests_of("entailment")
    theirs, mine = plain.answer(entail, source), ours.answer(entail, source)
    assert ours.stats["prefix_forwards"] == 3 and ours.stats["suffix_forwards"] == 1
    assert len(joined) == 1 and len(set(joined[0])) == 3, joined  # three prefixes, three lengths
    assert log_gap(dict(enumerate(a.probs for a in mine)), dict(enumerate(a.probs for a in theirs))) < 1e-4
    similar = requests_of("similarity")
    theirs, mine = plain.answer(similar, source), ours.answer(similar, source)
    assert ours.stats["suffix_forwards"] == 2 and len(joined) == 2
    assert max(abs(a.score - b.score) for a, b in zip(mine, theirs)) < 1e-4


def test_rows_a_forward_follow_the_memory_estimate(tmp_path, monkeypatch):
    """A budget that holds exactly 7 rows of a video's suffixes (the estimate, less the prefix
    held; any 7 of these rows span all four caption lengths) makes 20 captions 3 forwards
    (7 + 7 + 6); answers equal the one-forward ones."""
    torch.set_num_threads(1)
    path = tiny_vlm(tmp_path, "qwen2_vl", WORDS + ["Yes No", "Does the video entail"])
    requests = [Request("entailment", VideoRef.file("/v/0.mp4"), f"Does the video entail {c}?")
                for c in CAPTIONS * 5]

    def source(ref, sampling):
        return CLIPS[ref.path]

    whole = HFGenerative(path)
    wide = whole.answer(requests, source)
    assert whole.stats["suffix_forwards"] == 1
    sequences = whole.inputs.encode_shared(whole.model, [whole._prompt(r, CLIPS["/v/0.mp4"])[0] for r in requests],
                                           CLIPS["/v/0.mp4"]).sequences
    prefix = min(len(s) for s in sequences) - 1  # the prompts' common tokens, the last one's left to the suffix
    while any(not torch.equal(s[:prefix], sequences[0][:prefix]) for s in sequences):
        prefix -= 1
    lengths = {len(s) - prefix for s in sequences}  # each length's last position is read: one read each
    cost = whole.row_cost
    budget = cost.prefix(prefix) + cost.forward(7, prefix, max(lengths), len(lengths))
    assert cost.forward(8, prefix, max(lengths), len(lengths)) > budget - cost.prefix(prefix)
    monkeypatch.setattr(hf_prefix, "free_bytes", lambda devices: budget)
    narrow_model = HFGenerative(path)
    narrow = narrow_model.answer(requests, source)
    assert narrow_model.stats["suffix_forwards"] == 3
    assert max(abs(a.probs["yes"] - b.probs["yes"]) for a, b in zip(wide, narrow)) < 1e-6


def test_a_rows_cost_worked_by_hand():
    """Qwen2-VL-7B's language model in bfloat16: 28 layers x 2 x 4 KV heads x 128 x 2 bytes =
    57,344 bytes of keys and values a token; a row of 28 suffix tokens over 1,504 prefix slots,
    one read: twice its 1,532 tokens' keys and values, 28 tokens x (4 x 3,584 + 3 x 18,944) x 2
    bytes of activations, 28 x 28 heads x 1,532 x 4 bytes of attention weights, 3 x 4 x 152,064
    bytes of logits."""
    from transformers import Qwen2VLConfig

    config = Qwen2VLConfig(text_config=dict(hidden_size=3584, num_attention_heads=28, num_key_value_heads=4,
                                            num_hidden_layers=28, intermediate_size=18944, vocab_size=152064))
    cost = RowCost.of(config, 2)
    assert cost.kv_per_token == 57_344 and cost.prefix(1_504) == 86_245_376
    row = 2 * 57_344 * 1_532 + 28 * (4 * 3_584 + 3 * 18_944) * 2 + 28 * 28 * 1_532 * 4 + 3 * 4 * 152_064
    assert row == 175_702_016 + 3_985_408 + 4_804_352 + 1_824_768 == 186_316_544
    assert cost.forward(20, 1_504, 28, 1) == 20 * row


class Held:
    """A prefix as the chunking sees it: its tokens, its suffixes' lengths, no captions."""

    def __init__(self, name: str, shared: int, lengths: list[int]):
        self.name, self.shared = name, shared
        self.sequences = [list(range(shared + n)) for n in lengths]
        self.captions = [0] * len(lengths)

    def suffix(self, i: int):
        return self.sequences[i][self.shared:]


def test_chunks_worked_by_hand():
    """A row costs 2 x (prefix slots + suffix width) and a held prefix its tokens (keys and
    values of one token: 1; nothing else). Prefix A: 10 tokens, suffixes 2, 3, 2; B: 6 tokens,
    suffixes 4, 2; 16 held. Room 120: A's three rows 3 x 2 x 13 = 78, B's first joins (4 x 2 x
    14 = 112), its second would make 5 x 2 x 14 = 140. Rows of one video a chunk: A's, B's. By
    length: 2 (A0, A2, B1), 3, 4. At most 2 rows: in pairs. No room: a row a chunk."""
    from timefoil.models.local.suffix_rows import suffix_chunks

    a, b = Held("A", 10, [2, 3, 2]), Held("B", 6, [4, 2])
    cost = RowCost(kv_per_token=1, activation_per_token=0, heads=0, vocabulary=0)

    def chunks(budget, across=True, by_length=False, cap=None):
        made = suffix_chunks([a, b], across=across, by_length=by_length, cap=cap, cost=cost, budget=16 + budget)
        return [[f"{p.name}{i}" for p, i in chunk] for chunk in made]

    assert chunks(120) == [["A0", "A1", "A2", "B0"], ["B1"]]
    assert chunks(100) == [["A0", "A1", "A2"], ["B0", "B1"]]
    assert chunks(120, across=False) == [["A0", "A1", "A2"], ["B0", "B1"]]
    assert chunks(1000, by_length=True) == [["A0", "A2", "B1"], ["A1"], ["B0"]]
    assert chunks(1000, cap=2) == [["A0", "A1"], ["A2", "B0"], ["B1"]]
    assert chunks(-16) == [["A0"], ["A1"], ["A2"], ["B0"], ["B1"]]
