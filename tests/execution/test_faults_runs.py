"""Faults of a run directory and of the process writing it: answers edited by hand in items.jsonl,
a merge into a folder that is being written, a merge cut short between its log and its run.json,
Ctrl-C while timefoil starts, and a full disk under the run. Faults are made inside the timefoil
process by a sitecustomize module (``HOOK``) on its PYTHONPATH, chosen by ``RUNS_FAULT``."""
from __future__ import annotations

import functools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

from faults import Fault, cli, run_fault

ITEMS = [{"id": "a1", "group": "a", "test": "order", "video": "videos/a.mp4", "texts": ["x then y", "y then x"],
          "target": 0},
         {"id": "b1", "group": "b", "test": "order", "video": "videos/b.mp4", "texts": ["p then q", "q then p"],
          "target": 1}]
# similarity asks one request per (video, text): 2 items x 2 texts; a shard of 2 holds one video's 2
PLANNED = 4

HOOK = '''"""Faults made inside a timefoil process (tests/execution/test_faults_runs.py)."""
import builtins
import os
import sys

KIND, _, ARG = os.environ.get("RUNS_FAULT", "").partition(":")


def ctrl_c():
    os.kill(os.getpid(), 2)  # SIGINT, by number: the signal module may be the one named
    for _ in range(10 ** 6):  # Python raises the KeyboardInterrupt in here
        pass


class Dropped:
    def __del__(self):  # where Python can only print an exception ("Exception ignored in")
        ctrl_c()


class Named:
    def __set_name__(self, owner, name):  # where Python 3.11 raises it as a RuntimeError
        ctrl_c()


class CtrlC:
    """SIGINT to this process as the module ARG is first imported (the moment is the same in
    every try, where a timer's would not be): raised there, in a __del__ or a __set_name__, or
    swallowed by a bare except as some libraries' imports do."""
    fired = False

    def find_spec(self, name, path=None, target=None):
        if name == ARG and not self.fired:
            self.fired = True
            if KIND == "ctrl-c-at-import":
                ctrl_c()
            elif KIND == "ctrl-c-in-del-at-import":
                Dropped()
            elif KIND == "ctrl-c-in-set-name-at-import":
                type("Owner", (), {"named": Named()})
            else:
                try:
                    ctrl_c()
                except:  # noqa: E722
                    pass
        return None


_open, _replace, opened = builtins.open, os.replace, []


def open_on_a_full_disk(file, mode="r", *args, **kwargs):
    """Writes to a file named NAME fail as on a full disk (the kernel's /dev/full answers them
    with ENOSPC) once AFTER of its opens have succeeded."""
    name, _, after = ARG.partition("@")
    if os.path.basename(str(file)) == name and set(mode) & set("aw"):
        opened.append(file)
        if len(opened) > int(after or 0):
            return _open("/dev/full", mode, *args, **kwargs)
    return _open(file, mode, *args, **kwargs)


def replace_then_killed(src, dst, *args, **kwargs):
    """The process is killed (SIGKILL) once a file named ARG is renamed into place."""
    _replace(src, dst, *args, **kwargs)
    if os.path.basename(str(dst)) == ARG:
        os.kill(os.getpid(), 9)


if KIND.startswith("ctrl-c-"):
    sys.meta_path.insert(0, CtrlC())
elif KIND == "disk-full":
    builtins.open = open_on_a_full_disk
elif KIND == "killed-after-replace":
    os.replace = replace_then_killed
'''
HOOK_DIR = tempfile.mkdtemp(prefix="timefoil-runs-faults-")
Path(HOOK_DIR, "sitecustomize.py").write_text(HOOK)


def fault(kind: str) -> dict[str, str]:
    return {"PYTHONPATH": os.pathsep.join(filter(None, [HOOK_DIR, os.environ.get("PYTHONPATH")])),
            "RUNS_FAULT": kind}


# -- a tiny benchmark, a run of it and its two shards, made once and copied into each row ----
@functools.cache
def made() -> Path:
    from timefoil.video import write_video

    root = Path(tempfile.mkdtemp(prefix="timefoil-runs-"))
    (root / "B" / "videos").mkdir(parents=True)
    for name, shade in (("a", 40), ("b", 160)):
        write_video(str(root / "B" / "videos" / f"{name}.mp4"),
                    [np.full((16, 16, 3), shade + 8 * t, np.uint8) for t in range(6)], fps=6)
    (root / "B" / "items.jsonl").write_text("".join(json.dumps(item) + "\n" for item in ITEMS))
    for out, extra in (("r", ()), ("s1", ("--shard", "1/2")), ("s2", ("--shard", "2/2"))):
        done = cli(*run_args(root, root / out), *extra, env={"TIMEFOIL_CACHE": str(root / "cache")})
        assert done.returncode == 0, done.stderr
    # one timefoil made both shards, though a commit to this checkout between their runs would
    # give them two revisions, which merge warns of
    first = json.loads((root / "s1" / "run.json").read_text())
    second = json.loads((root / "s2" / "run.json").read_text())
    (root / "s2" / "run.json").write_text(json.dumps({**second, "git_revision": first["git_revision"]}, indent=2))
    return root


