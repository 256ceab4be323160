"""Fault rows for a local model's weights saved again into the same folder with the same shapes
(a fine-tune written over its base, ``save_pretrained`` over an older checkpoint): the files keep
their names and sizes, so only their content tells the two apart. A new run on the same cache
asks the new weights, a resume into the earlier run's folder is refused, and ``check`` says the
stored answers are the earlier weights'."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from faults import Fault, run_fault  # noqa: E402
from helpers import run_records  # noqa: E402

from timefoil import RunConfig, run  # noqa: E402
from timefoil.protocols import Prompts  # noqa: E402
from timefoil.synth import generate  # noqa: E402
from timefoil.testing import tiny_llama  # noqa: E402

TEXTS = [Prompts().entailment, "a red square jumps"]


def run_args(tmp_path: Path, out: str) -> list[str]:
    return ["run", "synth", "--model", f"hf:{tmp_path / 'model'}", "--data", str(tmp_path / "suite"),
            "--protocol", "entailment", "--blind", "--limit", "2", "--out", str(tmp_path / out), "--no-progress"]


def answered(tmp_path: Path) -> None:
    """The first run, in this process (what the command line would run: the row's command then
    runs in its own), on the row's cache."""
    generate(str(tmp_path / "suite"), per_family=1, seed=4, families=("order",))
    tiny_llama(tmp_path / "model", TEXTS, seed=0)
    run(RunConfig("synth", f"hf:{tmp_path / 'model'}", data_dir=str(tmp_path / "suite"), protocol="entailment",
                  blind=True, limit=2), str(tmp_path / "before"), cache_dir=str(tmp_path / "cache"), progress=False)


def answered_then_rewritten(tmp_path: Path) -> None:
    """A run answered by one checkpoint, then another of the same shapes saved over it."""
    answered(tmp_path)
    sizes = {f.name: f.stat().st_size for f in (tmp_path / "model").iterdir()}
    tiny_llama(tmp_path / "model", TEXTS, seed=1)
    assert {f.name: f.stat().st_size for f in (tmp_path / "model").iterdir()} == sizes  # only the bytes differ


def new_run(tmp_path: Path) -> list[str]:
    answered_then_rewritten(tmp_path)
    return run_args(tmp_path, "after")


def resumed(tmp_path: Path) -> list[str]:
    answered_then_rewritten(tmp_path)
    (tmp_path / "answered").write_bytes((tmp_path / "before" / "items.jsonl").read_bytes())
    return run_args(tmp_path, "before")


def made_before(tmp_path: Path) -> list[str]:
    """A run whose run.json names the weights as timefoil did before their content counted."""
    from timefoil.models.local.hf_loading import sized_weights_fingerprint

    answered(tmp_path)
    stored = json.loads((tmp_path / "before" / "run.json").read_text())
    stored["model_fingerprint"]["weights"] = sized_weights_fingerprint(str(tmp_path / "model"))
    (tmp_path / "before" / "run.json").write_text(json.dumps(stored))
    (tmp_path / "answered").write_bytes((tmp_path / "before" / "items.jsonl").read_bytes())
    return run_args(tmp_path, "before")


def rewritten_in_place(tmp_path: Path) -> None:
    """The first run's weight file overwritten in place with another checkpoint's bytes and its
    mtime put back (``dd conv=notrunc`` then ``touch -d``): size, mtime and inode all as before;
    only the ctime, which no call can set back, tells."""
    answered(tmp_path)
    tiny_llama(tmp_path / "other", TEXTS, seed=1)
    target = tmp_path / "model" / "model.safetensors"
    before = os.stat(target)
    with open(target, "r+b") as handle:
        handle.write((tmp_path / "other" / "model.safetensors").read_bytes())
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(target)
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (before.st_size, before.st_mtime_ns, before.st_ino)


def new_run_after_in_place(tmp_path: Path) -> list[str]:
    rewritten_in_place(tmp_path)
    return run_args(tmp_path, "after")


def resumed_after_in_place(tmp_path: Path) -> list[str]:
    rewritten_in_place(tmp_path)
    (tmp_path / "answered").write_bytes((tmp_path / "before" / "items.jsonl").read_bytes())
    return run_args(tmp_path, "before")


