"""Fault rows: output files (the HTML report, the paper tables as CSV, JSON and LaTeX) written to a
disk that fills up part way. Each is one line naming the file and what to do (exit 1); the file
is not left cut: absent where there was none, the earlier version byte for byte where there
was one, and no temporary file beside it. The disk fills up inside the process: a start-up
module makes every write of ``core/output.py`` write 100 characters, then raise ENOSPC."""
from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

import pytest

from faults import Fault, run_fault
from helpers import suite_on_disk

from timefoil import RunConfig, run
from timefoil.core import output
from timefoil.core.output import OutputWriteError, write_whole

FULL_DISK = '''import errno


class FillsUp:
    """A file that takes 100 characters, then says the disk is full."""

    def __init__(self, handle):
        self.handle, self.room = handle, 100

    def write(self, text):
        taken = text[:self.room]
        self.handle.write(taken)
        self.room -= len(taken)
        if len(taken) < len(text):
            raise OSError(errno.ENOSPC, "No space left on device")
        return len(text)

    def __getattr__(self, name):
        return getattr(self.handle, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.handle.close()


def full_open(*args, **kwargs):
    return FillsUp(open(*args, **kwargs))


import timefoil.core.output

timefoil.core.output.open = full_open
'''


def full_disk() -> dict[str, str]:
    folder = tempfile.mkdtemp(prefix="timefoil-full-disk-")
    with open(os.path.join(folder, "sitecustomize.py"), "w", encoding="utf-8") as handle:
        handle.write(FULL_DISK)
    return {"PYTHONPATH": os.pathsep.join(p for p in (folder, os.environ.get("PYTHONPATH")) if p)}


def a_run(tmp_path: Path) -> str:
    run(RunConfig("synth", "random", data_dir=suite_on_disk(), limit=6), str(tmp_path / "run"),
        cache_dir=str(tmp_path / "cache"), progress=False)
    (tmp_path / "out").mkdir()
    return str(tmp_path / "run")


def report(option: str, name: str, earlier: bool = False):
    def prepare(tmp_path: Path) -> list[str]:
        run_dir = a_run(tmp_path)
        if earlier:
            (tmp_path / "out" / name).write_text("an earlier report\n")
        return ["report", run_dir, option, str(tmp_path / "out" / name)]
    return prepare


def left(name: str, earlier: bool = False):
    def after(tmp_path: Path) -> None:
        kept = sorted(os.listdir(tmp_path / "out"))
        assert kept == ([name] if earlier else []), kept  # no cut file, no temporary file
        if earlier:
            assert (tmp_path / "out" / name).read_text() == "an earlier report\n"
    return after


def said(name: str) -> str:
    return (rf"^Error: .+/out/{name}: could not write it \(No space left on device\); free some space on its disk "
            r"\(or write to another folder\), then run the same command again$")


ROWS = [("--html", "report.html", False), ("--html", "report.html", True), ("--csv", "tables.csv", False),
        ("--json", "tables.json", False), ("--latex", "tables.tex", False), ("--csv", "tables.csv", True)]
FAULTS = [Fault(f"report {option} on a disk that fills up{' over an earlier one' if earlier else ''}",
                report(option, name, earlier), 1, said(name), left(name, earlier), env=full_disk())
          for option, name, earlier in ROWS]


@pytest.mark.parametrize("fault", FAULTS, ids=str)
def test_output_fault(fault, tmp_path):
    run_fault(fault, tmp_path)


def test_a_write_that_fails_at_the_flush_leaves_the_earlier_file(tmp_path, monkeypatch):
    """The disk found full only when the data reaches it (fsync), after every write returned."""
    target = tmp_path / "tables.json"
    target.write_text("earlier")

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(output.os, "fsync", full)
    with pytest.raises(OutputWriteError, match=f"^{target}: could not write it \\(No space left on device\\); "):
        write_whole(str(target), "{}")
    assert os.listdir(tmp_path) == ["tables.json"] and target.read_text() == "earlier"


def test_ctrl_c_while_writing_leaves_no_temporary_file(tmp_path):
    def interrupted(handle):
        handle.write("half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_whole(str(tmp_path / "page.html"), interrupted)
    assert os.listdir(tmp_path) == []
    assert write_whole(str(tmp_path / "page.html"), "whole") == str(tmp_path / "page.html")
    assert os.listdir(tmp_path) == ["page.html"] and (tmp_path / "page.html").read_text() == "whole"
