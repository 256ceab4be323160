"""Faults of the stores: commands asked to write into the data they read, response and frame
caches on a full, read-only, locked or shared disk, a run lock that is not a plain file, a run.json
that does not parse, and shards that differ in what they asked or what they were made with."""
from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import tempfile
from pathlib import Path

import numpy as np
import pytest

from faults import Fault, cli, run_fault
from helpers import TESTS

ITEMS = [{"id": "a1", "group": "a", "test": "order", "video": "videos/a.mp4", "texts": ["x then y", "y then x"],
          "target": 0},
         {"id": "b1", "group": "b", "test": "order", "video": "videos/b.mp4", "texts": ["p then q", "q then p"],
          "target": 1}]
# similarity asks one request per (video, text): 2 items x 2 texts; the first group alone: 2
PLANNED, FIRST_GROUP = 4, 2


def bench(root: Path) -> Path:
    """A benchmark folder (items.jsonl + two tiny videos), as `timefoil run items --data` reads it."""
    from timefoil.video import write_video

    folder = root / "B"
    (folder / "videos").mkdir(parents=True)
    for name, shade in (("a", 40), ("b", 160)):
        write_video(str(folder / "videos" / f"{name}.mp4"),
                    [np.full((16, 16, 3), shade + 8 * t, np.uint8) for t in range(6)], fps=6)
    (folder / "items.jsonl").write_text("".join(json.dumps(item) + "\n" for item in ITEMS))
    return folder


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def run_args(data, out, *extra) -> list[str]:
    return ["run", "items", "--model", "random", "--data", str(data), "--out", str(out), "--no-progress", *extra]


def prepared_run(root: Path, out: Path, *extra, env: dict[str, str] | None = None) -> None:
    """A finished run (or shard) made the ordinary way, with the row's own cache."""
    done = cli(*run_args(root / "B", out, *extra), env={"TIMEFOIL_CACHE": str(root / "cache"), **(env or {})})
    assert done.returncode == 0, done.stderr


def records(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "items.jsonl").read_text().splitlines()]


def bench_untouched(root: Path) -> None:
    """The benchmark folder holds what it held: its items, byte for byte, and nothing of a run."""
    folder = root / "B"
    assert (folder / "items.jsonl").read_text() == "".join(json.dumps(item) + "\n" for item in ITEMS)
    assert sorted(os.listdir(folder)) == ["items.jsonl", "videos"]


# -- commands that would write into their input ---------------------------------------------
def out_is_bench(root: Path) -> list[str]:
    return run_args(bench(root), root / "B")


def out_inside_bench(root: Path) -> list[str]:
    return run_args(bench(root), root / "B" / "runs" / "r1")


def out_links_to_bench(root: Path) -> list[str]:
    bench(root)
    (root / "link").symlink_to(root / "B", target_is_directory=True)
    return run_args(root / "B", root / "link")


def data_through_a_link(root: Path) -> list[str]:
    bench(root)
    (root / "link").symlink_to(root / "B", target_is_directory=True)
    return run_args(root / "link", root / "B" / "r1")


def ablate_inside_bench(root: Path) -> list[str]:
    bench(root)
    return ["ablate", "items", "--model", "random", "--data", str(root / "B"), "--out", str(root / "B" / "ablation")]


def merge_into_a_shard(root: Path) -> list[str]:
    bench(root)
    for index in (1, 2):
        prepared_run(root, root / f"s{index}", "--shard", f"{index}/2")
    root.joinpath("before").write_text(digest(root / "s1" / "items.jsonl"))
    return ["merge", str(root / "s1"), str(root / "s2"), "--out", str(root / "s1" / "all")]


def shard_untouched(root: Path) -> None:
    assert digest(root / "s1" / "items.jsonl") == (root / "before").read_text()
    assert not (root / "s1" / "all").exists()


def report_over_the_log(root: Path) -> list[str]:
    bench(root)
    prepared_run(root, root / "r")
    root.joinpath("before").write_text(digest(root / "r" / "items.jsonl"))
    return ["report", str(root / "r"), "--csv", str(root / "r" / "items.jsonl")]


