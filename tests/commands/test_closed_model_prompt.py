"""A model that answers only in writing (a served chat model) is asked VELOCITI as the paper asked
its closed models, "Just answer with either Yes or No." on a line of its own, said in one line
beside the protocol lines; ``--bench-arg velociti.variant=open`` keeps the open models' prompt.
A model that scores pairs too (a local one) keeps the default."""
import json
import os

import pytest
from click.testing import CliRunner

from benchmark_files import five_benchmarks
from timefoil.benchmarks.velociti import CLOSED, ENTAIL
from timefoil.cli import main
from timefoil.commands.papers import as_written
from timefoil.execution.config import RunConfig
from timefoil.models import CHAT, EVERY_KIND


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return five_benchmarks(tmp_path_factory.mktemp("closed"))


def asked(run_dir):
    with open(os.path.join(run_dir, "run.json"), encoding="utf-8") as handle:
        variant = json.load(handle)["config"].get("variant")
    with open(os.path.join(run_dir, "items.jsonl"), encoding="utf-8") as handle:
        texts = {json.loads(line)["request"]["text"] for line in handle}
    return variant, texts


def test_a_chat_model_is_asked_velociti_with_the_closed_models_prompt_unless_told_open(data, tmp_path, monkeypatch):
    pytest.importorskip("httpx")
    from provider_fakes import FakeServer

    server = FakeServer(failure_rate=0.0)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    spec = f"openai:m@{server.url}"
    try:
        closed = CliRunner().invoke(main, ["run", "velociti,vinoground", "--model", spec, "--data-root", data,
                                           "--out", str(tmp_path / "closed"), "--cache-dir", str(tmp_path / "c"),
                                           "--no-progress"])
        opened = CliRunner().invoke(main, ["run", "velociti", "--model", spec, "--data", os.path.join(data, "velociti"),
                                           "--bench-arg", "velociti.variant=open", "--out", str(tmp_path / "open"),
                                           "--cache-dir", str(tmp_path / "c"), "--no-progress"])
    finally:
        server.close()
    assert closed.exit_code == 0, closed.output
    said = [line for line in closed.stderr.splitlines() if "closed models" in line]
    assert said == ["timefoil: velociti: a model that answers only in writing is asked with the paper's prompt for "
                    "its closed models (paper App. C: Fig. 15 with the closed models' instruction on a line of its "
                    "own; --bench-arg velociti.variant=open keeps the open models' one)"]
    variant, texts = asked(tmp_path / "closed" / "velociti-entailment")
    assert variant == "closed" and texts and all(t.endswith("\nJust answer with either Yes or No.") for t in texts)
    assert asked(tmp_path / "closed" / "vinoground-choice")[0] is None  # its paper has no such prompt
    assert opened.exit_code == 0, opened.output
    variant, texts = asked(tmp_path / "open")
    assert variant == "open" and texts and not any("Just answer" in t for t in texts)
    assert not any("closed models" in line for line in opened.stderr.splitlines())


def test_only_a_model_that_answers_in_writing_alone_gets_it_and_a_given_variant_stays():
    config = RunConfig("velociti", "m")
    assert as_written(config, "entailment", CHAT)[0].variant == "closed"
    assert as_written(config, "entailment", EVERY_KIND) == (config, None)  # a local video LLM: the open prompt
    assert as_written(config, "entailment", None) == (config, None)  # not known before it loads
    cot = RunConfig("velociti", "m", variant="cot")
    assert as_written(cot, "entailment", CHAT) == (cot, None)
    # multiple choice: the closed models' choice prompt is the open one, so nothing changes
    assert as_written(config, "choice", CHAT) == (config, None)
    assert (ENTAIL + CLOSED).endswith("\nJust answer with either Yes or No.")
