"""``timefoil demo``: the whole pipeline offline on the synthetic suite, in seconds."""
from __future__ import annotations

import os
import time

from rich.console import Console

from .weights import ModelUnavailable
from .report import load_scored, make_console, print_runs
from .runner import RunConfig, run
from .synth import generate

# (model, protocol, option order, blind): the chance floor, the order-blind scorer that ties
# exactly where only frame order separates the videos, the position-bias probe, and a real
# text-only language model (the language-prior baseline every paper reports).
DEMO_RUNS = [
    ("random", "similarity", None, False), ("bag-of-frames", "similarity", None, False),
    ("constant", "similarity", None, False), ("random", "entailment", None, False),
    ("constant", "choice", "both", False), ("blind-lm", "entailment", None, True),
    ("blind-lm", "choice", "both", True),
]


def run_demo(out: str, per_family: int = 6, console: Console | None = None) -> list[str]:
    console = console or make_console()
    started = time.perf_counter()
    suite = os.path.join(out, "suite")
    items = generate(suite, per_family=per_family, seed=0)
    console.print(f"generated {len(items)} items in {suite}")
    run_dirs = []
    for model, protocol, order, blind in DEMO_RUNS:
        run_dir = os.path.join(out, "runs", f"{model}-{protocol}")
        try:
            run(RunConfig("synth", model, data_dir=suite, protocol=protocol, order_policy=order, blind=blind),
                run_dir, cache_dir=os.path.join(out, "cache"), progress=False)
        except (ImportError, ModelUnavailable) as exc:
            console.print(f"skipped {model}: {exc}", style="yellow")
            continue
        run_dirs.append(run_dir)
    print_runs([load_scored(d) for d in run_dirs], console)
    console.print(f"demo finished in {time.perf_counter() - started:.1f} s; runs in {os.path.join(out, 'runs')}; "
                  f"rescore one with `timefoil score {run_dirs[1]}`")
    return run_dirs
