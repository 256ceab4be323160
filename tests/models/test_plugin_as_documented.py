"""A model plugin written exactly as docs/models.md shows it runs all five papers with ``run all``,
its kinds declared or (left out) read from its methods; and a plugin module imported before
timefoil.models (which reads the entry point mid-import) is registered all the same."""
import json
import os
import re
import subprocess
import sys

import pytest

from benchmark_files import five_benchmarks
from faults import cli
from helpers import REPO, install_package

DOCS = os.path.join(REPO, "docs", "models.md")
FOLDERS = ["temporalbench-choice", "velociti-entailment", "vilma-similarity", "vinoground-choice",
           "vitatecs-similarity"]


def documented() -> tuple[str, str]:
    """The plugin's module and its entry point line, as the docs print them."""
    text = open(DOCS, encoding="utf-8").read()
    module = next(block for block in re.findall(r"```python\n(.*?)```", text, re.S) if "MODEL = ModelLoader(" in block)
    toml = next(block for block in re.findall(r"```toml\n(.*?)```", text, re.S) if "timefoil_shortest" in block)
    return module, toml.strip().splitlines()[-1].replace('"', "")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return five_benchmarks(tmp_path_factory.mktemp("plugin"))


@pytest.mark.parametrize("declared", [True, False], ids=["kinds declared", "kinds read from its methods"])
def test_the_documented_plugin_runs_all_five_papers(data, tmp_path, declared):
    module, entry = documented()
    if not declared:
        module, dropped = re.subn(r",\s*kinds=\{[^}]*\}", "", module)
        assert dropped == 1
    site = install_package(tmp_path / "site", "timefoil_shortest", module, entry)
    env = {"PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    ran = cli("run", "all", "--model", "shortest", "--data-root", data, "--out", str(tmp_path / "out"),
              "--cache-dir", str(tmp_path / "cache"), "--no-progress", env=env, timeout=300)
    assert ran.returncode == 0, ran.stderr
    assert "skipped" not in ran.stderr and "cannot answer" not in ran.stderr
    assert sorted(f for f in os.listdir(tmp_path / "out") if os.path.isdir(tmp_path / "out" / f)) == FOLDERS
    for folder in FOLDERS:
        records = [json.loads(line) for line in open(tmp_path / "out" / folder / "items.jsonl")]
        assert records and not any(r["answer"]["error"] for r in records), folder
    # its own rule, read back: the shorter of two captions is the choice
    choice = [json.loads(line) for line in open(tmp_path / "out" / "vinoground-choice" / "items.jsonl")]
    for record in [r for r in choice if r["request"]["option_texts"]]:
        request = record["request"]
        lengths = [len(t.split()) for t in request["option_texts"]]
        assert record["answer"]["raw"] == request["labels"][lengths.index(min(lengths))]


def test_a_plugin_imported_before_timefoil_models_stays_registered():
    """examples/model_plugin imported first: its import imports timefoil.models, which reads the
    entry point while the plugin's module is half-imported."""
    plugin = os.path.join(REPO, "examples", "model_plugin")
    code = ("import timefoil_caption_length\nfrom timefoil.models import MODELS\n"
            "print(sorted(MODELS['caption-length'].kinds), MODELS.origin('caption-length')['from'])")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([plugin, os.path.join(REPO, "src")])}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0 and not done.stderr.strip(), done.stderr
    # no kinds declared: read from CaptionLength's methods (answer_rank from RanksBySimilarity)
    assert done.stdout.split("\n")[0] == "['choice', 'rank', 'similarity'] plugin"
