"""Fault rows for plugins: a model whose answers are not answers, and packages that misbehave
while timefoil loads them. Each row installs its own package (module + dist-info, what pip
writes) in a folder of its own on the PYTHONPATH of the command it runs.

A bad answer (NaN or infinite score, no score, a float instead of an Answer, a probability
beyond 1, too few answers) is that request's model error naming the model, its method and what
was wrong, counted in the summary: the run exits 3. A plugin that takes a built-in name is
refused; one that exits or is interrupted while it is imported is named and skipped; one whose
loader exits is a one-line refusal of the run. A plugin whose batches fail (any exception, or
out of GPU memory) has its requests asked one at a time, each fallback said in one line and
counted in run.json."""
from __future__ import annotations

import atexit
import json
import os
import re
import shutil
import tempfile
from pathlib import Path

import pytest

from faults import Fault, run_fault
from helpers import cli, install_package, run_records

from timefoil import score_run
from timefoil.synth import generate

# One folder per row, under one folder per test process: a row's environment is fixed when the
# table is built, before pytest hands out tmp_path.
SITES = Path(tempfile.gettempdir()) / f"timefoil-plugin-sites-{os.getpid()}"
atexit.register(shutil.rmtree, SITES, True)

MISBEHAVING = '''
import asyncio
import sys

from timefoil.models import ModelLoader
from timefoil.models.base import Model
from timefoil.models.requests import Answer

def fails_in_batches(error):
    """Answers one request at a time; a batch of more raises ``error()``. Each call's size is
    logged beside the package, for the row to count the failed batches itself."""
    def reply(requests):
        import os

        with open(os.path.join(os.path.dirname(os.path.dirname(__file__)), "batches.log"), "a") as log:
            log.write(f"{len(requests)} ")
        if len(requests) > 1:
            raise error()
        return [Answer(score=1.0)]
    return reply


class Stopped(BaseException):
    pass


class Unprintable(Exception):
    def __str__(self):
        raise ValueError("no message today")


# a window title set by an OSC sequence, a newline that would split the line, 1.1 MB of text
ESCAPES = "\\x1b]0;pwned\\x07bad\\nname \\x1b[2J" + "x" * 1_100_000


def raises(error):
    raise error


def out_of_memory():
    import torch

    return torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 3.00 GiB")


REPLIES = {
    "ok": lambda requests: [Answer(score=1.0) for _ in requests],
    "batch-fails": fails_in_batches(lambda: RuntimeError("an illegal memory access was encountered")),
    "batch-oom": fails_in_batches(out_of_memory),
    "nan": lambda requests: [Answer(score=float("nan")) for _ in requests],
    "minus-inf": lambda requests: [Answer(score=float("-inf")) for _ in requests],
    "no-score": lambda requests: [Answer() for _ in requests],
    "floats": lambda requests: [0.5 for _ in requests],
    "one-short": lambda requests: [Answer(score=1.0) for _ in requests][1:],
    "generator": lambda requests: (Answer(score=1.0) for _ in requests),
    "yes-1.7": lambda requests: [Answer(raw="Yes", probs={"yes": 1.7, "no": 0.1}) for _ in requests],
    "exit": lambda requests: sys.exit(3),
    "cancelled": lambda requests: raises(asyncio.CancelledError("the event loop stopped")),
    "base-exception": lambda requests: raises(Stopped("a plugin's own BaseException")),
    "unprintable": lambda requests: raises(Unprintable("never shown")),
    "escapes": lambda requests: raises(RuntimeError(ESCAPES)),
    "batch-cancelled": fails_in_batches(lambda: asyncio.CancelledError("the event loop stopped")),
}


class Misbehaving(Model):
    name = "misbehaving"

    def __init__(self, reply, batch_size=32):
        self.reply, self.batch_size, self.oom = REPLIES[reply], batch_size, reply == "batch-oom"

    @property
    def notes(self):  # where a local model says it ran: named when memory runs out
        return {"ran_on": {"device": "cuda:0", "dtype": "float32", "attention": "sdpa"}} if self.oom else {}

    def answer_similarity(self, requests, frames):
        return self.reply(requests)

    answer_entailment = answer_similarity


MODEL = ModelLoader("misbehaving", lambda arg, options, cache_dir: Misbehaving(arg, int(options.get("batch_size", 32))),
                    "answers as told")
'''


