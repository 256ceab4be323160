"""What a refused run leaves in its --out folder (docs/reliability.md, "A refused run"): nothing
where it is refused before it starts, and a folder it found exactly as it found it."""
import hashlib
import os

import pytest

from timefoil import RunConfig, RunError, run

pytestmark = pytest.mark.suite(per_family=1, seed=3)


def contents(folder: str) -> dict[str, str]:
    out = {}
    for root, _, files in os.walk(folder):
        for name in files:
            path = os.path.join(root, name)
            out[os.path.relpath(path, folder)] = hashlib.sha256(open(path, "rb").read()).hexdigest()
    return out


@pytest.mark.parametrize("config, why", [
    (dict(model="bag-of-frames", protocol="entailment"), "cannot answer entailment"),
    (dict(model="random", protocol="retrieval"), "no 'retrieval' protocol"),
])
def test_a_run_refused_before_it_starts_writes_no_folder(suite, tmp_path, config, why):
    out = tmp_path / "out"
    with pytest.raises(RunError, match=why):
        run(RunConfig("synth", data_dir=suite, **config), str(out), cache_dir=str(tmp_path / "c"), progress=False)
    assert not out.exists()


def test_a_folder_holding_another_run_is_left_byte_for_byte(suite, tmp_path):
    out = str(tmp_path / "out")
    run(RunConfig("synth", "random", data_dir=suite, limit=1), out, cache_dir=str(tmp_path / "c"), progress=False)
    before = contents(out)
    assert set(before) == {"run.json", "items.jsonl"}  # the lock file goes when the run ends
    with pytest.raises(RunError, match="another configuration"):
        run(RunConfig("synth", "constant", data_dir=suite, limit=1), out, cache_dir=str(tmp_path / "c"),
            progress=False)
    assert contents(out) == before
