"""``timefoil ablate``: the temporal-sensitivity runs the papers make by hand (shuffled,
reversed and single frames, no video, a frames sweep) as one table, each condition paired
with the full-video run on the same items (McNemar's exact test)."""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass, replace

from rich.table import Table

from ..benchmarks import get_benchmark
from ..models import load_model
from ..reports.pairing import HEADLINE_ITEMS, Comparison, compare, load_outcomes, rights
from ..core.paths import cache_root
from ..reports.report import ScoredRun, format_difference, format_p, load_scored, metric_cell, split_name
from ..execution.config import FramesRefused, RunConfig
from ..execution.runner import run
from ..protocols.readings import MEANT

# condition -> how it changes the run: sampling fields, or no video at all
CONDITIONS: dict[str, dict] = {"full": {}, "shuffled": {"order": "shuffled"}, "reversed": {"order": "reversed"},
                               "single frame": {"single_frame": True}, "blind": {"blind": True}}


@dataclass
class Ablation:
    runs: list[tuple[str, ScoredRun]]  # (condition, run)
    paired: dict[str, Comparison]  # condition -> against the full run, over the headline items
    headline: list[str]


def ablate(config: RunConfig, out: str, *, frames: tuple[int, ...] = (), cache_dir: str | None = None,
           threads: int | None = None, progress: bool = False, reading: str = MEANT) -> Ablation:
    config = config.resolved()
    cache_dir = cache_root(cache_dir)
    model = load_model(config.model, config.model_args, cache_dir=cache_dir)  # once for every condition
    conditions = [(name, change) for name, change in CONDITIONS.items()]
    conditions += [(f"{n} frames", {"frames": n, "fps": None}) for n in frames]
    runs = []
    for name, change in conditions:
        blind = change.get("blind", False)
        sampling = replace(config.sampling, **{k: v for k, v in change.items() if k != "blind"})
        run_dir = os.path.join(out, name.replace(" ", "-"))
        try:
            run(replace(config, sampling=sampling, blind=blind), run_dir, cache_dir=cache_dir, model=model,
                progress=progress, threads=threads)
        except FramesRefused as exc:  # a model of a fixed frame count (X-CLIP): the other conditions still run
            if not runs:  # the full run itself: nothing to compare with
                raise
            print(f"timefoil: {name} left out: {exc}", file=sys.stderr)
            continue
        runs.append((name, replace(load_scored(run_dir, reading), label=name)))
    return paired_ablation(runs, config.benchmark, config.protocol, reading)


def paired_ablation(runs: list[tuple[str, ScoredRun]], benchmark: str, protocol: str,
                    reading: str = MEANT) -> Ablation:
    """Each condition paired with the first (the full run) over the headline items (items the
    released reading drops from one run are left out of the pairing)."""
    right = {r.run_dir: rights(load_outcomes(r.run_dir, reading), HEADLINE_ITEMS) for _, r in runs}
    full = runs[0][1]
    paired = {name: compare(full.run_dir, right[full.run_dir], r.run_dir, right[r.run_dir], HEADLINE_ITEMS)
              for name, r in runs[1:]}
    table = get_benchmark(benchmark).table.get(protocol) or ()
    names = [split_name(m.name)[1] for m in full.report.metrics if split_name(m.name)[0] == "overall"]
    headline = [n for n in names if n in table or n.startswith("average")] or names[:3]
    return Ablation(runs, paired, headline)


def ablation_data(result: Ablation) -> dict:
    """The table as data: what the terminal, the HTML report and ``ablate --json`` show."""
    first = result.runs[0][1]
    reference = next(iter(result.paired.values()), None)
    rows = []
    for name, scored in result.runs:
        pair = result.paired.get(name)
        right, n = (pair.second_right, pair.n) if pair else \
            ((reference.first_right, reference.n) if reference else (None, None))
        rows.append({"condition": name, "run": scored.run_dir, "right": right, "n": n,
                     "difference": pair.difference if pair else None, "p_value": pair.p_value if pair else None,
                     "metrics": {m: scored.report.get(f"overall/{m}").to_json() for m in result.headline
                                 if any(x.name == f"overall/{m}" for x in scored.report.metrics)}})
    return {"benchmark": first.report.benchmark, "protocol": first.report.protocol, "model": first.report.model,
            "unit": HEADLINE_ITEMS, "headline": result.headline, "rows": rows,
            "dependence": [{**entry, "line": dependence_line(entry)} for entry in dependence(result)]}


def dependence(result: Ablation) -> list[dict]:
    """How much of the score rests on frame order and on the video at all (full - condition)."""
    out = []
    for what, condition in (("frame order", "shuffled"), ("the video", "blind")):
        pair = result.paired.get(condition)
        if pair is not None:
            # 0.0 - d, not -d: no "-0.0" when nothing changed
            out.append({"what": what, "condition": condition, "difference": 0.0 - pair.difference,
                        "only_with": pair.only_first, "only_without": pair.only_second, "p_value": pair.p_value,
                        "unit": pair.unit})
    return out


def dependence_line(entry: dict) -> str:
    return (f"depends on {entry['what']}: full - {entry['condition']} = {format_difference(entry['difference'])} "
            f"points of {entry['unit']} right ({entry['only_with']} right only with it, {entry['only_without']} "
            f"only without; paired p {format_p(entry['p_value'])})")


def dependence_lines(result: Ablation) -> list[str]:
    return [dependence_line(entry) for entry in dependence(result)]


def ablation_table(result: Ablation) -> Table:
    data = ablation_data(result)
    table = Table(title=f"{data['benchmark']} · {data['protocol']} · {data['model']} · ablations "
                        f"(paired over the {data['unit']})", title_justify="left")
    table.add_column("condition", no_wrap=True)
    for name in result.headline:
        table.add_column(name, justify="right")
    table.add_column("items right", justify="right")
    table.add_column("Δ vs full", justify="right")
    table.add_column("paired p", justify="right")
    for (name, scored), row in zip(result.runs, data["rows"]):
        overall = {split_name(m.name)[1]: m for m in scored.report.metrics if split_name(m.name)[0] == "overall"}
        table.add_row(name, *[metric_cell(overall.get(c)) for c in result.headline],
                      f"{row['right']}/{row['n']}" if row["n"] is not None else "",
                      format_difference(row["difference"]), format_p(row["p_value"]))
    return table
