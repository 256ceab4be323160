"""``timefoil demo``: the whole pipeline offline on the synthetic suite, in a couple of minutes.

It prints one compact summary (per model: its headline figures against chance, as every view
shows them, and what that model shows) and writes the full tables and the HTML report beside
the runs."""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

from rich.console import Console
from rich.table import Table

from ..core.output import write_whole
from ..reports.fit import print_table
from ..reports.report import ScoredRun, headline_table, load_scored, make_console, print_runs
from ..execution.config import RunConfig
from ..execution.runner import run
from ..synth import generate
from ..core.weights import ModelUnavailable


@dataclass(frozen=True)
class DemoRun:
    model: str
    protocol: str
    shows: str  # what this model demonstrates, in one sentence
    order: str | None = None
    blind: bool = False
    model_args: dict = field(default_factory=dict)


# The chance floor, the order-blind scorer that ties exactly where only frame order separates
# the videos, the position-bias probe, and a real text-only language model (the language-prior
# baseline every paper reports), which reads option letters in one forward pass.
DEMO_RUNS = [
    DemoRun("random", "similarity", "the floor: inside the interval around chance, nothing marked"),
    DemoRun("bag-of-frames", "similarity", "order-blind: ties, so loses, wherever only order differs"),
    DemoRun("constant", "similarity", "equal scores everywhere: every comparison ties, ties lose"),
    DemoRun("random", "entailment", "chance for StrictVLE is 25%, not 50%"),
    DemoRun("constant", "choice", "always A: accuracy at chance, yet bias -100, A∧B 0", order="both"),
    DemoRun("blind-lm", "entailment", "a language model without the video: the language prior", blind=True),
    DemoRun("blind-lm", "choice", "the same, choosing letters; its bias shows", order="both", blind=True,
            model_args={"choice_reading": "letters"}),
]


def run_demo(out: str, per_family: int = 6, console: Console | None = None) -> list[str]:
    console = console or make_console()
    started = time.perf_counter()
    suite = os.path.join(out, "suite")
    items = generate(suite, per_family=per_family, seed=0)
    console.print(f"timefoil demo: {len(items)} synthetic items in {suite}")
    done: list[tuple[DemoRun, str]] = []
    for number, spec in enumerate(DEMO_RUNS, 1):
        run_dir = os.path.join(out, "runs", f"{spec.model}-{spec.protocol}")
        config = RunConfig("synth", spec.model, data_dir=suite, protocol=spec.protocol, order_policy=spec.order,
                           blind=spec.blind, model_args=dict(spec.model_args))
        begun = time.perf_counter()
        try:
            report = run(config, run_dir, cache_dir=os.path.join(out, "cache"), progress=False)
        except (ImportError, ModelUnavailable) as exc:
            console.print(f"skipped {spec.model}: {exc}", style="yellow")
            continue
        # a line as each run ends: a log of the demo (piped, CI) is never silent for minutes
        console.print(f"[{number}/{len(DEMO_RUNS)}] {spec.model} · {spec.protocol}: {report.items} items in "
                      f"{time.perf_counter() - begun:.0f} s", markup=False, highlight=False)
        done.append((spec, run_dir))
    scored = print_summary(done, console)
    tables = os.path.join(out, "tables.txt")
    # a file: every table whole, as piped output has them
    write_whole(tables, lambda handle: print_runs(scored, make_console(handle)))
    from ..reports.html import write_html

    html = write_html([d for _, d in done], os.path.join(out, "report.html"), thumbnails=True)
    console.print(f"full tables: {tables}\nHTML report: {html}\nrescore a run: timefoil score {done[1][1]}\n"
                  f"finished in {time.perf_counter() - started:.0f} s")
    return [d for _, d in done]


def print_summary(done: list[tuple[DemoRun, str]], console: Console) -> list[ScoredRun]:
    """The demo's summary, fitted to ``console``; the runs as scored, for their full tables."""
    scored = [load_scored(d) for _, d in done]
    print_table(console, summary_table(done, scored), keep=3)
    return scored


def summary_table(done: list[tuple[DemoRun, str]], scored: list[ScoredRun]) -> Table:
    """One row per run: its headline figures, as the report and ``score --json`` name them, with
    interval and chance, and what the model shows (fits 100 columns)."""
    return headline_table([(spec.model, spec.protocol, run) for (spec, _), run in zip(done, scored)],
                          "what each model shows (▲ above chance, ▼ below; the headline first)",
                          [spec.shows for spec, _ in done], ("model", "protocol", "shows"))