def config_edited(tmp_path: Path) -> None:
    """config.json given one more key the model ignores: not a weight file, and said so."""
    answered(tmp_path)
    config = json.loads((tmp_path / "model" / "config.json").read_text())
    (tmp_path / "model" / "config.json").write_text(json.dumps({**config, "note": "edited by hand"}))


def resumed_after_config(tmp_path: Path) -> list[str]:
    config_edited(tmp_path)
    (tmp_path / "answered").write_bytes((tmp_path / "before" / "items.jsonl").read_bytes())
    return run_args(tmp_path, "before")


def finished_after_config(tmp_path: Path) -> list[str]:
    """The finished run asked again (as ``run all`` asks each benchmark), after config.json changed."""
    config_edited(tmp_path)
    (tmp_path / "answered").write_bytes((tmp_path / "before" / "items.jsonl").read_bytes())
    return run_args(tmp_path, "before")[:-1]  # with progress: the path that scores a finished run


def checked_after_config(tmp_path: Path) -> list[str]:
    config_edited(tmp_path)
    return ["check", str(tmp_path / "before")]


def checked(tmp_path: Path) -> list[str]:
    answered_then_rewritten(tmp_path)
    return ["check", str(tmp_path / "before")]


def answers(run_dir: Path) -> dict[str, dict]:
    return {r["id"]: r["answer"]["probs"] for r in run_records(run_dir)}


def asked_the_new_weights(tmp_path: Path) -> None:
    before, after = answers(tmp_path / "before"), answers(tmp_path / "after")
    assert sorted(before) == sorted(after) and all(after.values())
    assert all(before[k] != after[k] for k in before), (before, after)  # none came from the cache
    identity = [json.loads((tmp_path / r / "run.json").read_text())["model_fingerprint"] for r in ("before", "after")]
    assert identity[0]["weights"] != identity[1]["weights"]


def left_as_it_was(tmp_path: Path) -> None:
    assert (tmp_path / "before" / "items.jsonl").read_bytes() == (tmp_path / "answered").read_bytes()


FAULTS = [
    Fault("weights saved again in place, then a new run on the same cache", new_run, 0, r"",
          asked_the_new_weights),
    Fault("weights saved again in place, then the earlier run resumed", resumed, 1,
          r"^Error: .+/before holds a run answered by other weights \(the model's weight files changed since\); "
          r"use a new --out directory \(or delete this one\)$", left_as_it_was),
    Fault("a run made when weights were named by their sizes, resumed", made_before, 1,
          r"^Error: .+/before holds a run made before the weights were named by their content \(by their files' "
          r"sizes only\), so whether they changed since cannot be told; use a new --out directory", left_as_it_was),
    Fault("weights saved again in place, then the earlier run checked", checked, 1,
          r"^Error: .+/before: 1 problem\(s\) "),
    Fault("weights rewritten in place with their mtime put back, then a new run", new_run_after_in_place, 0, r"",
          asked_the_new_weights),
    Fault("weights rewritten in place with their mtime put back, then the earlier run resumed",
          resumed_after_in_place, 1,
          r"^Error: .+/before holds a run answered by other weights \(the model's weight files changed since\); "
          r"use a new --out directory \(or delete this one\)$", left_as_it_was),
    Fault("config.json edited, then the earlier run resumed", resumed_after_config, 1,
          r"^Error: .+/before holds a run answered with other model files \(config.json changed since; it is not "
          r"a weight file\); use a new --out directory \(or delete this one\)$", left_as_it_was),
    Fault("config.json edited, then the finished run asked again", finished_after_config, 1,
          r"^Error: .+/before holds a run answered with other model files \(config.json changed since; it is not "
          r"a weight file\); use a new --out directory \(or delete this one\)$", left_as_it_was),
    Fault("config.json edited, then the earlier run checked", checked_after_config, 1,
          r"^Error: .+/before: 1 problem\(s\) "),
]


