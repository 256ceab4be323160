"""``timefoil demo``: the whole pipeline offline on the synthetic suite, in a couple of minutes.

It prints one compact summary (a line per model: its headline number against chance and what
that model shows) and writes the full tables and the HTML report beside the runs."""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

from rich import box
from rich.console import Console
from rich.table import Table

from ..reports.report import load_scored, make_console, print_runs
from ..execution.config import RunConfig
from ..execution.runner import run
from ..synth import generate
from ..core.weights import ModelUnavailable


@dataclass(frozen=True)
class DemoRun:
    model: str
    protocol: str
    headline: str  # the overall metric the summary shows
    shows: str  # what this model demonstrates, in one sentence
    order: str | None = None
    blind: bool = False
    model_args: dict = field(default_factory=dict)


# The chance floor, the order-blind scorer that ties exactly where only frame order separates
# the videos, the position-bias probe, and a real text-only language model (the language-prior
# baseline every paper reports), which reads option letters in one forward pass.
DEMO_RUNS = [
    DemoRun("random", "similarity", "average P+T", "the floor: inside the interval around chance"),
    DemoRun("bag-of-frames", "similarity", "accuracy", "order-blind: ties, so loses, wherever only order differs"),
    DemoRun("constant", "similarity", "accuracy", "equal scores everywhere: every comparison ties, ties lose"),
    DemoRun("random", "entailment", "StrictVLE", "chance for StrictVLE is 25%, not 50%"),
    DemoRun("constant", "choice", "bias", "always A: acc_A 100, acc_B 0; asking both orders exposes it",
            order="both"),
    DemoRun("blind-lm", "entailment", "StrictVLE", "a language model without the video: the language prior",
            blind=True),
    DemoRun("blind-lm", "choice", "A∧B", "the same, choosing letters; its bias shows", order="both", blind=True,
            model_args={"choice_reading": "letters"}),
]


def run_demo(out: str, per_family: int = 6, console: Console | None = None) -> list[str]:
    console = console or make_console()
    started = time.perf_counter()
    suite = os.path.join(out, "suite")
    items = generate(suite, per_family=per_family, seed=0)
    console.print(f"timefoil demo: {len(items)} synthetic items in {suite}")
    done: list[tuple[DemoRun, str]] = []
    for spec in DEMO_RUNS:
        run_dir = os.path.join(out, "runs", f"{spec.model}-{spec.protocol}")
        config = RunConfig("synth", spec.model, data_dir=suite, protocol=spec.protocol, order_policy=spec.order,
                           blind=spec.blind, model_args=dict(spec.model_args))
        try:
            run(config, run_dir, cache_dir=os.path.join(out, "cache"), progress=False)
        except (ImportError, ModelUnavailable) as exc:
            console.print(f"skipped {spec.model}: {exc}", style="yellow")
            continue
        done.append((spec, run_dir))
    scored = [load_scored(d) for _, d in done]
    console.print(summary_table(done, scored))
    tables = os.path.join(out, "tables.txt")
    with open(tables, "w", encoding="utf-8") as handle:
        print_runs(scored, Console(file=handle, width=200))
    from ..reports.html import write_html

    html = write_html([d for _, d in done], os.path.join(out, "report.html"), thumbnails=True)
    console.print(f"full tables: {tables}\nHTML report: {html}\nrescore a run: timefoil score {done[1][1]}\n"
                  f"finished in {time.perf_counter() - started:.0f} s")
    return [d for _, d in done]


def summary_table(done: list[tuple[DemoRun, str]], scored) -> Table:
    """One row per run: the headline number, its chance, and what it shows (fits 100 columns)."""
    table = Table(title="what each model shows (bold: above chance)", title_justify="left", box=box.SIMPLE_HEAD,
                  padding=(0, 1))
    for name, justify in (("model", "left"), ("protocol", "left"), ("metric", "left"), ("value", "right"),
                          ("chance", "right"), ("shows", "left")):
        table.add_column(name, justify=justify, no_wrap=name != "shows", max_width=None if name != "shows" else 34)
    for (spec, _), scored_run in zip(done, scored):
        metric = next((m for m in scored_run.report.metrics if m.name == f"overall/{spec.headline}"), None)
        value = "–" if metric is None or metric.value is None else f"{metric.value:.1f}"
        chance = "" if metric is None or metric.chance is None else f"{metric.chance:.1f}"
        style = "bold" if metric is not None and metric.significant else ""
        table.add_row(spec.model, spec.protocol, spec.headline,
                      f"[{style}]{value}[/]" if style else value, chance, spec.shows)
    return table