def log_untouched(root: Path) -> None:
    assert digest(root / "r" / "items.jsonl") == (root / "before").read_text()
    assert len(records(root / "r")) == PLANNED


def annotate_inside_bench(root: Path) -> list[str]:
    bench(root)
    return ["build", "annotate", str(root / "B"), "--annotator", "ann", "--frames", "2",
            "--out", str(root / "B" / "page.html")]


IS_INPUT = r"^Error: the output .+ is the input .+; write the output elsewhere$"
INSIDE_INPUT = r"^Error: the output .+ lies inside the input .+; write the output elsewhere$"

# -- the response cache on a disk that fails -----------------------------------------------
FAULT_PATH = os.pathsep.join(filter(None, [os.path.join(TESTS, "sqlite_faults"), os.environ.get("PYTHONPATH")]))


def sqlite_fault(kind: str) -> dict[str, str]:
    """The environment of a row whose response cache fails (tests/sqlite_faults/sitecustomize.py)."""
    return {"PYTHONPATH": FAULT_PATH, "STORES_SQLITE_FAULT": kind}


def warm_cache(root: Path) -> list[str]:
    """A cache holding the first group's answers, then the whole run under the row's fault."""
    bench(root)
    prepared_run(root, root / "warm", "--limit", "1")
    return run_args(root / "B", root / "r")


def new_cache(root: Path) -> list[str]:
    bench(root)
    return run_args(root / "B", root / "r")


def cache_is_a_folder(root: Path) -> list[str]:
    bench(root)
    (root / "cache" / "responses.sqlite").mkdir(parents=True)
    (root / "cache" / "responses.sqlite" / "keep").write_text("mine")
    return run_args(root / "B", root / "r")


def cached_answers(root: Path) -> int:
    with sqlite3.connect(root / "cache" / "responses.sqlite") as db:
        return db.execute("SELECT count(*) FROM responses").fetchone()[0]


def nothing_set_aside(root: Path) -> None:
    assert not [name for name in os.listdir(root / "cache") if ".corrupt-" in name]


def every_answer_recorded(root: Path) -> None:
    assert sorted(r["item"]["id"] for r in records(root / "r")) == ["a1", "a1", "b1", "b1"]
    assert len({r["id"] for r in records(root / "r")}) == PLANNED


def warm_cache_kept(root: Path) -> None:
    """The cache holds what the warm run stored, no more (the fault) and no less (not moved)."""
    nothing_set_aside(root)
    assert cached_answers(root) == FIRST_GROUP
    every_answer_recorded(root)
    ids = {r["id"] for r in records(root / "r")}
    assert {r["id"] for r in records(root / "warm")} < ids


def new_cache_given_up(root: Path) -> None:
    nothing_set_aside(root)
    every_answer_recorded(root)


def folder_left_alone(root: Path) -> None:
    nothing_set_aside(root)
    assert (root / "cache" / "responses.sqlite" / "keep").read_text() == "mine"
    every_answer_recorded(root)


def given_up(reason: str) -> str:
    return (rf"^timefoil: the response cache .+responses\.sqlite cannot be used \(OperationalError: {reason}\); "
            r"going on without it \(answers are still recorded in the run\)$")


def warm_cache_one_answer_cut(root: Path) -> list[str]:
    """The warm cache with one stored answer cut short, as another program writing it might leave it."""
    argv = warm_cache(root)
    with sqlite3.connect(root / "cache" / "responses.sqlite") as db:
        db.execute("UPDATE responses SET value = substr(value, 1, 20) WHERE rowid = (SELECT min(rowid) FROM responses)")
    return argv


def cut_answer_asked_again(root: Path) -> None:
    every_answer_recorded(root)
    with sqlite3.connect(root / "cache" / "responses.sqlite") as db:
        values = [json.loads(v) for (v,) in db.execute("SELECT value FROM responses")]
    assert len(values) == PLANNED and all(isinstance(v, dict) and "answer" in v for v in values)


