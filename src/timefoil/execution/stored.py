"""Reading a stored run: its configuration and records, and its scores recomputed with no model.

Reports, ``check`` and ``merge`` read runs through this module alone; none of them needs the
runner.
"""
from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

from ..benchmarks import BENCHMARKS, get_benchmark
from ..core.jsonfiles import UnreadableFile, read_json
from ..measures.stats import MetricValue
from ..protocols.readings import MEANT, READINGS
from ..scoring import ScoreReport, beside, score_records
from .config import RunError
from .store import CONFIG, MERGING, SHARD, RunLog


def load_run(run_dir: str, strict: bool = True) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A run's run.json and records. A record with a field of the wrong kind is refused in one
    line naming its line and field; with ``strict`` off (``check``) it is left out and listed
    in ``meta["malformed"]`` as (line, what is wrong)."""
    config_path = os.path.join(run_dir, CONFIG)
    if not os.path.exists(config_path):
        raise RunError(f"{run_dir} is not a run directory (no {CONFIG})")
    try:
        meta = read_json(config_path, "run configuration")
    except UnreadableFile as exc:
        raise RunError(str(exc)) from None
    if meta.get(MERGING):
        raise RunError(f"{run_dir} holds a merge that was cut short before it finished; run it again to finish it: "
                       f"{meta[MERGING]}")
    config = meta.get("config")
    if not isinstance(config, dict) or not {"benchmark", "model", "protocol"} <= set(config):
        raise RunError(f"{config_path}: not a readable run configuration (no 'config' naming its benchmark, model "
                       "and protocol)")
    log = RunLog(run_dir)
    try:
        records = log.read(strict)
    except UnreadableFile as exc:
        raise RunError(str(exc)) from None
    meta["corrupt_lines"] = log.corrupt
    meta["malformed"] = log.malformed
    meta["elsewhere"] = _elsewhere(run_dir) if meta.get("shard") else {}
    return meta, records


def _elsewhere(run_dir: str) -> dict[str, int]:
    """A shard's items with requests on other shards: item id -> how many are there."""
    path = os.path.join(run_dir, SHARD)
    try:
        part = read_json(path, "shard plan")
    except FileNotFoundError:
        raise RunError(f"{path}: missing (a shard's run directory holds its shard.json)") from None
    except UnreadableFile as exc:
        raise RunError(str(exc)) from None
    elsewhere = part.get("elsewhere", {})
    return {str(k): int(v) for k, v in elsewhere.items()} if isinstance(elsewhere, dict) else {}


def score_run(run_dir: str, tie_policy: str = "strict", reading: str = MEANT) -> ScoreReport:
    """Every metric recomputed from the stored answers; no model is loaded. ``reading``: "meant"
    (the papers' definitions) or "released" (the benchmark's released scorer); where the benchmark
    has a released scorer, each metric also carries the other reading's number where they differ."""
    if reading not in READINGS:
        raise RunError(f"reading must be one of {', '.join(READINGS)}, not {reading!r}")
    meta, records = load_run(run_dir)
    config = meta["config"]
    try:
        benchmark = get_benchmark(config["benchmark"])
    except ValueError as exc:
        raise RunError(f"{run_dir}: {exc} (a run of a benchmark this timefoil does not know cannot be scored)") \
            from None
    if reading != MEANT and benchmark.released is None:
        raise RunError(f"{run_dir}: {benchmark.name} has no released scorer to read its answers by; "
                       f"--reading released applies to {', '.join(_with_released())}")

    def scored(rule):
        report = score_records(records, benchmark=config["benchmark"], model=config["model"],
                               protocol=config["protocol"], spec=benchmark.summary, tie_policy=tie_policy,
                               elsewhere=meta["elsewhere"], rule=rule)
        report.metrics = [with_paper_chance(m, benchmark.paper_chance(config["protocol"], m.name))
                          for m in report.metrics]
        return report

    meant = scored(None)
    report = meant
    if benchmark.released is not None:
        released = scored(benchmark.released)
        report = beside(released, meant) if reading != MEANT else beside(meant, released)
    report.corrupt_lines = meta["corrupt_lines"]
    return report


def _with_released() -> list[str]:
    return [name for name, declared in BENCHMARKS.items() if declared.released is not None]


def with_paper_chance(metric: MetricValue, stated: float | None) -> MetricValue:
    """The paper's nominal chance beside the exact one, where they differ (Vinoground marks its
    group scores against 16.67, while four independent two-way choices give 6.25)."""
    if stated is None or metric.chance is None or abs(stated - metric.chance) < 0.05:
        return metric
    return replace(metric, extra={**metric.extra, "paper_chance": stated})