def run_args(root: Path, out: Path) -> list[str]:
    return ["run", "items", "--model", "random", "--data", str(root / "B"), "--out", str(out), "--no-progress"]


def copied(root: Path, *names: str) -> None:
    for name in names:
        shutil.copytree(made() / name, root / name)


def records(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "items.jsonl").read_text().splitlines()]


def whole(run_dir: Path) -> None:
    """``check`` finds nothing wrong: every planned request answered once."""
    from timefoil.commands.checking import check_run

    problems, counts = check_run(str(run_dir))
    assert problems == [] and counts["records"] == counts["planned"] == PLANNED, (problems, counts)


# -- answers edited by hand -----------------------------------------------------------------
def edited(field: str, value) -> "callable":
    """The run with one field of its second record set to ``value`` (``answer.raw``: nested)."""
    def prepare(root: Path) -> None:
        copied(root, "r")
        lines = (root / "r" / "items.jsonl").read_text().splitlines()
        record = json.loads(lines[1])
        *outer, last = field.split(".")
        inner = record
        for key in outer:
            inner = inner[key]
        inner[last] = value
        lines[1] = json.dumps(record)
        (root / "r" / "items.jsonl").write_text("\n".join(lines) + "\n")
        (root / "before").write_text((root / "r" / "items.jsonl").read_text())
    return prepare


def score_edited(field: str, value):
    def prepare(root: Path) -> list[str]:
        edited(field, value)(root)
        return ["score", str(root / "r")]
    return prepare


def check_edited(field: str, value):
    def prepare(root: Path) -> list[str]:
        edited(field, value)(root)
        return ["check", str(root / "r")]
    return prepare


def edit_named(says: str):
    """Nothing was changed, and ``check`` lists the record first, in these words."""
    def after(root: Path) -> None:
        from timefoil.commands.checking import check_run

        assert (root / "r" / "items.jsonl").read_text() == (root / "before").read_text()
        problems, _ = check_run(str(root / "r"))
        assert problems[0] == f"items.jsonl line 2 is not a record timefoil wrote ({says}): correct or remove it"
    return after


def refused(says: str) -> str:
    return (rf"^Error: .+/r/items\.jsonl line 2: not a record timefoil wrote \({re.escape(says)}\); correct or remove "
            r"that line \(timefoil check .+/r lists every such line\)$")


# -- merges -----------------------------------------------------------------------------------
def merge_args(root: Path) -> list[str]:
    return ["merge", str(root / "s1"), str(root / "s2"), "--out", str(root / "all")]


HELD: dict[Path, object] = {}  # the locks this process holds for a row, released by its after()


def merge_into_a_folder_being_written(root: Path) -> list[str]:
    """Another process (this one) writes the output folder: it holds run.lock, as a merge or run does."""
    from timefoil.execution.store import RunLock

    copied(root, "s1", "s2")
    (root / "all").mkdir()
    HELD[root] = RunLock(str(root / "all")).__enter__()
    return merge_args(root)


def nothing_merged_while_held(root: Path) -> None:
    HELD.pop(root).__exit__(None, None, None)
    assert sorted(os.listdir(root / "all")) == []  # nothing merged; the released lock leaves with its holder


def merge_cut_short(root: Path) -> list[str]:
    """A merge killed after its log is in place and before run.json says the run is whole."""
    copied(root, "s1", "s2")
    cut = cli(*merge_args(root), env=fault("killed-after-replace:items.jsonl"))
    assert cut.returncode == -signal.SIGKILL, cut.stderr
    assert len(records(root / "all")) == PLANNED
    return merge_args(root)


def score_after_a_merge_cut_short(root: Path) -> list[str]:
    merge_cut_short(root)
    return ["score", str(root / "all")]


def merged_whole(root: Path) -> None:
    whole(root / "all")
    assert "merging" not in json.loads((root / "all" / "run.json").read_text())
    assert sorted(r["id"] for r in records(root / "all")) == sorted(r["id"] for r in records(made() / "r"))


def merge_left_as_cut(root: Path) -> None:
    assert json.loads((root / "all" / "run.json").read_text())["merging"].startswith("timefoil merge ")
    assert len(records(root / "all")) == PLANNED


