"""``timefoil ablate``: the temporal-sensitivity runs the papers make by hand (shuffled,
reversed and single frames, no video, a frames sweep) as one table, each condition paired
with the full-video run on the same items (McNemar's exact test)."""
from __future__ import annotations

import os
from dataclasses import dataclass, replace

from rich.table import Table

from .benchmarks import get_benchmark
from .htmlreport.compare import Comparison, compare
from .models import load_model
from .paths import default_cache_dir
from .report import ScoredRun, load_scored, metric_cell, split_name
from .runner import RunConfig, load_run, run
from .scoring import outcomes_from_records

# condition -> how it changes the run: sampling fields, or no video at all
CONDITIONS: dict[str, dict] = {"full": {}, "shuffled": {"order": "shuffled"}, "reversed": {"order": "reversed"},
                               "single frame": {"single_frame": True}, "blind": {"blind": True}}


@dataclass
class Ablation:
    runs: list[tuple[str, ScoredRun]]  # (condition, run)
    paired: dict[str, Comparison]  # condition -> against the full run
    headline: list[str]


def ablate(config: RunConfig, out: str, *, frames: tuple[int, ...] = (), cache_dir: str | None = None,
           threads: int | None = None, progress: bool = False) -> Ablation:
    config = config.resolved()
    cache_dir = cache_dir or default_cache_dir()
    model = load_model(config.model, config.model_args, cache_dir=cache_dir)  # once for every condition
    conditions = [(name, change) for name, change in CONDITIONS.items()]
    conditions += [(f"{n} frames", {"frames": n, "fps": None}) for n in frames]
    runs = []
    for name, change in conditions:
        blind = change.get("blind", False)
        sampling = replace(config.sampling, **{k: v for k, v in change.items() if k != "blind"})
        run_dir = os.path.join(out, name.replace(" ", "-"))
        run(replace(config, sampling=sampling, blind=blind), run_dir, cache_dir=cache_dir, model=model,
            progress=progress, threads=threads)
        runs.append((name, replace(load_scored(run_dir), label=name)))
    correct = {r.run_dir: _main_correct(r.run_dir, config.protocol) for _, r in runs}
    full = runs[0][1]
    paired = {name: compare(full, r, correct) for name, r in runs[1:]}
    table = get_benchmark(config.benchmark).table.get(config.protocol) or ()
    names = [split_name(m.name)[1] for m in full.report.metrics if split_name(m.name)[0] == "overall"]
    headline = [n for n in names if n in table or n.startswith("average")] or names[:3]
    return Ablation(runs, paired, headline)


def _main_correct(run_dir: str, protocol: str) -> dict[str, bool]:
    _, records = load_run(run_dir)
    return {o.item["id"]: o.correct() for o in outcomes_from_records(records, protocol) if not o.is_proficiency}


def ablation_table(result: Ablation) -> Table:
    first = result.runs[0][1].report
    table = Table(title=f"{first.benchmark} · {first.protocol} · {first.model} · ablations", title_justify="left")
    table.add_column("condition", no_wrap=True)
    for name in result.headline:
        table.add_column(name, justify="right")
    table.add_column("items right", justify="right")
    table.add_column("Δ vs full", justify="right")
    table.add_column("paired p", justify="right")
    for name, scored in result.runs:
        overall = {split_name(m.name)[1]: m for m in scored.report.metrics if split_name(m.name)[0] == "overall"}
        pair = result.paired.get(name)
        reference = next(iter(result.paired.values()))
        right = f"{pair.second_right}/{pair.n}" if pair else f"{reference.first_right}/{reference.n}"
        table.add_row(name, *[metric_cell(overall.get(c)) for c in result.headline], right,
                      f"{pair.difference:+.1f}" if pair else "", f"{pair.p_value:.3g}" if pair else "")
    return table


def dependence_lines(result: Ablation) -> list[str]:
    """How much of the score rests on frame order and on the video at all."""
    lines = []
    for what, condition in (("frame order", "shuffled"), ("the video", "blind")):
        pair = result.paired[condition]
        lines.append(f"depends on {what}: full - {condition} = {0.0 - pair.difference:+.1f} points of items right "
                     f"({pair.only_first} right only with it, {pair.only_second} only without; paired p "
                     f"{pair.p_value:.3g})")
    return lines