# -- a run lock that is not the run's own plain file -----------------------------------------
def lock_links_out(root: Path) -> list[str]:
    bench(root)
    (root / "r").mkdir()
    (root / "precious.txt").write_text("a file of someone else's\n")
    (root / "r" / "run.lock").symlink_to(root / "precious.txt")
    return run_args(root / "B", root / "r")


def precious_intact(root: Path) -> None:
    assert (root / "precious.txt").read_text() == "a file of someone else's\n"
    assert (root / "r" / "run.lock").is_symlink() and not (root / "r" / "items.jsonl").exists()


def lock_is_a_fifo(root: Path) -> list[str]:
    bench(root)
    (root / "r").mkdir()
    os.mkfifo(root / "r" / "run.lock")
    return run_args(root / "B", root / "r")


def nothing_run(root: Path) -> None:
    assert not (root / "r" / "items.jsonl").exists() and not (root / "r" / "run.json").exists()


# -- a run.json that does not parse, and shards that differ --------------------------------
def rerun_over_a_cut_run_json(root: Path) -> list[str]:
    bench(root)
    prepared_run(root, root / "r")
    text = (root / "r" / "run.json").read_text()
    (root / "r" / "run.json").write_text(text[:len(text) // 2])
    root.joinpath("before").write_text(digest(root / "r" / "run.json") + digest(root / "r" / "items.jsonl"))
    return run_args(root / "B", root / "r")


def run_left_as_it_was(root: Path) -> None:
    assert digest(root / "r" / "run.json") + digest(root / "r" / "items.jsonl") == (root / "before").read_text()


def made_with(code: str) -> dict[str, str]:
    """The environment of a shard made by a timefoil changed as ``code`` changes it (a sitecustomize)."""
    folder = tempfile.mkdtemp(prefix="timefoil-other-")
    Path(folder, "sitecustomize.py").write_text(code)
    return {"PYTHONPATH": os.pathsep.join(filter(None, [folder, os.environ.get("PYTHONPATH")]))}


# another timefoil, whose entailment question is worded otherwise (same ids, same items)
REWORDED = made_with("""from dataclasses import replace
from timefoil.benchmarks.base import Benchmark

prompts_for = Benchmark.prompts_for


def reworded(self, variant, protocol=None):
    return replace(prompts_for(self, variant, protocol), entailment="Caption: {caption}\\nIs it what the video shows?")


Benchmark.prompts_for = reworded
""")
# numpy 1.0.0 where the first shard had today's
OLD_NUMPY = made_with("""from importlib import metadata

version = metadata.version
metadata.version = lambda name: "1.0.0" if name == "numpy" else version(name)
""")


def shards(root: Path, *extra, second: dict[str, str] | None = None, between=None) -> list[str]:
    """Shards 1/2 and 2/2 of one command; ``second`` made in another environment, ``between``
    done to the benchmark folder after the first."""
    bench(root)
    prepared_run(root, root / "s1", "--shard", "1/2", *extra)
    if between:
        between(root)
    prepared_run(root, root / "s2", "--shard", "2/2", *extra, env=second)
    return ["merge", str(root / "s1"), str(root / "s2"), "--out", str(root / "all")]


def caption_edited(root: Path) -> None:
    items = root / "B" / "items.jsonl"
    items.write_text(items.read_text().replace("p then q", "p, and then q"))


def run_json_an_array(root: Path) -> list[str]:
    argv = shards(root)
    (root / "s1" / "run.json").write_text("[]\n")
    return argv


def report_over_a_run_json_without_config(root: Path) -> list[str]:
    bench(root)
    prepared_run(root, root / "r")
    (root / "r" / "run.json").write_text('{"created": "2026-01-01T00:00:00"}\n')
    root.joinpath("before").write_text(digest(root / "r" / "run.json") + digest(root / "r" / "items.jsonl"))
    return ["report", str(root / "r")]


def nothing_merged(root: Path) -> None:
    assert not (root / "all").exists()


def merged_with_both_versions(root: Path) -> None:
    """Each shard's versions are kept; numpy, on which they differ, is no longer named at the top."""
    merged = json.loads((root / "all" / "run.json").read_text())
    mine = json.loads((root / "s1" / "run.json").read_text())["versions"]
    assert [s["versions"]["numpy"] for s in merged["merged"]["shards"]] == [mine["numpy"], "1.0.0"]
    assert all(s["git_revision"] == merged["merged"]["shards"][0]["git_revision"] for s in merged["merged"]["shards"])
    assert merged["merged"]["versions_differ"] == {"numpy": {mine["numpy"]: ["1/2"], "1.0.0": ["2/2"]}}
    assert "numpy" not in merged["versions"] and merged["versions"]["timefoil"] == mine["timefoil"]
    assert len(merged["warnings"]) == 1 and "numpy" in merged["warnings"][0]
    assert len(records(root / "all")) == PLANNED


OTHER_RUN = r"^Error: .+s2 is a shard of another run than .+s1 \({}\); only shards of one configuration merge$"

def cache_root_a_file(root: Path) -> list[str]:
    """The row's TIMEFOIL_CACHE (``root/cache``) made a file: every video's frames used to warn
    twice that their cache entry was damaged, and the run went on."""
    bench(root)
    (root / "cache").write_text("notes\n")
    return run_args(root / "B", root / "r")


def cache_file_alone(root: Path) -> None:
    """Said before any work: no run folder, and the file as it was."""
    assert (root / "cache").read_text() == "notes\n" and not (root / "r").exists()


FAULTS = [
    Fault("run --out is the benchmark folder", out_is_bench, 1, IS_INPUT, bench_untouched),
    Fault("run --out inside the benchmark folder", out_inside_bench, 1, INSIDE_INPUT, bench_untouched),
    Fault("run --out a link to the benchmark folder", out_links_to_bench, 1, IS_INPUT, bench_untouched),
    Fault("run --data through a link, --out inside the folder", data_through_a_link, 1, INSIDE_INPUT,
          bench_untouched),
    Fault("ablate --out inside the benchmark folder", ablate_inside_bench, 1, INSIDE_INPUT, bench_untouched),
    Fault("merge --out inside one of its shards", merge_into_a_shard, 1, INSIDE_INPUT, shard_untouched),
    Fault("report --csv over a run's items.jsonl", report_over_the_log, 1, IS_INPUT, log_untouched),
    Fault("build annotate --out inside the benchmark folder", annotate_inside_bench, 1, INSIDE_INPUT,
          bench_untouched),
    Fault("response cache on a full disk", new_cache, 0, given_up("database or disk is full"), new_cache_given_up,
          env=sqlite_fault("full")),
    Fault("response cache on a read-only mount", warm_cache, 0, given_up("attempt to write a readonly database"),
          warm_cache_kept, env=sqlite_fault("read-only")),
    Fault("response cache locked by another writer", warm_cache, 0, given_up("database is locked"),
          warm_cache_kept, env=sqlite_fault("locked")),
    Fault("response cache path is a folder", cache_is_a_folder, 0, given_up("unable to open database file"),
          folder_left_alone),
    Fault("response cache holding an answer cut short", warm_cache_one_answer_cut, 0,
          r"^timefoil: the response cache .+responses\.sqlite holds 1 stored answers that are not timefoil's JSON; "
          r"asking those again \(their entries are replaced\)$", cut_answer_asked_again),
    Fault("TIMEFOIL_CACHE naming a file", cache_root_a_file, 1,
          r"^Error: the cache folder .+/cache \(TIMEFOIL_CACHE\) is a file, not a folder: set TIMEFOIL_CACHE to a "
          r"folder$", cache_file_alone),
    Fault("run.lock is a link to another file", lock_links_out, 1,
          r"^Error: .+run\.lock is a symbolic link; a run's lock file must be its own plain file", precious_intact),
    Fault("run.lock is a fifo", lock_is_a_fifo, 1, r"^Error: .+run\.lock is not a regular file", nothing_run),
    Fault("rerun over a run.json cut short", rerun_over_a_cut_run_json, 1,
          r"^Error: .+/r/run\.json: not a readable run configuration \(.+ \(cut short\?\)\); it is written whole",
          run_left_as_it_was),
    Fault("merge of shards asked in other words", lambda t: shards(t, "--protocol", "entailment", second=REWORDED),
          1, OTHER_RUN.format("the prompts asked differ"), nothing_merged),
    Fault("merge of shards with items.jsonl edited between them", lambda t: shards(t, between=caption_edited), 1,
          OTHER_RUN.format("the items as loaded differ; the prompts asked differ"), nothing_merged),
    Fault("merge of shards made with another numpy", lambda t: shards(t, second=OLD_NUMPY), 0,
          r"^timefoil: warning: the shards were made with different versions: numpy \S+ \(shard 1/2\) vs 1\.0\.0 "
          r"\(shard 2/2\); their answers may differ for that reason alone$", merged_with_both_versions),
    Fault("report over a run.json without its configuration", report_over_a_run_json_without_config, 1,
          r"^Error: .+/r/run\.json: not a readable run configuration \(no 'config' naming its benchmark, model and "
          r"protocol\)$", run_left_as_it_was),
    Fault("merge of a shard whose run.json holds an array", run_json_an_array, 1,
          r"^Error: .+/s1/run\.json: not a readable run configuration \(it holds an array, not an object\)$",
          nothing_merged),
]


@pytest.mark.parametrize("fault", FAULTS, ids=str)
def test_fault(fault, tmp_path):
    run_fault(fault, tmp_path)


# -- the same faults in one process, where they can be made exactly ----------------------------
def test_an_output_is_refused_only_when_it_is_or_lies_inside_an_input(tmp_path):
    from timefoil.core.paths import OutputInsideInput, refuse_output_inside

    data = tmp_path / "B"
    data.mkdir()
    (tmp_path / "link").symlink_to(data, target_is_directory=True)
    for beside in (tmp_path / "B2", tmp_path / "Bx" / "r", tmp_path, None):  # a shared prefix is not a folder
        refuse_output_inside(str(beside) if beside else None, [str(data), None])
    for inside in (data, data / "r", tmp_path / "link" / "r", tmp_path / "B2" / ".." / "B" / "r"):
        with pytest.raises(OutputInsideInput, match=f"the output {inside} (is|lies inside) the input {data}"):
            refuse_output_inside(str(inside), [str(tmp_path / "other"), str(data)])


def warm_responses(path: Path, count: int = 300) -> dict[str, dict]:
    """A healthy cache of ``count`` answers (enough pages that more need new ones)."""
    from timefoil.execution.store import ResponseCache

    values = {f"k{i:04d}": {"answer": {"raw": "A" * 200}, "frames": {"n": i}} for i in range(count)}
    cache = ResponseCache(str(path))
    cache.put_many(values)
    cache.close()
    return values


def corrupt_pages(path: Path) -> None:
    """Every page after the header page overwritten: SQLite reads 'database disk image is malformed'."""
    size = path.stat().st_size
    with open(path, "r+b") as handle:
        handle.seek(4096)
        handle.write(b"\x07" * (size - 4096))


class IOErrorOnWrite:
    """A connection whose writes fail as a dying disk's would (no way to make one for real)."""

    def __init__(self, db):
        self.db = db

    def execute(self, sql, *args):
        return self.db.execute(sql, *args)

    def executemany(self, sql, rows):
        raise sqlite3.OperationalError("disk I/O error")

    def commit(self):
        self.db.commit()

    def close(self):
        self.db.close()


def test_only_a_file_that_is_not_a_database_is_set_aside(tmp_path, monkeypatch, capsys):
    """Two kinds of corruption are moved aside and a new cache works; four faults of the disk
    leave the file as it is, are said once, and turn the cache into misses, never a crash."""
    from timefoil.execution import store

    connect = sqlite3.connect
    holders = []

    def read_only(path, **kwargs):
        return connect(f"file:{path}?mode=ro", uri=True, **kwargs)

    def lock(path):
        holder = connect(path, isolation_level=None)
        holder.execute("BEGIN EXCLUSIVE")
        holders.append(holder)

    def full(cache):
        cache.db.execute("PRAGMA max_page_count=%d" % cache.db.execute("PRAGMA page_count").fetchone()[0])

    faults = {  # kind -> (set up before opening, set up after opening)
        "full": (None, full),
        "read-only": (lambda path: monkeypatch.setattr(store.sqlite3, "connect", read_only), None),
        "locked": (lock, None),
        "I/O error": (None, lambda cache: setattr(cache, "db", IOErrorOnWrite(cache.db))),
    }
    fresh = {f"new{i}": {"answer": {"raw": "B" * 300}, "frames": {"n": 0}} for i in range(40)}
    for kind, (before, after) in faults.items():
        path = tmp_path / kind / "responses.sqlite"
        values = warm_responses(path)
        if before:
            before(str(path))
        capsys.readouterr()
        cache = store.ResponseCache(str(path), timeout=0.05)
        if after:
            after(cache)
        assert cache.get_many(["k0001", "nope"]) == {"k0001": values["k0001"]}, kind  # reads still work
        cache.put_many(fresh)
        cache.put_many(fresh)
        assert cache.get_many(list(values)) == {}, kind  # from the first failure on: misses
        cache.close()
        said = capsys.readouterr().err
        assert said.count("cannot be used") == 1 and "going on without it" in said, (kind, said)
        monkeypatch.undo()
        for holder in holders:
            holder.rollback()
        assert not [name for name in os.listdir(path.parent) if ".corrupt-" in name], kind
        with sqlite3.connect(path) as db:
            assert db.execute("SELECT count(*) FROM responses").fetchone()[0] == len(values), kind
    for kind, spoil in {"not a database": lambda p: p.write_bytes(b"no tables here " * 400),
                        "malformed": corrupt_pages}.items():
        path = tmp_path / kind / "responses.sqlite"
        warm_responses(path)
        spoil(path)
        cache = store.ResponseCache(str(path))
        assert cache.get_many(["k0001"]) == {}
        cache.put_many({"k": {"answer": {}, "frames": {}}})
        assert cache.get_many(["k"]) == {"k": {"answer": {}, "frames": {}}}, kind
        cache.close()
        assert "moved it to" in capsys.readouterr().err, kind
        assert [n for n in os.listdir(path.parent) if n.startswith("responses.sqlite.corrupt-")], kind


def frame_cache(tmp_path):
    from timefoil.video.diskcache import FrameDiskCache

    return FrameDiskCache(str(tmp_path / "cache"), budget=10**9)


FRAMES = np.arange(2 * 4 * 4 * 3, dtype=np.uint8).reshape(2, 4, 4, 3)


@pytest.mark.parametrize("other", ["clear", "prune"])
def test_a_clear_or_prune_between_write_and_rename_leaves_the_writer_whole(tmp_path, monkeypatch, other):
    """Another process's `cache --clear` (or prune to nothing) runs while this one has written
    its temporary file and not yet renamed it: the writer's file is not an entry to remove."""
    from timefoil.video import diskcache

    cache, replace = frame_cache(tmp_path), os.replace
    cache.save("aa" + "0" * 30, {"array": FRAMES})  # an older entry: the other process does remove it

    def racing(source, target):
        elsewhere = diskcache.FrameDiskCache(str(tmp_path / "cache"), budget=0)
        elsewhere.clear() if other == "clear" else elsewhere.prune(0)
        replace(source, target)

    monkeypatch.setattr(diskcache.os, "replace", racing)
    cache.save("bb" + "1" * 30, {"array": FRAMES + 1})
    monkeypatch.undo()
    assert cache.load("aa" + "0" * 30) is None
    assert np.array_equal(cache.load("bb" + "1" * 30)[0]["array"], FRAMES + 1)
    assert cache.usage()[1] == 1


def test_a_store_that_fails_is_a_miss_said_at_most_once(tmp_path, monkeypatch, capsys):
    from timefoil.video import diskcache

    cache = frame_cache(tmp_path)

    def gone(source, target):
        os.remove(source)  # removed under the writer by a cleaner that does not know the rule
        raise FileNotFoundError(2, "No such file or directory", source)

    monkeypatch.setattr(diskcache.os, "replace", gone)
    cache.save("cc" + "2" * 30, {"array": FRAMES})
    assert capsys.readouterr().err == ""  # gone meanwhile: just a miss

    def full(handle, key, arrays, facts):
        handle.write(diskcache.MAGIC)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(diskcache, "write_entry", full)
    cache.save("dd" + "3" * 30, {"array": FRAMES})
    cache.save("ee" + "4" * 30, {"array": FRAMES})
    monkeypatch.undo()
    assert capsys.readouterr().err.count("No space left on device") == 1
    assert [cache.load(k * 2 + d * 30) for k, d in (("c", "2"), ("d", "3"), ("e", "4"))] == [None] * 3
    assert [name for _, _, names in os.walk(cache.root) for name in names] == []  # no temporary file left


def test_an_entry_removed_after_it_was_read_is_still_a_hit(tmp_path, monkeypatch, capsys):
    from timefoil.video import diskcache

    cache = frame_cache(tmp_path)
    cache.save("ff" + "5" * 30, {"array": FRAMES})

    def removed(path, *args):
        os.remove(path)  # a prune in another process, between the read and the touch
        raise FileNotFoundError(2, "No such file or directory", path)

    monkeypatch.setattr(diskcache.os, "utime", removed)
    assert np.array_equal(cache.load("ff" + "5" * 30)[0]["array"], FRAMES)
    assert "damaged" not in capsys.readouterr().err


def test_a_hard_linked_lock_is_refused_and_its_other_name_kept(tmp_path):
    from timefoil.execution.store import LOCK, RunLock, RunLockError

    (tmp_path / "r").mkdir()
    (tmp_path / "notes.txt").write_text("keep\n")
    os.link(tmp_path / "notes.txt", tmp_path / "r" / LOCK)
    with pytest.raises(RunLockError, match=r"run\.lock is a hard link to another file"):
        with RunLock(str(tmp_path / "r")):
            pass
    assert (tmp_path / "notes.txt").read_text() == "keep\n"
    (tmp_path / "s").mkdir()
    with RunLock(str(tmp_path / "s")):  # the directory's own lock file: made, and holds the writer's PID
        assert (tmp_path / "s" / LOCK).read_text() == str(os.getpid())


def test_a_cache_root_is_checked_once(tmp_path, monkeypatch, capsys):
    """A path under a file is refused naming both; a folder that cannot be written is one line,
    once a process, and the frame store then writes nothing (its entries are still read); a
    frame cache under a file is a plain miss, never a damaged entry."""
    from timefoil.core import paths
    from timefoil.video.diskcache import FrameDiskCache

    monkeypatch.setattr(paths, "_checked", {})
    (tmp_path / "file").write_text("x")
    with pytest.raises(paths.CacheRootUnusable, match=r"^the cache folder .+/file/sub \(--cache-dir\) lies under "
                       r"the file .+/file, not a folder: set --cache-dir to a folder$"):
        paths.cache_root(str(tmp_path / "file" / "sub"))
    assert FrameDiskCache(str(tmp_path / "file")).load("ab" * 16) is None
    assert capsys.readouterr().err == ""
    locked = str(tmp_path / "locked")
    os.mkdir(locked)
    real = os.access
    monkeypatch.setattr(paths.os, "access", lambda path, mode: path != locked and real(path, mode))
    assert paths.cache_root(locked) == paths.cache_root(locked) == locked
    said = capsys.readouterr().err.splitlines()
    assert said == [f"timefoil: the cache folder {locked} (--cache-dir) cannot be written; what it holds is read, "
                    "and new frames and answers are not kept"]
    assert not paths.cache_writable(locked) and paths.cache_writable(str(tmp_path))
