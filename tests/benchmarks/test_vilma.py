"""ViLMA: the human-validation filter, pooled tests, ties, windows and breakdowns, and its perplexity rule."""
import json
import os
from collections import Counter, defaultdict
import pytest
from timefoil.benchmarks import DataError, get_benchmark
from timefoil.execution.offline import answer_offline
from timefoil.scoring import score_records
from benchmark_files import (ByLength, score_by_length, vilma_dir,
                             vilma_members, vitatecs_dir)
from helpers import cli
import numpy as np
from benchmark_files import (VILMA_DIR)


# annotation files in the published formats, with made-up records (tests/benchmark_files.py)
VITATECS, VILMA = vitatecs_dir(), vilma_dir()


def test_inspect_vilma_counts_members_only():
    members = vilma_members()
    expected = Counter()
    for key, records in members.items():
        expected[key] += len(records)
        expected[key.split("/")[0]] += len(records)
    data = json.loads(cli("inspect", "vilma", "--data", VILMA, "--json").stdout)
    assert data["counts"] == dict(expected)
    assert data["total"] == sum(len(r) for r in members.values())
    raw = sum(len(json.load(open(os.path.join(VILMA, f)))) for f in os.listdir(VILMA)
              if f.endswith(".json") and "digits" not in f and "pts" not in f and f != "dummy.json")
    assert data["total"] < raw  # the filter removed items


def test_vilma_pools_subtests_and_averages_five_tests():
    report = score_by_length("vilma", get_benchmark("vilma").load(VILMA))
    per_test = defaultdict(lambda: [0, 0, 0, 0])  # T right, P right, both, n
    for key, records in vilma_members().items():
        for r in records:
            t = all(len(r["caption"]) > len(f) for f in r["foils"])
            p = all(len(r["proficiency"]["caption"]) > len(f) for f in r["proficiency"]["foils"])
            counts = per_test[key.split("/")[0]]
            counts[0] += t
            counts[1] += p
            counts[2] += t and p
            counts[3] += 1
    for test, (t, p, both, n) in per_test.items():
        assert report.get(f"{test}/T").value == pytest.approx(100 * t / n)  # pooled, not averaged
        assert report.get(f"{test}/P").value == pytest.approx(100 * p / n)
        assert report.get(f"{test}/P+T").value == pytest.approx(100 * both / n)
    average = sum(100 * both / n for _, _, both, n in per_test.values()) / 5
    assert report.get("overall/average P+T").value == pytest.approx(average)


def test_vilma_ties_policy_follows_the_paper_by_default(tmp_path):
    items = get_benchmark("vilma").load(os.path.join(VILMA, "relations.json"))
    records = answer_offline(items, "similarity", ByLength())
    strict = score_records(records, benchmark="vilma", model="m", protocol="similarity",
                           spec=get_benchmark("vilma").summary)
    lenient = score_records(records, benchmark="vilma", model="m", protocol="similarity",
                            spec=get_benchmark("vilma").summary, tie_policy="ties-correct")
    ties = strict.get("overall/T").extra["ties"]
    assert ties > 0  # equal-length caption and foil
    n = strict.get("overall/T").n
    assert lenient.get("overall/T").value == pytest.approx(strict.get("overall/T").value + 100 * ties / n)


def test_vilma_rejects_invalid_json_and_files_without_validation():
    result = cli("inspect", "vilma", "--data", os.path.join(VILMA, "dummy.json"))
    assert result.returncode != 0 and "dummy.json: line 17: not valid JSON" in result.stderr
    assert "Traceback" not in result.stderr
    with pytest.raises(DataError, match=r"counting-easy-digits-sec.json: record .*missing field 'mturk'"):
        get_benchmark("vilma").load(os.path.join(VILMA, "counting-easy-digits-sec.json"))
    assert get_benchmark("vilma").load(VILMA)  # the folder holds both, and loads without them


def test_vilma_video_windows():
    items = {i.id: i for i in get_benchmark("vilma").load(VILMA)}
    quva = next(i for i in items.values() if i.videos[0].path.endswith("000_rope_beach.mp4"))
    assert (quva.videos[0].start, quva.videos[0].end) == (1.8667, 3.2)
    vidsitu = next(i for i in items.values() if i.test == "situation_awareness")
    assert vidsitu.videos[0].start is None  # the file is already the cut clip
    coin = next(i for i in items.values() if i.subtest == "inverse")
    assert coin.metadata["youtube"] == {"id": os.path.basename(coin.videos[0].path)[:-4]}


