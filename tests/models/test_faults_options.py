"""Fault rows: model options out of their range. Each is refused when the model loads, in one
line naming the option and what it may be, before a question is asked or a run folder written:
``max_new_tokens=-5`` used to answer every question with nothing, ``max_new_tokens=0`` to mean
the default unseen, ``batch_size=0`` to fail every request with a message naming no option, and
``device=meta`` or ``device=bogus`` to fail every request with torch's message."""
import os

import pytest

pytest.importorskip("transformers")

from faults import Fault, run_fault  # noqa: E402
from helpers import suite_on_disk  # noqa: E402
from timefoil.testing import tiny_llama  # noqa: E402


def hf_run(option: str):
    def prepare(tmp_path) -> list[str]:
        folder = tiny_llama(tmp_path / "lm", ["yes no a b"])
        return ["run", "synth", "--model", f"hf:{folder}", "--blind", "--model-arg", option, "--data",
                suite_on_disk(), "--protocol", "choice", "--out", str(tmp_path / "run"), "--no-progress"]
    return prepare


def nothing_written(tmp_path) -> None:
    assert not os.path.exists(tmp_path / "run")


ROWS = [("max_new_tokens=-5", "a whole number of 1 or more, not -5"),
        ("max_new_tokens=0", "a whole number of 1 or more, not 0"),
        ("batch_size=0", "a whole number of 1 or more, not 0"),
        ("batch_size=-1", "a whole number of 1 or more, not -1"),
        ("decode_rows=0", "a whole number of 1 or more, not 0")]
FAULTS = [Fault(f"hf model-arg {option}", hf_run(option), 1,
                rf"^Error: model-arg {option.partition('=')[0]} must be {said}$", nothing_written, timeout=90)
          for option, said in ROWS]
# a device torch cannot hold a model on: meta (weights without data) used to load and then fail
# every request with a torch message, a typo every request with "unexpected RuntimeError"
FAULTS += [Fault(f"hf model-arg device={device}", hf_run(f"device={device}"), 1,
                 rf"^Error: model-arg device must be cpu, cuda, cuda:N or mps, not '{device}'$", nothing_written,
                 timeout=90)
           for device in ("meta", "bogus")]


@pytest.mark.parametrize("fault", FAULTS, ids=str)
def test_fault(fault, tmp_path):
    run_fault(fault, tmp_path)
