"""Commands that answer requests: ``run``, ``ablate`` and ``merge``."""
from __future__ import annotations

import json
import os
import sys
from dataclasses import replace

import click

from ..benchmarks import get_benchmark
from ..core.paths import refuse_output_inside
from ..core.redaction import redact
from ..execution.config import RunConfig
from ..execution.plan import plan_run
from ..execution.records import capped_line
from ..commands.running import (EXIT_FAILED_REQUESTS, failure_summary, load_announced, retry_command, unread_summary,
                                too_many_failed, worker_lines)
from ..execution.runner import Runner
from ..execution.stored import score_run
from ..protocols import ORDER_POLICIES
from ..video.sampling import Sampling
from .app import main
from .common import Failure, FiniteRange, ProtocolChoice, frames_list, guard, key_values, reading_option


def _run_epilog() -> str:
    from ..benchmarks import BENCHMARKS, paper_order

    return ("Benchmarks: " + ", ".join(sorted(BENCHMARKS, key=paper_order))
            + "; all: the five papers' (with --data-root).\n\n"
            "Models (--model): random, constant, bag-of-frames (reference models); hf:<hub id or folder> (a "
            "video LLM or a text LM through transformers); clip:<hub id or folder>, openclip:<arch>:<tag> "
            "(contrastive); openai:<model>@<url>, gemini:<model>, anthropic:<model> (served); blind-lm, blind-embed "
            "(text only); and any installed plugin.\n\nEvery benchmark, protocol, model, metric and paper number, "
            "with options: timefoil list. Examples: README.md and docs/running.md.")


@main.command("run", epilog=_run_epilog())
@click.argument("benchmark")
@click.option("--model", "model_spec", required=True, help="e.g. random, constant, bag-of-frames")
@click.option("--model-arg", multiple=True, help="adapter option key=value (repeatable)")
@click.option("--data", "data_dir", type=click.Path(), help="the benchmark's files")
@click.option("--data-root", type=click.Path(file_okay=False),
              help="a folder holding each benchmark's files as DIR/<benchmark> (what prepare --dest writes)")
@click.option("--protocol", type=ProtocolChoice())
@click.option("--frames", help="frames per video, or a list (1,2,4,8: one run per value); default: the benchmark's")
@click.option("--fps", type=FiniteRange(min=0, min_open=True, max=1000),
              help="frames per second instead of a fixed count")
@click.option("--max-frames", type=click.IntRange(min=1),
              help="cap for --fps (default: none, every frame the rate asks for)")
@click.option("--strategy", type=click.Choice(["mid", "endpoints"]), help="frame positions (default mid)")
@click.option("--frame-order", type=click.Choice(["natural", "shuffled", "reversed"]),
              help="temporal-sensitivity ablation (default natural)")
@click.option("--single-frame", is_flag=True, default=None, help="show one randomly chosen frame")
@click.option("--blind", is_flag=True, help="no video: the language-prior baseline")
@click.option("--order", "order_policy", type=click.Choice(ORDER_POLICIES), help="option order for choice")
@click.option("--judge", help="a model that reads answers the parser cannot (choice: free text to a letter)")
@click.option("--variant", help="a prompt variant of the benchmark (e.g. cot, closed)")
@click.option("--max-tokens", type=click.IntRange(min=1), help="answer budget (default: the variant's; cot 1024)")
@click.option("--bench-arg", multiple=True,
              help="a benchmark's option NAME.KEY=VALUE (KEY=VALUE: every benchmark of the command), e.g. "
                   "temporalbench.subset=long_qa, velociti.protocol=choice; the keys: timefoil list")