# -- a full disk ------------------------------------------------------------------------------
def run_on_a_full_disk(root: Path) -> list[str]:
    return run_args(made(), root / "new")


def first_answer_kept_and_resumed(root: Path) -> None:
    """The answer written before the disk filled is kept; the same command finishes the run."""
    assert len(records(root / "new")) == 1
    again = cli(*run_args(made(), root / "new"), env={"TIMEFOIL_CACHE": str(root / "cache")})
    assert again.returncode == 0, again.stderr
    whole(root / "new")


def nothing_recorded(root: Path) -> None:
    assert sorted(os.listdir(root / "new")) == []  # nothing recorded, and the lock left with the run


def score_run_copied(root: Path) -> list[str]:
    copied(root, "r")
    return ["score", str(root / "r")]


CTRL_C = r"^timefoil: interrupted \(Ctrl-C\); a run keeps every answer it recorded and resumes from there"
FULL = r"No space left on device\); free some space on its disk \(or write to another folder\), then run the same"

FAULTS = [
    Fault("score with answer.raw edited to a number", score_edited("answer.raw", 5), 1,
          refused("answer.raw is a number (5), not a string or null"),
          edit_named("answer.raw is a number (5), not a string or null")),
    Fault("score with answer.probs edited to hold a string", score_edited("answer.probs", {"yes": "0.9"}), 1,
          refused('answer.probs.yes is a string ("0.9"), not a number or null')),
    Fault("score with item.target edited to a string", score_edited("item.target", "1"), 1,
          refused('item.target is a string ("1"), not a whole number')),
    # 3 records left of 4: the edited one, its item's other request and the planned request
    Fault("check with answer.error edited to an object", check_edited("answer.error", {"why": "x"}), 1,
          r"^Error: .+/r: 3 problem\(s\) \(3 records, 3 requests, 2 items, 0 errors, 4 planned\)$",
          edit_named('answer.error is an object ({"why": "x"}), not a string or null')),
    Fault("merge into a folder another process writes", merge_into_a_folder_being_written, 1,
          rf"^Error: .+/all is being written by process {os.getpid()} \(run\.lock\); wait for it to finish or stop "
          r"it, then run again$", nothing_merged_while_held),
    Fault("merge again after one cut between its log and run.json", merge_cut_short, 0,
          r"^timefoil: .+/all holds a merge that was cut short before it finished; writing it again$", merged_whole),
    Fault("score of a merge cut between its log and run.json", score_after_a_merge_cut_short, 1,
          r"^Error: .+/all holds a merge that was cut short before it finished; run it again to finish it: "
          r"timefoil merge .+/s1 .+/s2 --out .+/all$", merge_left_as_cut),
    # SIGINT at a fixed import of the command's first moments: the package's own imports, the entry point's
    Fault("Ctrl-C as timefoil's package loads", lambda t: ["list"], 130, CTRL_C,
          env=fault("ctrl-c-at-import:timefoil.core.paths")),
    Fault("Ctrl-C as the entry point loads", lambda t: ["list"], 130, CTRL_C, env=fault("ctrl-c-at-import:signal")),
    # Python can only print a KeyboardInterrupt raised in a __del__, and a library may swallow one
    Fault("Ctrl-C that lands in a __del__ as the commands load", lambda t: ["list"], 130, CTRL_C,
          env=fault("ctrl-c-in-del-at-import:click")),
    Fault("Ctrl-C swallowed by a bare except as the commands load", lambda t: ["list"], 130, CTRL_C,
          env=fault("ctrl-c-swallowed-at-import:click")),
    Fault("Ctrl-C in a class's __set_name__ as the commands load", lambda t: ["list"], 130, CTRL_C,
          env=fault("ctrl-c-in-set-name-at-import:click")),
    Fault("Ctrl-C in a class's __set_name__ as score loads its report", score_run_copied, 130, CTRL_C,
          env=fault("ctrl-c-in-set-name-at-import:timefoil.reports.report")),
    Fault("run on a disk that fills after the first answer", run_on_a_full_disk, 1,
          rf"^Error: .+/new/items\.jsonl: could not write the run's answers \({FULL} command again: it resumes "
          r"from the last answer recorded$", first_answer_kept_and_resumed, env=fault("disk-full:items.jsonl@1")),
    Fault("run on a full disk from its run.json", run_on_a_full_disk, 1,
          rf"^Error: .+/new/run\.json: could not write it \({FULL} command again$", nothing_recorded,
          env=fault("disk-full:run.json.tmp@0")),
]