def install(row: str, package: str, source: str, entries: str, group: str = "timefoil.models") -> str:
    """Write ``package`` (one module) and its dist-info into the row's folder; returns the folder."""
    return str(install_package(SITES / row, package, source, entries, group))


def on_path(row: str) -> dict[str, str]:
    return {"PYTHONPATH": os.pathsep.join([str(SITES / row), os.environ.get("PYTHONPATH", "")])}


def run_argv(tmp_path: Path, model: str, protocol: str = "similarity") -> list[str]:
    suite = str(tmp_path / "suite")
    generate(suite, per_family=1, seed=4, families=("order",))
    return ["run", "synth", "--model", model, "--data", suite, "--protocol", protocol, "--frames", "1",
            "--out", str(tmp_path / "run"), "--no-progress"]


# -- rows whose model answers badly -----------------------------------------------------------------
def misbehaving(row: str, reply: str, protocol: str = "similarity"):
    """``reply``, or ``reply/1``: the same, asked one request at a time."""
    def prepare(tmp_path: Path) -> list[str]:
        install(row, "misbehaving_models", MISBEHAVING, "misbehaving = misbehaving_models")
        reply_, _, batch_size = reply.partition("/")
        return run_argv(tmp_path, f"misbehaving:{reply_}", protocol) + \
            (["--model-arg", f"batch_size={batch_size}"] if batch_size else [])
    return prepare


def after_another(row: str, first: str, then: str):
    """``misbehaving:<first>`` run on the row's cache, then ``misbehaving:<then>`` on the same one:
    the second is its own model (another argument), so none of the first's answers is its."""
    def prepare(tmp_path: Path) -> list[str]:
        argv = misbehaving(row, first)(tmp_path)
        env = {"TIMEFOIL_CACHE": str(tmp_path / "cache"), **on_path(row)}
        done = cli(*argv[:-3], "--out", str(tmp_path / "first"), "--no-progress", env=env, timeout=60)
        assert done.returncode == 0, done.stderr
        return [f"misbehaving:{then}" if arg == f"misbehaving:{first}" else arg for arg in argv]
    return prepare


def each_error(expected: str):
    """Every request asked was recorded, each as this one error (nothing scored, nothing dropped)."""
    def after(tmp_path: Path) -> None:
        records = run_records(tmp_path / "run")
        assert records and all(r["answer"]["error"] == expected for r in records), \
            {r["answer"]["error"] for r in records}
        report = score_run(str(tmp_path / "run"))
        assert report.items and report.errors == report.items, (report.errors, report.items)
    return after


FAILED = r"^\d+ of \d+ items failed \(\d+ × model error\); ask them again with: "
METHOD = "model error: misbehaving.answer_similarity returned "
ANSWER_ROWS = [
    ("plugin similarity score NaN", "nan", "similarity", METHOD + "score nan, not a finite number"),
    ("plugin similarity score -inf", "minus-inf", "similarity", METHOD + "score -inf, not a finite number"),
    ("plugin similarity answer without a score", "no-score", "similarity",
     METHOD + "no score (a similarity answer needs one)"),
    ("plugin returning floats instead of answers", "floats", "similarity", METHOD + "a float, not an Answer"),
    ("plugin returning one answer too few", "one-short", "similarity", METHOD + "0 answers for 1 request"),
    ("plugin asked one request at a time, one answer short", "one-short/1", "similarity",
     METHOD + "0 answers for 1 request"),
    ("plugin returning a generator of answers", "generator", "similarity",
     METHOD + "a generator, not a list of answers"),
    ("plugin entailment probability 1.7", "yes-1.7", "entailment",
     "model error: misbehaving.answer_entailment returned probability 'yes' 1.7, not between 0 and 1"),
    ("plugin calling sys.exit(3) while answering", "exit", "similarity",
     "model error: misbehaving exited while answering (SystemExit: 3)"),
    ("plugin raising asyncio.CancelledError (a BaseException)", "cancelled", "similarity",
     "model error: CancelledError: the event loop stopped"),
    ("plugin raising its own BaseException", "base-exception", "similarity",
     "model error: Stopped: a plugin's own BaseException"),
    ("plugin raising an exception whose str() raises", "unprintable", "similarity",
     "model error: Unprintable (its message cannot be printed)"),
]