@click.option("--limit", type=click.IntRange(min=1), help="only the first N groups")
@click.option("--sample", type=click.IntRange(min=1), help="N groups drawn at random, stratified over tests (--seed)")
@click.option("--seed", type=int, help="option order, frame ablations and --sample (default 0)")
@click.option("--out", required=True, type=click.Path(file_okay=False), help="run directory (resumes if present)")
@click.option("--cache-dir", type=click.Path(file_okay=False), help="frame and response cache (TIMEFOIL_CACHE)")
@click.option("--retry-errors", is_flag=True, help="ask again the requests that failed last time")
@click.option("--max-error-rate", type=FiniteRange(0, 1), default=0.0, show_default=True,
              help="share of items allowed to fail before the exit code says so (3)")
@click.option("--threads", type=click.IntRange(min=1),
              help="torch CPU threads (default: TIMEFOIL_THREADS, else the physical cores)")
@click.option("--shard", help="answer one shard I/N of the plan (whole videos, balanced); join them with merge")
@click.option("--executor", type=click.Choice(["local", "ray"]), default="local", show_default=True,
              help="ray: one model replica per worker of a Ray cluster")
@click.option("--workers", type=click.IntRange(min=1), help="Ray workers (default: one per GPU of the cluster)")
@click.option("--gpus-per-worker", type=FiniteRange(min=0), help="GPUs per Ray worker (default 1 if any)")
@click.option("--ray-address", help="an existing Ray cluster (default: RAY_ADDRESS, else a local one)")
@click.option("--no-progress", is_flag=True)
@reading_option
@guard
def run_cmd(benchmark: str, out: str, **flags) -> None:
    """Evaluate a model on a benchmark (rerun the same command to resume). BENCHMARK may name
    several, joined by commas, or be "all" (the five papers' benchmarks): each is read from
    --data-root DIR/<benchmark> into OUT/<benchmark>-<protocol>, the model loaded once; options
    for one of them go as --bench-arg NAME.KEY=VALUE (NAME.protocol=choice, NAME.subset=paper).
    One benchmark given a folder that run all wrote (a suite) runs into its subfolder."""
    from ..commands.benchargs import bench_options
    from ..commands.papers import benchmarks_named

    names = benchmarks_named(benchmark)
    if names is not None:
        return _run_papers(names, out, flags, bench_options(flags["bench_arg"], names))
    options = bench_options(flags["bench_arg"], [get_benchmark(benchmark).name])[benchmark]
    return _run_one(benchmark, out, flags, options)