# -- perplexity for text-only LMs ---------------------------------------------------------------
CAPTIONS = ["the man opens the door", "a door opens the man slowly", "man the the door", "opens"]


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory):
    pytest.importorskip("transformers")
    from timefoil.testing import tiny_gpt2

    return tiny_gpt2(str(tmp_path_factory.mktemp("gpt2")), CAPTIONS + ["Yes No A B"])


def test_perplexity_is_the_official_vilma_rule_and_lower_perplexity_wins(gpt2):
    import torch

    from timefoil.models import load_model
    from timefoil.protocols import get_protocol
    from timefoil.models.requests import Request

    model = load_model(f"hf:{gpt2}", {"batch_size": "3"})  # no chat template: perplexity by default
    assert model.score_mode == "perplexity" and model.fingerprint()["score"] == "perplexity"
    # answers cached under the earlier rule (start token, mean over the caption) are not reused
    assert "tokens 2..L" in model.fingerprint()["perplexity_rule"]
    answers = model.answer([Request("similarity", None, c) for c in CAPTIONS], None)
    net, by_hand = model.model, []
    for caption, answer in zip(CAPTIONS, answers):  # one caption at a time, unpadded, by hand
        ids = torch.tensor(model.tokenizer(caption)["input_ids"])  # GPT-2's tokenizer adds no start token
        assert ids[0] != model.tokenizer.bos_token_id
        with torch.inference_mode():
            logits = net(ids[None]).logits[0].float()
        # ViLMA models/text/run.py: cross-entropy of tokens 2..L, summed, divided by L
        summed = float(torch.nn.functional.cross_entropy(logits[:-1], ids[1:], reduction="sum"))
        by_hand.append(np.exp(summed / len(ids)))
        assert answer.meta["tokens"] == len(ids)
        assert answer.meta["perplexity"] == pytest.approx(by_hand[-1], rel=1e-5)
        assert answer.score == pytest.approx(-summed / len(ids), abs=1e-5)
    assert answers[3].score == 0.0 and answers[3].meta["perplexity"] == 1.0  # "opens": nothing to predict
    # the similarity protocol picks the caption of lowest perplexity by the hand-computed rule
    from timefoil.core.items import Item, VideoRef

    item = Item(id="i", group_id="i", benchmark="t", test="t", videos=(VideoRef.file("/none.mp4"),),
                texts=tuple(CAPTIONS))
    from timefoil.execution.offline import answer_offline

    outcome = get_protocol("similarity").outcome(answer_offline([item], "similarity", model))
    best = int(np.argmin(by_hand))
    assert outcome.correct() == (best == 0) and int(np.argmax(outcome.scores)) == best
    # a base LM without a chat template answers Yes/No questions from a plain-text prompt
    yes_no = model.answer([Request("entailment", None, "Is the door open?", labels=("Yes", "No"))], None)[0]
    assert yes_no.error is None and yes_no.probs["yes"] > 0 and yes_no.probs["no"] > 0
    conditional = load_model(f"hf:{gpt2}", {"score": "conditional"})
    assert conditional.score_mode == "conditional" and "score" not in conditional.fingerprint()


def test_vilma_breaks_down_by_count_class_and_source():
    from timefoil.benchmarks import get_benchmark

    report = score_by_length("vilma", get_benchmark("vilma").load(VILMA_DIR))
    counts, sources = Counter(), Counter()
    for key, records in vilma_members().items():
        for r in records:
            sources[r["dataset"]] += 1
            if key.startswith("counting"):
                counts[r["class"]] += 1
    assert counts and len(sources) > 1
    for count, n in counts.items():
        assert report.get(f"category:count={count}/T").n == n
    for source, n in sources.items():
        assert report.get(f"category:source={source}/T").n == n


def test_inspect_vilma_says_what_the_filter_removed_and_what_it_ignored():
    from click.testing import CliRunner

    from timefoil.cli import main

    data = json.loads(CliRunner().invoke(main, ["inspect", "vilma", "--data", VILMA_DIR, "--json"]).output)
    members = vilma_members()
    relations = data["files"]["relations.json"]
    raw = json.load(open(os.path.join(VILMA_DIR, "relations.json")))
    assert relations["records"] == len(raw)
    assert relations["removed by the validation filter"] == len(raw) - len(members["spatial_relations/relations"])
    assert "counting-easy-digits-sec.json" in data["ignored"] and "counting-easy-spelled-pts.json" in data["ignored"]
    assert data["missing_tests"] == []
