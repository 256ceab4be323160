"""Frame cache entries that are not what was written: each is a miss, moved aside, decoded again
and stored whole over it; never a crash, a hang, or frames the sampling did not ask for.

Every row plants its bad entries in its own cache, in place of every entry a clean run of
bag-of-frames on a one-pair synthetic suite (two 64x64 videos, 8 frames each) wrote, then runs
the same command: it must finish, answer as the clean run did, and leave each entry as the clean
run wrote it, byte for byte, with the bad one beside it."""
from __future__ import annotations

import functools
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from faults import Fault, cli, run_fault
from helpers import run_records

FRAMES = 8


def argv(suite: str, out: Path) -> list[str]:
    return ["run", "synth", "--model", "bag-of-frames", "--data", suite, "--out", str(out), "--no-progress",
            "--frames", str(FRAMES)]


@functools.cache
def clean_run() -> tuple[str, Path, Path]:
    """(suite, the clean run's folder, its frame cache), made once per test process."""
    from timefoil.synth import generate

    root = Path(tempfile.mkdtemp(prefix="timefoil-cache-entries-"))
    generate(str(root / "suite"), per_family=1, seed=1, families=("order",))
    done = cli(*argv(str(root / "suite"), root / "run"), env={"TIMEFOIL_CACHE": str(root / "cache")})
    assert done.returncode == 0, done.stderr
    return str(root / "suite"), root / "run", root / "cache" / "frames"


def clean_entries() -> dict[str, bytes]:
    """Each entry of the clean run, by its path under frames/: one per video."""
    frames = clean_run()[2]
    entries = {str(path.relative_to(frames)): path.read_bytes() for path in frames.rglob("*.frames")}
    assert len(entries) == 2, entries
    return entries


def planted(spoil):
    """The clean run's entries copied into the row's cache, each spoiled by ``spoil(path)``."""
    def prepare(tmp_path: Path) -> list[str]:
        suite, _, frames = clean_run()
        for name in clean_entries():
            entry = tmp_path / "cache" / "frames" / name
            entry.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(frames / name, entry)
            spoil(entry)
        return argv(suite, tmp_path / "run")
    return prepare


def cut_to(length: int):
    def spoil(entry: Path) -> None:
        with open(entry, "r+b") as handle:
            handle.truncate(length)
    return spoil


def every_other_frame(entry: Path) -> None:
    """Rewritten whole, checksum and all, with frames 1, 3, 5 and 7 of the 8 (their plan entries
    and times with them): a sample that is consistent in itself, of 4 frames where 8 were asked."""
    from timefoil.video.diskcache import FrameDiskCache

    disk = FrameDiskCache(str(entry.parents[2]))
    key = entry.name[:-len(".frames")]
    arrays, facts = disk.load(key)
    disk.save(key, {name: value[::2] for name, value in arrays.items()}, facts)


def a_fifo(entry: Path) -> None:
    entry.unlink()
    os.mkfifo(entry)


def answers(run: Path) -> list[tuple]:
    return sorted((r["id"], json.dumps({**r["answer"], "latency": None}, sort_keys=True), json.dumps(r["frames"]))
                  for r in run_records(run))


def decoded_again_and_rewritten(tmp_path: Path) -> None:
    """The run answered as the clean one (shown the same 8 frames of each video), and each entry
    holds the clean run's bytes again, the bad one moved aside."""
    assert answers(tmp_path / "run") == answers(clean_run()[1])
    assert {r["frames"]["n"] for r in run_records(tmp_path / "run")} == {FRAMES}
    for name, written in clean_entries().items():
        entry = tmp_path / "cache" / "frames" / name
        assert entry.read_bytes() == written, name
        assert os.path.lexists(f"{entry}.damaged"), name


def damaged(reason: str) -> str:
    return (rf"^timefoil: a damaged frame cache entry .+\.frames \({reason}\) was moved to .+\.frames\.damaged; "
            r"its frames are decoded again$")


MAGIC = len(b"timefoil-frames-3\n")
FAULTS = [
    Fault("frame cache entry cut to its magic bytes", planted(cut_to(MAGIC)), 0,
          damaged(f"cut short at {MAGIC} bytes, before its header"), decoded_again_and_rewritten),
    Fault("frame cache entry cut 2 bytes into its header length", planted(cut_to(MAGIC + 2)), 0,
          damaged(f"cut short at {MAGIC + 2} bytes, before its header"), decoded_again_and_rewritten),
    Fault("checksummed frame cache entry of 4 frames where 8 were sampled", planted(every_other_frame), 0,
          damaged("not the sample asked for: 4 frames where the sampling shows 8"), decoded_again_and_rewritten),
    Fault("FIFO at a frame cache entry's path", planted(a_fifo), 0, damaged("a FIFO, not a regular file"),
          decoded_again_and_rewritten, timeout=30),
]


@pytest.mark.parametrize("fault", FAULTS, ids=str)
def test_fault(fault, tmp_path):
    run_fault(fault, tmp_path)