def fell_back(row: str, exception: str):
    """Every request answered, and run.json counts the batches the plugin saw fail (its log:
    each call's size, a failed batch followed by its requests one at a time)."""
    def after(tmp_path: Path) -> None:
        sizes = [int(n) for n in (SITES / row / "batches.log").read_text().split()]
        failed = [n for n in sizes if n > 1]
        assert failed, sizes
        meta = json.loads((tmp_path / "run" / "run.json").read_text())
        counted = meta["batch_fallbacks"]
        assert counted == {"batches": len(failed), "requests": sum(failed), "exceptions": {exception: len(failed)},
                           "messages": {exception: counted["messages"][exception]}}
        records = run_records(tmp_path / "run")
        assert records and all(r["answer"]["score"] == 1.0 for r in records)
    return after


FALLBACK = r"; asking its \d+ requests one at a time \(fallback \d+, counted in run\.json\)$"
FALLBACK_ROWS = [
    ("plugin failing in every batch of 2", "batch-fails/2", "RuntimeError",
     r"^timefoil: misbehaving: a batch of 2 failed \(RuntimeError: an illegal memory access was encountered\)"
     + FALLBACK),
    ("plugin raising CancelledError in every batch of 2", "batch-cancelled/2", "CancelledError",
     r"^timefoil: misbehaving: a batch of 2 failed \(CancelledError: the event loop stopped\)" + FALLBACK),
    ("plugin out of GPU memory in every batch of 2", "batch-oom/2", "OutOfMemoryError",
     r"^timefoil: misbehaving: out of memory in a batch of 2 \(device=cuda:0, device_map=none, dtype=float32, "
     r"batch_size=2\); try a smaller batch_size, dtype=bfloat16 \(half the memory\), device_map=auto \(the layers "
     r"spread over every GPU torch sees\) or a GPU with more free memory" + FALLBACK),
]


# -- rows whose plugin misbehaves while it loads ----------------------------------------------------
def installed(row: str, package: str, source: str, entries: str, argv: list[str],
              group: str = "timefoil.models"):
    """Install the package, then run ``argv`` (``["run", MODEL]``: a run of the row's suite)."""
    def prepare(tmp_path: Path) -> list[str]:
        install(row, package, source, entries, group)
        return run_argv(tmp_path, argv[1]) if argv[0] == "run" else list(argv)
    return prepare


def chance_baseline_ran(tmp_path: Path) -> None:
    """The built-in random model answered (a score in [0, 1) for each request), not the plugin."""
    records = run_records(tmp_path / "run")
    scores = [r["answer"]["score"] for r in records]
    assert records and all(isinstance(s, float) and 0 <= s < 1 for s in scores), scores
    origins = json.loads((tmp_path / "run" / "run.json").read_text())["origins"]
    assert origins["model"] == {"name": "random", "from": "built-in"}, origins


IMPOSTOR = ("from timefoil.models import ModelLoader\nfrom timefoil.models.reference import ConstantModel\n"
            "MODEL = ModelLoader('random', lambda arg, options, cache_dir: ConstantModel(), 'not chance')\n")
QUITS = ("import sys\nfrom timefoil.models import ModelLoader\n"
         "MODEL = ModelLoader('quits', lambda arg, options, cache_dir: sys.exit(3), 'exits when asked for')\n")
