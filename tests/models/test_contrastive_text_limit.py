"""Captions longer than a contrastive model's text limit (CLIP reads 77 tokens) are cut, and
never silently: counted in run.json and said in one line, and two options read as the same
tokens once cut share one embedding, so their scores are equal, a tie, never told apart by
float noise.

The tiny model's tokenizer reads a word a token and ends each text with </s> (where CLIP pools
it), 6 tokens at most. The suite (order family, seed 3) holds four captions, all longer:
  "the green triangle jumps and then the white triangle jumps" (11) -> "the green triangle jumps and"
  "the white triangle jumps and then the green triangle jumps" (11) -> "the white triangle jumps and"
  "there is a green triangle and a white triangle"             (10) -> "there is a green triangle"
  "there is a green triangle and a cyan triangle"              (10) -> "there is a green triangle"
so 4 captions are cut and the two proficiency items (a and b, each those last two as its
options) are pairs that became equal: 2 ties more than the same model reading them whole."""
from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("PIL")

from helpers import cli, run_records  # noqa: E402

from timefoil.benchmarks import get_benchmark  # noqa: E402
from timefoil.testing import tiny_clip  # noqa: E402

pytestmark = pytest.mark.suite(per_family=1, seed=3, families=("order",))
LINE = "4 captions longer than the model's 6 text tokens were cut; 2 pairs became equal after the cut (counted as ties)"


def limited_clip(suite, tmp_path, limit: int) -> str:
    texts = [t for item in get_benchmark("synth").load(suite) for t in item.texts]
    path = tiny_clip(tmp_path / "clip", texts)
    from tokenizers import Tokenizer, processors

    config = json.loads((tmp_path / "clip" / "tokenizer_config.json").read_text())
    (tmp_path / "clip" / "tokenizer_config.json").write_text(json.dumps({**config, "model_max_length": limit}))
    tokenizer = Tokenizer.from_file(str(tmp_path / "clip" / "tokenizer.json"))
    tokenizer.post_processor = processors.TemplateProcessing(single="$A </s>",
                                                             special_tokens=[("</s>", tokenizer.token_to_id("</s>"))])
    tokenizer.save(str(tmp_path / "clip" / "tokenizer.json"))
    return path


def ran(suite, tmp_path, limit: int, out: str):
    path = limited_clip(suite, tmp_path / out, limit)
    result = cli("run", "synth", "--model", f"clip:{path}", "--data", suite, "--frames", "2", "--out",
                 str(tmp_path / out / "run"), "--cache-dir", str(tmp_path / "cache"), "--no-progress", timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    return result


def test_cut_captions_are_counted_said_and_equal_ones_tie(suite, tmp_path):
    result = ran(suite, tmp_path, 6, "cut")
    assert (result.stdout + result.stderr).count(LINE) == 1, result.stdout[-3000:]
    meta = json.loads((tmp_path / "cut" / "run" / "run.json").read_text())
    assert meta["texts_cut"] == {"texts": 4, "limit": 6, "pairs_equal": 2}
    records = run_records(tmp_path / "cut" / "run")
    cut = {r["request"]["text"]: r["answer"]["meta"]["text_cut"] for r in records}
    assert {text: fact["tokens"] for text, fact in cut.items()} == {
        "the green triangle jumps and then the white triangle jumps": 11,
        "the white triangle jumps and then the green triangle jumps": 11,
        "there is a green triangle and a white triangle": 10, "there is a green triangle and a cyan triangle": 10}
    proficiency = [r for r in records if "proficiency" in r["item"]["id"]]
    assert len(proficiency) == 4 and len({r["answer"]["score"] for r in proficiency}) == 1  # exactly equal
    report = json.loads(cli("score", str(tmp_path / "cut" / "run"), "--json", timeout=60).stdout)
    assert report["texts_cut"] == {"texts": 4, "limit": 6, "pairs_equal": 2}
    shown = cli("score", str(tmp_path / "cut" / "run"), timeout=60)
    assert shown.stdout.count(LINE) == 1, shown.stdout[-3000:]

    # the same weights reading every caption whole: nothing said, and 2 ties fewer
    whole = ran(suite, tmp_path, 16, "whole")
    assert "were cut" not in whole.stdout + whole.stderr
    assert "texts_cut" not in json.loads((tmp_path / "whole" / "run" / "run.json").read_text())
    assert all("text_cut" not in r["answer"]["meta"] for r in run_records(tmp_path / "whole" / "run"))
    read_whole = json.loads(cli("score", str(tmp_path / "whole" / "run"), "--json", timeout=60).stdout)
    assert report["ties"] == read_whole["ties"] + 2, (report["ties"], read_whole["ties"])
