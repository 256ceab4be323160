"""Fault rows for models that ship their own code (a config.json with ``auto_map`` naming the
configuration and modeling modules beside it, as MiniCPM-V or Phi-3.5-Vision do on the hub).

Without ``--model-arg trust_remote_code=true`` such a folder is refused in one line naming the
flag, before any of its code runs; with it the model loads through transformers' own loading
and answers, and run.json records the hash of every .py file of the folder."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from faults import Fault, run_fault  # noqa: E402
from helpers import run_records  # noqa: E402

from timefoil.protocols import Prompts  # noqa: E402
from timefoil.synth import generate  # noqa: E402
from timefoil.testing import tiny_remote_code  # noqa: E402

CODE_FILES = ("configuration_tiny_remote.py", "modeling_tiny_remote.py")
# a marker the modeling module writes when imported: the refusal must come before it runs
MARKER = "\nimport os as _os\nopen(_os.environ['TIMEFOIL_TEST_CODE_RAN'], 'w').close()\n"


def remote_run(tmp_path: Path, *model_args: str) -> list[str]:
    folder = tiny_remote_code(tmp_path / "model", [Prompts().entailment, "a red square jumps"])
    with open(Path(folder) / "modeling_tiny_remote.py", "a") as f:
        f.write(MARKER)
    suite = str(tmp_path / "suite")
    generate(suite, per_family=1, seed=4, families=("order",))
    return ["run", "synth", "--model", f"hf:{folder}", "--data", suite, "--protocol", "entailment", "--blind",
            "--limit", "2", "--out", str(tmp_path / "run"), "--no-progress", *model_args]


def code_never_ran(tmp_path: Path) -> None:
    assert not (tmp_path / "code-ran").exists()
    assert not (tmp_path / "run" / "run.json").exists()


def code_ran_and_is_fingerprinted(tmp_path: Path) -> None:
    assert (tmp_path / "code-ran").exists()
    identity = json.loads((tmp_path / "run" / "run.json").read_text())["model_fingerprint"]
    expected = {name: hashlib.sha256((tmp_path / "model" / name).read_bytes()).hexdigest()[:32] for name in CODE_FILES}
    assert identity["remote_code"] == expected
    records = run_records(tmp_path / "run")
    assert records and not any(r.get("error") for r in records), records


FAULTS = [
    Fault("remote-code folder without trust_remote_code", lambda t: remote_run(t), 1,
          r"^Error: .*ships its own model code \(auto_map in config\.json\), which would run on this machine "
          r"when it loads; pass --model-arg trust_remote_code=true to run it$", code_never_ran),
    Fault("remote-code folder with trust_remote_code=true",
          lambda t: remote_run(t, "--model-arg", "trust_remote_code=true"), 0, r"", code_ran_and_is_fingerprinted),
]


@pytest.mark.parametrize("fault", FAULTS, ids=str)
def test_remote_code_fault(fault: Fault, tmp_path: Path, monkeypatch):
    # the marker's file and transformers' copy of the folder's modules stay inside the row's folder
    fault = Fault(fault.name, fault.prepare, fault.exit_code, fault.last_line, fault.after,
                  env={"TIMEFOIL_TEST_CODE_RAN": str(tmp_path / "code-ran"),
                       "HF_MODULES_CACHE": str(tmp_path / "mods")})
    run_fault(fault, tmp_path)


def test_a_change_to_the_folders_code_changes_the_weights_fingerprint(tmp_path):
    from timefoil.models.local.hf_loading import weights_fingerprint

    folder = tiny_remote_code(tmp_path / "model", ["a red square jumps"])
    before = weights_fingerprint(folder)
    with open(Path(folder) / "modeling_tiny_remote.py", "a") as f:
        f.write("\n# the same weights, other code\n")
    assert weights_fingerprint(folder) != before
