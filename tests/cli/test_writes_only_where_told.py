"""A command writes only where it is told: its --out (or the report's file), its --cache-dir and
the temporary folder. Run from an empty working folder with an empty home, a run of a local
generative model, one of a contrastive model and an HTML report leave both empty (before, the
weights' hash memo went to ~/.cache/timefoil whatever --cache-dir said)."""
from __future__ import annotations

import os

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from helpers import cli  # noqa: E402

from timefoil.benchmarks import get_benchmark  # noqa: E402
from timefoil.protocols import Prompts  # noqa: E402
from timefoil.testing import tiny_clip, tiny_llama  # noqa: E402

pytestmark = pytest.mark.suite(per_family=1, seed=3, families=("order",))


def files_under(folder) -> list[str]:
    return sorted(os.path.relpath(os.path.join(root, name), folder)
                  for root, _, names in os.walk(folder) for name in names)


def test_nothing_is_written_beside_out_cache_and_temp(suite, tmp_path):
    texts = [t for item in get_benchmark("synth").load(suite) for t in item.texts]
    llama = tiny_llama(tmp_path / "models" / "llama", [Prompts().entailment, *texts])
    clip = tiny_clip(tmp_path / "models" / "clip", texts)
    models_before = files_under(tmp_path / "models")
    for folder in ("cwd", "home", "tmp"):
        (tmp_path / folder).mkdir()
    env = {"HOME": str(tmp_path / "home"), "TMPDIR": str(tmp_path / "tmp"), "TIMEFOIL_CACHE": "",
           "XDG_CACHE_HOME": "", "HF_HOME": "", "HF_HUB_CACHE": "", "TRANSFORMERS_CACHE": ""}
    env = {k: v for k, v in env.items() if v} | {"TIMEFOIL_CACHE": str(tmp_path / "never")}
    runs = [("llama", ["--model", f"hf:{llama}", "--protocol", "entailment", "--blind"]),
            ("clip", ["--model", f"clip:{clip}", "--frames", "2"])]
    for name, args in runs:
        done = cli("run", "synth", "--data", suite, *args, "--out", str(tmp_path / "out" / name),
                   "--cache-dir", str(tmp_path / "cache"), "--no-progress", env=env, cwd=str(tmp_path / "cwd"),
                   timeout=180)
        assert done.returncode == 0, done.stderr[-2000:]
    reported = cli("report", str(tmp_path / "out" / "clip"), "--html", str(tmp_path / "out" / "report.html"),
                   env=env, cwd=str(tmp_path / "cwd"), timeout=120)
    assert reported.returncode == 0, reported.stderr[-2000:]
    assert files_under(tmp_path / "cwd") == [] and files_under(tmp_path / "home") == []
    assert not (tmp_path / "never").exists()  # TIMEFOIL_CACHE is not the cache when --cache-dir is given
    assert files_under(tmp_path / "models") == models_before  # the models' folders are only read
    assert sorted(os.listdir(tmp_path)) == ["cache", "cwd", "home", "models", "out", "tmp"]
