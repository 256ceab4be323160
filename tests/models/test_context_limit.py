"""A prompt longer than a generative model's context is refused, request by request, in one
line; the prompts that fit are answered as before. A tiny Llama is given a context between its
prompts' lengths, counted independently by its tokenizer's own chat template."""
from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from helpers import run_records  # noqa: E402

from timefoil import RunConfig, run  # noqa: E402
from timefoil.protocols import Prompts  # noqa: E402
from timefoil.testing import tiny_llama  # noqa: E402

pytestmark = pytest.mark.suite(per_family=1, seed=3, families=("order",))
TEXTS = [Prompts().entailment, "there is a green triangle and a white triangle the then jumps cyan"]


def answered(suite, tmp_path, folder, context: int | None = None):
    path = tiny_llama(tmp_path / folder, TEXTS, seed=0)
    if context is not None:
        config = json.loads((tmp_path / folder / "config.json").read_text())
        (tmp_path / folder / "config.json").write_text(json.dumps({**config, "max_position_embeddings": context}))
    config = RunConfig("synth", f"hf:{path}", data_dir=suite, protocol="entailment", blind=True,
                       model_args={"batch_size": "4"})
    run(config, str(tmp_path / folder / "run"), cache_dir=str(tmp_path / "cache"), progress=False)
    return path, run_records(tmp_path / folder / "run")


def test_prompts_past_the_context_are_refused_one_by_one(suite, tmp_path):
    from transformers import AutoTokenizer

    path, whole = answered(suite, tmp_path, "wide")
    assert whole and all(r["answer"]["error"] is None for r in whole)
    tokenizer = AutoTokenizer.from_pretrained(path)
    length = {r["id"]: len(tokenizer.apply_chat_template(
        ([{"role": "system", "content": r["request"]["system"]}] if r["request"].get("system") else [])
        + [{"role": "user", "content": r["request"]["text"]}], add_generation_prompt=True, tokenize=True,
        return_dict=False)) for r in whole}
    context = sorted(set(length.values()))[len(set(length.values())) // 2 - 1]  # some longer, some not
    too_long = {i for i, n in length.items() if n > context}
    assert too_long and too_long != set(length)

    _, cut = answered(suite, tmp_path, "narrow", context)
    errors = {r["id"]: r["answer"]["error"] for r in cut if r["answer"]["error"]}
    assert set(errors) == too_long
    for request_id, error in errors.items():
        assert error == (f"model error: ContextExceeded: the prompt is {length[request_id]:,} tokens, past the "
                         f"model's context of {context:,} (max_position_embeddings); ask fewer frames or a "
                         "shorter prompt")
    before = {r["id"]: r["answer"]["probs"] for r in whole}
    for record in (r for r in cut if r["id"] not in too_long):  # the same answers as with the wide context
        assert record["answer"]["probs"] == pytest.approx(before[record["id"]], abs=1e-5)