def _run_one(benchmark: str, out: str, flags: dict, options: dict) -> None:
    from ..commands.benchargs import run_options
    from ..commands.papers import answerable, finished, is_suite
    from ..execution.sharding import Shard
    from ..execution.config import fitted_to_model
    from ..models import declared_frames, declared_kinds
    from ..reports.report import load_scored, print_runs

    if flags["data_root"]:
        if flags["data_dir"]:
            raise click.BadParameter("give --data or --data-root, not both")
        flags["data_dir"] = os.path.join(flags["data_root"], benchmark)
        if not os.path.isdir(flags["data_dir"]):
            raise click.UsageError(f"--data-root {flags['data_root']} holds no {benchmark} folder; get it with: "
                                   f"timefoil prepare {benchmark} --dest {flags['data_dir']}, or give its files "
                                   "with --data DIR")
    if not flags["data_dir"]:
        raise click.UsageError(f"{benchmark} needs its files: --data DIR (the folder holding them) or --data-root "
                               f"DIR (its folder DIR/{benchmark}, as timefoil prepare writes it)")
    asked, loader = run_options(options)
    part = Shard.parse(flags["shard"]) if flags["shard"] else None
    ray, samplings = _ray(flags), _samplings(benchmark, flags)
    config = replace(_config(benchmark, flags), benchmark_args=loader,
                     protocol=asked.get("protocol", flags["protocol"]), variant=asked.get("variant", flags["variant"]))
    config, said = answerable(config, declared_kinds(config.model))  # before the model loads
    if said:
        click.echo(f"timefoil: {said}", err=True)
    refuse_output_inside(out, [config.data_dir])
    if is_suite(out):  # a folder run all wrote: this benchmark's run goes beside the others
        out = os.path.join(out, f"{benchmark}-{config.resolved().protocol}")
        click.echo(f"timefoil: writing into {out} (the suite's folder for {benchmark})", err=True)
    fixed, fitted = declared_frames(config.model), []
    for sampling in samplings:  # a model that takes a fixed frame count (X-CLIP) is given it, or refused
        fitted.append(fitted_to_model(replace(config, sampling=sampling), fixed))
    for line in dict.fromkeys(said for _, said in fitted if said):
        click.echo(f"timefoil: {line}", err=True)
    plans = [(out if len(samplings) == 1 else os.path.join(out, sampling.label()),  # several: each labelled
              plan_run(asked, part)) for sampling, (asked, _) in zip(samplings, fitted)]
    left = [(run_dir, plan) for run_dir, plan in plans
            if not finished(run_dir, plan, flags["retry_errors"], flags["cache_dir"])]
    model = None
    if left and ray is None:  # loaded once for a sweep's runs; none where every one is finished
        model = load_announced(config.model, config.model_args, cache_dir=flags["cache_dir"]) \
            if not flags["no_progress"] else None
    reports = []
    for run_dir, plan in plans:
        if not any(run_dir == d for d, _ in left):  # finished: scored as it stands, nothing loaded
            reports.append(score_run(run_dir))
            for line in _finished_notes(run_dir):
                click.echo(f"{run_dir}: {line}", err=True)
            continue
        runner = Runner(plan, run_dir, cache_dir=flags["cache_dir"], retry_errors=flags["retry_errors"],
                        threads=flags["threads"], ray=ray, progress=not flags["no_progress"], model=model,
                        loaded_from_spec=model is not None)
        if model is None and ray is None:  # the next value of a sweep reuses it
            model = runner.model
        reports.append(runner.run())
        for line in _notes(runner, reports[-1], part):
            click.echo(f"{run_dir}: {line}", err=True)
    print_runs([load_scored(d, flags["reading"]) for d, _ in plans])
    summary = failure_summary(reports, retry_command(sys.argv, flags["retry_errors"]))
    if summary:
        click.echo(redact(summary), err=True)  # the command line may hold a key in the model's URL
    if unread_summary(reports):  # last: where the eye lands, not the numbers' table
        click.echo(unread_summary(reports), err=True)
    if summary and too_many_failed(reports, flags["max_error_rate"]):
        sys.exit(EXIT_FAILED_REQUESTS)