@pytest.mark.parametrize("fault", FAULTS, ids=str)
def test_weights_fault(fault: Fault, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("TIMEFOIL_CACHE", str(tmp_path / "cache"))  # the first run's, in this process
    result = run_fault(fault, tmp_path)
    if fault.prepare is checked:
        assert f"the weights in {tmp_path / 'model'} are not those this run was answered with" in result.stdout
    if fault.prepare is checked_after_config:
        assert (f"the files in {tmp_path / 'model'} are not those this run was answered with (config.json "
                "changed since; it is not a weight file)") in result.stdout


def test_a_load_hashes_the_weights_once_and_a_file_written_again_anew(tmp_path, monkeypatch):
    """The content hash is memoised in the cache folder by path, size, modification time and
    inode: a second process finds it there; a file replaced by one of the same size and time
    (another inode) is hashed again."""
    from timefoil.models.local import hf_loading

    monkeypatch.setenv("TIMEFOIL_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    (folder / "model.safetensors").write_bytes(b"a" * 1000)
    hashed = []
    real = hf_loading.file_hash
    monkeypatch.setattr(hf_loading, "file_hash", lambda p: hashed.append(os.path.basename(p)) or real(p))
    first = hf_loading.weights_fingerprint(str(folder))
    memo = json.loads((tmp_path / "cache" / hf_loading.MEMO).read_text())
    assert list(memo) == [str(folder / "model.safetensors")]
    assert hashed.count("model.safetensors") == 1
    assert hf_loading.weights_fingerprint(str(folder)) == first and hashed.count("model.safetensors") == 1
    stamp = os.stat(folder / "model.safetensors")
    (folder / "new").write_bytes(b"b" * 1000)
    os.replace(folder / "new", folder / "model.safetensors")  # same name and size, another inode
    os.utime(folder / "model.safetensors", ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    assert hf_loading.weights_fingerprint(str(folder)) != first and hashed.count("model.safetensors") == 2


def test_a_file_rewritten_in_place_with_its_mtime_put_back_is_hashed_again(tmp_path, monkeypatch):
    """Size, mtime and inode kept (bytes written over the old ones, then ``os.utime``): the
    memo's stamp holds the ctime too, so the file is read again and the fingerprint changes."""
    from timefoil.models.local import hf_loading

    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(b"a" * 1000)
    hashed = []
    real = hf_loading.file_hash
    monkeypatch.setattr(hf_loading, "file_hash", lambda p: hashed.append(os.path.basename(p)) or real(p))
    first = hf_loading.weights_fingerprint(str(folder), str(tmp_path / "cache"))
    stamp = os.stat(folder / "model.safetensors")
    time.sleep(0.02)  # past the coarse clock's step that stamps the ctime
    with open(folder / "model.safetensors", "r+b") as handle:
        handle.write(b"b" * 1000)
    os.utime(folder / "model.safetensors", ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    assert hf_loading.weights_fingerprint(str(folder), str(tmp_path / "cache")) != first
    assert hashed.count("model.safetensors") == 2


def test_the_weights_memo_is_kept_in_the_runs_cache_dir(tmp_path):
    """A run given --cache-dir writes the weights' hashes there: nothing under TIMEFOIL_CACHE or
    the home folder (before, the memo went to the default cache whatever --cache-dir said)."""
    from helpers import cli

    generate(str(tmp_path / "suite"), per_family=1, seed=4, families=("order",))
    tiny_llama(tmp_path / "model", TEXTS, seed=0)
    (tmp_path / "home").mkdir()
    result = cli(*run_args(tmp_path, "out"), "--cache-dir", str(tmp_path / "given"),
                 env={"TIMEFOIL_CACHE": str(tmp_path / "default"), "HOME": str(tmp_path / "home")})
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "given" / "weights-hashes.json").is_file()
    assert not (tmp_path / "default").exists() and list((tmp_path / "home").iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["given", "home", "model", "out", "suite"]


def test_a_hub_snapshot_is_named_by_its_commit_not_its_bytes(tmp_path, monkeypatch):
    from timefoil.models.local import hf_loading

    monkeypatch.setenv("TIMEFOIL_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "hub" / "models--org--tiny" / "snapshots" / ("ab" * 20)
    folder.mkdir(parents=True)
    (folder / "model.safetensors").write_bytes(b"a" * 100)
    monkeypatch.setattr(hf_loading, "file_hash", lambda p: pytest.fail(f"{p} was read"))
    named = hf_loading.weights_fingerprint(str(folder))
    other = tmp_path / "hub" / "models--org--tiny" / "snapshots" / ("cd" * 20)
    os.rename(folder, other)
    assert hf_loading.weights_fingerprint(str(other)) != named