LOAD_ROWS = [  # (name, package, its source, entry points, argv, group), exit code, last line, after
    (("plugin named random (a built-in)", "impostor_models", IMPOSTOR, "random = impostor_models",
      ["run", "random"], "timefoil.models"),
     0, r"^timefoil: model plugin 'random' \(impostor-models 1\.0\) refused: 'random' is a built-in model$",
     chance_baseline_ran),
    (("benchmark plugin named synth (a built-in)", "impostor_bench", "from timefoil.benchmarks.synth import "
      "BENCHMARK\n", "synth = impostor_bench", ["list"], "timefoil.benchmarks"),
     0, r"^timefoil: benchmark plugin 'synth' \(impostor-bench 1\.0\) refused: 'synth' is a built-in benchmark$",
     None),
    (("plugin calling sys.exit(3) at import", "exits_at_import", "import sys\nsys.exit(3)\n",
      "exits = exits_at_import", ["list"], "timefoil.models"),
     0, r"^timefoil: model plugin 'exits' could not be loaded \(SystemExit: 3\)$", None),
    (("plugin raising KeyboardInterrupt at import", "interrupted_at_import", "raise KeyboardInterrupt\n",
      "interrupted = interrupted_at_import", ["list"], "timefoil.models"),
     0, r"^timefoil: model plugin 'interrupted' could not be loaded \(KeyboardInterrupt\)$", None),
    (("plugin loader calling sys.exit(3)", "exits_when_loaded", QUITS, "quits = exits_when_loaded",
      ["run", "quits"], "timefoil.models"),
     1, r"^Error: model 'quits' \(plugin exits-when-loaded 1\.0\) exited while loading \(SystemExit: 3\)$",
     None),
]

FAULTS = [Fault(name, misbehaving(name, reply, protocol), 3, FAILED, each_error(expected), env=on_path(name),
                timeout=60)
          for name, reply, protocol, expected in ANSWER_ROWS]
ROW = "plugin model after another of the same plugin on one cache"
FAULTS.append(Fault(ROW, after_another(ROW, "ok", "nan"), 3, FAILED,
                    each_error(METHOD + "score nan, not a finite number"), env=on_path(ROW), timeout=90))
FAULTS += [Fault(name, misbehaving(name, reply), 0, last, fell_back(name, exception), env=on_path(name), timeout=60)
           for name, reply, exception, last in FALLBACK_ROWS]
FAULTS += [Fault(plugin[0], installed(*plugin), code, last, after, env=on_path(plugin[0]), timeout=60)
           for plugin, code, last, after in LOAD_ROWS]


@pytest.mark.parametrize("fault", FAULTS, ids=str)
def test_fault(fault, tmp_path):
    run_fault(fault, tmp_path)


def test_an_error_message_with_escapes_reaches_the_terminal_clean_and_the_record_whole(tmp_path):
    """A plugin's message holding an OSC title sequence (its title text is part of it), a
    screen-clearing CSI, a newline and 1.1 MB of text: the record keeps it whole; ``run``,
    ``score`` and ``report`` show each error as one line with no control character, cut to 300
    characters: "model error: RuntimeError: bad name " (36) and 264 x, then the length, 36 +
    1,100,000 = 1,100,036 characters once the escapes are out and the newline is a space."""
    row = "plugin message with terminal escapes"
    argv = misbehaving(row, "escapes")(tmp_path)
    env = {"TIMEFOIL_CACHE": str(tmp_path / "cache"), **on_path(row)}
    ran = cli(*argv, env=env, timeout=120)
    assert ran.returncode == 3, ran.stderr[-2000:]
    records = run_records(tmp_path / "run")
    assert records and all(r["answer"]["error"] == "model error: RuntimeError: " + ESCAPES for r in records)
    scored = cli("score", str(tmp_path / "run"), env=env, timeout=60)
    reported = cli("report", str(tmp_path / "run"), env=env, timeout=60)
    shown_error = re.compile(r"^error  \S+: model error: RuntimeError: bad name x{264}… \(1,100,036 characters\)$")
    for result in (ran, scored, reported):
        shown = result.stdout + result.stderr
        assert not re.search(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]", shown) and "pwned" not in shown, shown[-2000:]
        errors = [line.strip() for line in shown.splitlines() if line.strip().startswith("error ")]
        assert len(errors) == len({r["item"]["id"] for r in records}), errors
        assert all(shown_error.match(line) for line in errors), errors
        assert len(shown) < 20_000, len(shown)


ESCAPES = "\x1b]0;pwned\x07bad\nname \x1b[2J" + "x" * 1_100_000