def _run_papers(names: list[str], out: str, flags: dict, options: dict[str, dict]) -> None:
    """Several benchmarks with one model load (commands/papers.py), each planned before the
    model loads; a benchmark that cannot run is one line and skipped, and the exit code says so
    once the others are done."""
    from ..commands.papers import mark_suite, plan_papers, refuse_run_as_suite, run_papers
    from ..models import declared_frames, declared_kinds
    from ..reports.card import print_card
    from ..reports.report import load_scored, make_console, print_runs

    if flags["data_dir"] or not flags["data_root"]:
        raise click.BadParameter("several benchmarks are read from --data-root DIR (DIR/<benchmark> each), not --data")
    if flags["shard"]:
        raise click.BadParameter("--shard splits one benchmark's run: give one benchmark")
    refuse_output_inside(out, [flags["data_root"]])
    refuse_run_as_suite(out)
    base = replace(_config(names[0], {**flags, "bench_arg": ()}), data_dir=None)
    plan = plan_papers(names, base, flags["data_root"], out, options, lambda name: _samplings(name, flags),
                       kinds=declared_kinds(base.model), retry_errors=flags["retry_errors"],
                       memo_dir=flags["cache_dir"], frames=declared_frames(base.model))
    skipped = list(plan.skipped)
    for line in plan.chosen:
        click.echo(f"timefoil: {line}", err=True)
    for line in skipped:
        click.echo(f"timefoil: skipped {line}", err=True)
    if plan.planned:
        mark_suite(out, base.model)

    def finished(planned, runner, report) -> None:
        for line in _notes(runner, report, None) if runner else _finished_notes(planned.run_dir):
            click.echo(f"{planned.run_dir}: {line}", err=True)

    def refused(line: str) -> None:
        click.echo(f"timefoil: skipped {line}", err=True)
        skipped.append(line)

    done = run_papers(plan, flags["model_spec"], base.model_args, cache_dir=flags["cache_dir"], on_done=finished,
                      on_skip=refused, retry_errors=flags["retry_errors"], threads=flags["threads"],
                      ray=_ray(flags), progress=not flags["no_progress"],
                      load=None if flags["no_progress"] else load_announced)
    scored = [load_scored(planned.run_dir, flags["reading"]) for planned, _ in done]
    console = make_console()
    print_runs(scored, console, headlines=False)
    if scored:  # last, where the eye lands: the card that timefoil report OUT leads with
        print_card(scored, console, title=f"card: {out}")
    reports = [report for _, report in done]
    summary = failure_summary(reports, retry_command(sys.argv, flags["retry_errors"]))
    if summary:
        click.echo(redact(summary), err=True)
    if unread_summary(reports):
        click.echo(unread_summary(reports), err=True)
    if skipped:
        raise Failure(f"{len(skipped)} of {len(names)} benchmarks skipped "
                      f"({', '.join(line.split(':')[0] for line in skipped)}); the others are in {out}")
    if summary and too_many_failed(reports, flags["max_error_rate"]):
        sys.exit(EXIT_FAILED_REQUESTS)


def _config(benchmark: str, flags: dict) -> RunConfig:
    return RunConfig(benchmark, flags["model_spec"], data_dir=flags["data_dir"], protocol=flags["protocol"],
                     model_args=key_values(flags["model_arg"], "--model-arg"), limit=flags["limit"],
                     sample=flags["sample"], seed=flags["seed"] or 0, order_policy=flags["order_policy"],
                     blind=flags["blind"], judge=flags["judge"], variant=flags["variant"],
                     max_tokens=flags["max_tokens"])


def _samplings(benchmark: str, flags: dict) -> list[Sampling | None]:
    counts = frames_list(flags["frames"])
    if counts and flags["fps"]:
        raise click.BadParameter("give --frames or --fps, not both")
    return Sampling.from_flags(get_benchmark(benchmark).default_sampling, counts, flags["fps"],
                               max_frames=flags["max_frames"], strategy=flags["strategy"], order=flags["frame_order"],
                               single_frame=flags["single_frame"], seed=flags["seed"])


def _ray(flags: dict):
    from ..execution.distributed import RayOptions

    if flags["executor"] != "ray":
        if flags["workers"] or flags["gpus_per_worker"] is not None or flags["ray_address"]:
            raise click.BadParameter("--workers, --gpus-per-worker and --ray-address go with --executor ray")
        return None
    return RayOptions(workers=flags["workers"], gpus_per_worker=flags["gpus_per_worker"], address=flags["ray_address"])


def _finished_notes(run_dir: str) -> list[str]:
    """What a finished run, scored without its model, tells the terminal: the errors it keeps."""
    from ..execution.store import RunLog

    errors = sum(1 for record in RunLog(run_dir).read(strict=False) if record["answer"].get("error"))
    return [f"keeping {errors} errors recorded by an earlier run (--retry-errors asks them again)"] if errors else []


def _notes(runner: Runner, report, part) -> list[str]:
    """What a finished run tells the terminal besides its tables."""
    lines = worker_lines(runner.pool.summary()) if runner.pool else []
    if report.other_shards:
        lines.append(f"shard {part.label}: {report.other_shards} items are completed in other shards "
                     "(scored once the shards are joined: timefoil merge)")
    if runner.capped:
        lines.append(capped_line(runner.capped, runner.config.sampling))
    if runner.kept_errors:
        lines.append(f"keeping {runner.kept_errors} errors recorded by an earlier run "
                     "(--retry-errors asks them again)")
    return lines