@pytest.mark.parametrize("fault", FAULTS, ids=str)
def test_fault(fault, tmp_path):
    result = run_fault(fault, tmp_path)
    if fault.exit_code == 130:  # Ctrl-C says one line and nothing else
        assert len([line for line in result.stderr.splitlines() if line.strip()]) == 1, result.stderr


def test_a_cached_answer_edited_to_another_kind_is_asked_again(tmp_path, capsys):
    """The response cache holds what records hold: an answer whose field is of another kind is
    asked again, as one that is not JSON is; a judge's verdict (no "answer") is kept."""
    from timefoil.execution.store import ResponseCache

    cache = ResponseCache(str(tmp_path / "responses.sqlite"))
    answer = {"raw": "yes", "score": None, "probs": {"yes": 0.7, "no": 0.2}, "error": None, "latency": 0.1, "meta": {}}
    cache.put_many({"kept": {"answer": answer, "frames": {"n": 8}},
                    "edited": {"answer": {**answer, "probs": {"yes": "0.7"}}, "frames": {"n": 8}},
                    "verdict": {"raw": "A", "error": None}})
    assert sorted(cache.get_many(["kept", "edited", "verdict"])) == ["kept", "verdict"]
    assert "holds 1 stored answers that are not timefoil's JSON; asking those again" in capsys.readouterr().err
    cache.close()


# -- Ctrl-C at any moment, sent as a terminal sends it ----------------------------------------
def _default_sigint() -> None:
    """The child takes Ctrl-C as an interactive shell's child does, even where this suite was
    started with SIGINT ignored (a background job), which the child would inherit."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _before_timefoil_runs(stderr: str) -> bool:
    """The interpreter's own account of a Ctrl-C that came before timefoil's entry point ran,
    where no code of timefoil can catch it: while CPython starts (its streams, site, runpy, its
    look at the script as a zip archive, setting __main__'s loader) or imports the packages on
    the way to the entry point, it prints the KeyboardInterrupt, with or without a traceback,
    and ends or goes on. Every frame it shows is CPython's (the import system, site, a .pth
    line), the console script's, or one of timefoil's module-level lines that run before
    ``run()``: the import lines of the packages' ``__init__`` and of ``cli/__main__``, and the
    entry module's definitions and class body (not an import: it imports nothing the
    interpreter has not loaded). A frame anywhere else in timefoil is a Ctrl-C it failed to catch."""
    from timefoil.cli import entry

    cli = os.path.dirname(entry.__file__)
    package = os.path.dirname(cli)
    early = {os.path.join(package, "__init__.py"), os.path.join(cli, "__init__.py"), os.path.join(cli, "__main__.py")}
    frames = re.findall(r'File "([^"]+)", line \d+, in (\S+)\n(?: {4}(.*)\n)?', stderr)
    return "KeyboardInterrupt" in stderr and all(
        not path.startswith(package + os.sep) or path in early or
        (path == entry.__file__ and where in ("<module>", "Interrupted") and not line.startswith(("import ", "from ")))
        for path, where, line in frames)


def test_ctrl_c_in_the_first_tenth_of_a_second_exits_130_with_one_line_and_no_traceback(tmp_path):
    script = os.path.join(os.path.dirname(sys.executable), "timefoil")
    commands = [[sys.executable, "-m", "timefoil.cli", "list"]]
    if os.path.exists(script):  # the console script, as a user types it
        commands.append([script, "list"])
    env = {**os.environ, "TIMEFOIL_THREADS": "1", "OMP_NUM_THREADS": "1"}
    seen: dict[str, int] = {}
    for delay in (0.0, 0.01, 0.02, 0.03, 0.05, 0.1):
        for command in commands:
            for _ in range(2):
                child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                                         cwd=tmp_path, start_new_session=True, preexec_fn=_default_sigint)
                time.sleep(delay)
                child.send_signal(signal.SIGINT)
                try:
                    _, stderr = child.communicate(timeout=60)
                finally:
                    child.kill()
                said = f"{command[1:]} at {delay} s: exit {child.returncode}\n{stderr[-3000:]}"
                if child.returncode == -signal.SIGINT and not stderr:
                    outcome = "ended by the signal before the interpreter took it over"  # a shell shows 130 too
                elif child.returncode == 130 and stderr.count("\n") == 1 and re.search(CTRL_C, stderr):
                    outcome = "130 and one line"
                else:
                    assert _before_timefoil_runs(stderr), said
                    outcome = "the interpreter's own, before timefoil ran"
                seen[outcome] = seen.get(outcome, 0) + 1
    # most tries reach timefoil: every one at 0.1 s, while `list` imports its commands, on an idle machine
    assert seen.get("130 and one line", 0) >= len(commands) * 2, seen