@main.command()
@click.argument("benchmark")
@click.option("--model", "model_spec", required=True)
@click.option("--model-arg", multiple=True, help="adapter option key=value (repeatable)")
@click.option("--data", "data_dir", type=click.Path(), help="the benchmark's files")
@click.option("--protocol", type=ProtocolChoice())
@click.option("--frames", help="also a frames sweep, e.g. 1,2,4,8,16,32")
@click.option("--bench-arg", multiple=True, help="the benchmark's option KEY=VALUE (or NAME.KEY=VALUE)")
@click.option("--limit", type=click.IntRange(min=1), help="only the first N groups")
@click.option("--out", required=True, type=click.Path(file_okay=False), help="one run directory per condition")
@click.option("--html", "html_path", type=click.Path(dir_okay=False), help="the ablation table, tables and plots")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), help="the ablation table as JSON")
@click.option("--cache-dir", type=click.Path(file_okay=False))
@click.option("--threads", type=click.IntRange(min=1))
@reading_option
@guard
def ablate(benchmark, model_spec, model_arg, data_dir, protocol, frames, bench_arg, limit, out, html_path, json_path,
           cache_dir, threads, reading):
    """The papers' temporal-sensitivity runs as one table: full, shuffled, reversed, one frame,
    no video (and a frames sweep), each paired with the full run on the same items."""
    from ..commands.ablation import ablate as run_ablation
    from ..commands.ablation import ablation_data, ablation_table, dependence_lines
    from ..core.output import write_whole
    from ..reports.report import make_console

    for written in (out, html_path, json_path):
        refuse_output_inside(written, [data_dir])
    from ..commands.benchargs import bench_options, run_options

    asked, loader = run_options(bench_options(bench_arg, [get_benchmark(benchmark).name])[benchmark])
    config = RunConfig(benchmark, model_spec, data_dir=data_dir, protocol=asked.get("protocol", protocol), limit=limit,
                       model_args=key_values(model_arg, "--model-arg"), variant=asked.get("variant"),
                       benchmark_args=loader)
    result = run_ablation(config, out, frames=tuple(frames_list(frames)), cache_dir=cache_dir, threads=threads,
                          progress=True, reading=reading)
    console = make_console()
    console.print(ablation_table(result))
    for line in dependence_lines(result):
        click.echo(line)
    if json_path:
        write_whole(json_path, json.dumps(ablation_data(result), indent=2, ensure_ascii=False))
        click.echo(f"wrote {json_path}")
    if html_path:
        from ..reports.html import write_html

        write_html([scored.run_dir for _, scored in result.runs], html_path, ablation=ablation_data(result),
                   reading=reading)
        click.echo(f"wrote {html_path}")
    click.echo(f"runs in {out}/")


@main.command()
@click.argument("shard_dirs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--out", required=True, type=click.Path(file_okay=False), help="the merged run directory (new)")
@guard
def merge(shard_dirs, out):
    """Join the shards of one run (--shard I/N) into a normal run directory, after checking that
    they share one configuration and answer every planned request exactly once."""
    from ..commands.merging import MergeError, merge_shards
    from ..reports.report import load_scored, print_runs

    refuse_output_inside(out, shard_dirs)
    try:
        done = merge_shards(list(shard_dirs), out)
    except MergeError as exc:
        for line in exc.problems[:50]:
            click.echo(f"  {line}", err=True)
        raise Failure(str(exc)) from None
    print_runs([load_scored(out)])
    click.echo(f"merged {done['shards']} shards ({done['requests']} requests) into {out}")
    for warning in done["warnings"]:  # also kept in the merged run.json
        click.echo(f"timefoil: warning: {warning}", err=True)
