"""Command line: a thin layer over the Python API."""
from __future__ import annotations

import json
import math
import os
import shlex
import sys
from dataclasses import replace

import click

from .benchmarks import BENCHMARKS, DataError, get_benchmark
from .measures.metrics import TIE_POLICIES
from .models import MODELS
from .core.paths import refuse_output_inside
from .protocols import ORDER_POLICIES, PROTOCOLS
from .core.redaction import redact
from .execution.config import RunConfig, RunError
from .execution.plan import plan_run
from .execution.records import capped_line
from .execution.runner import Runner
from .execution.stored import score_run
from .video.decode import VideoError

# Metrics every protocol gets from the structure of the items; each protocol adds its own.
STRUCTURE_METRICS = {
    "P": "accuracy on proficiency items", "P+T": "main and proficiency both right (ViLMA)",
    "group": "all main items of a group right (Vinoground group score, TemporalBench MBA)",
    "text / video": "all-correct per role (Vinoground text and video scores)",
    "average": "mean over tests of the benchmark's headline metric",
}


def _metrics() -> dict[str, str]:
    out = dict(STRUCTURE_METRICS)
    for protocol in PROTOCOLS.values():
        for name, meaning in protocol.metrics.items():
            said = f"{meaning} ({protocol.name})"
            out[name] = f"{out[name]}; {said}" if name in out else said
    return out


class _ProtocolChoice(click.Choice):
    """The registry's protocols at the time of the call, so a registered plugin is accepted."""

    def __init__(self):
        super().__init__(list(PROTOCOLS))

    def convert(self, value, param, ctx):
        self.choices = list(PROTOCOLS)
        return super().convert(value, param, ctx)


class FiniteRange(click.FloatRange):
    """A float range that refuses nan and the infinities (click's comparisons let nan through:
    --max-error-rate nan would make every failure pass)."""

    def convert(self, value, param, ctx):
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


class Failure(click.ClickException):
    pass


# Exit codes: 0 done; 1 a run that could not start or a command that failed (one line says why);
# 2 a usage error (click); 3 a run that finished but with failed requests above --max-error-rate.
EXIT_FAILED_REQUESTS = 3


def _reason(error: str) -> str:
    """The kind of an error message, without its paths and details."""
    return error.split(":")[0].strip()[:60] or "error"


def failure_summary(reports, retry_command: str) -> str | None:
    """One line: how many items failed, the commonest reasons, and the command that re-asks them."""
    from collections import Counter

    failed, total = sum(r.errors for r in reports), sum(r.items for r in reports)
    if not failed:
        return None
    reasons = Counter(_reason(error) for r in reports for _, error in r.failures).most_common(3)
    said = "; ".join(f"{count} × {reason}" for reason, count in reasons)
    return f"{failed} of {total} items failed ({said}); ask them again with: {retry_command}"


def _guard(fn):
    """Known failures become one clear line, never a traceback."""
    def wrapped(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (RunError, DataError, VideoError, ValueError, FileNotFoundError, ImportError) as exc:
            raise Failure(redact(str(exc))) from None
        except click.ClickException:
            raise
        except Exception as exc:
            if os.environ.get("TIMEFOIL_DEBUG"):
                raise
            raise Failure(redact(f"unexpected {type(exc).__name__}: {exc} (set TIMEFOIL_DEBUG=1 for the traceback)")) \
                from None
    wrapped.__name__, wrapped.__doc__ = fn.__name__, fn.__doc__
    return wrapped


@click.group()
@click.version_option(package_name="timefoil")
def main() -> None:
    """timefoil: does a video-language model understand time?"""


@main.command("list")
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
def list_cmd(as_json: bool) -> None:
    """Benchmarks, models and metrics."""
    data = {"benchmarks": {n: b.description for n, b in BENCHMARKS.items()},
            "protocols": {n: p.description for n, p in PROTOCOLS.items()},
            "models": {n: m.description for n, m in MODELS.items()}, "metrics": _metrics(),
            "paper numbers": {n: b.paper_numbers for n, b in BENCHMARKS.items() if b.paper_numbers},
            # where each prompt's wording comes from: a paper, a released script, or timefoil
            "prompt variants": {f"{n} {variant}": source for n, b in BENCHMARKS.items()
                                for variant, source in b.prompt_sources().items()}}
    if as_json:
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
        return
    for section, entries in data.items():
        click.echo(click.style(section, bold=True))
        for name, text in entries.items():
            click.echo(f"  {name:28s} {text}")


@main.command()
@click.argument("benchmark", type=click.Choice(["synth"]))  # the published benchmarks come from `prepare`
@click.option("--out", required=True, type=click.Path(file_okay=False), help="directory to write")
@click.option("--per-family", default=8, show_default=True, help="counterfactual pairs per family")
@click.option("--seed", default=0, show_default=True)
@_guard
def generate(benchmark: str, out: str, per_family: int, seed: int) -> None:
    """Render the synthetic counterfactual suite."""
    from .synth import generate as generate_suite

    items = generate_suite(out, per_family=per_family, seed=seed)
    click.echo(f"wrote {len(items)} items to {out}")


def _frames_list(value: str | None) -> list[int]:
    if not value:
        return []
    try:
        counts = [int(v) for v in value.split(",") if v.strip()]
    except ValueError:
        raise click.BadParameter(f"expected a number or a list like 1,2,4,8, got {value!r}") from None
    if not counts or min(counts) < 1:
        raise click.BadParameter(f"frame counts are 1 or more, got {value!r}")
    return counts


def _key_values(pairs: tuple[str, ...], option: str) -> dict:
    args = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise click.BadParameter(f"{option} takes key=value, got {pair!r}")
        args[key] = value
    return args


@main.command("run")
@click.argument("benchmark")
@click.option("--model", "model_spec", required=True, help="e.g. random, constant, bag-of-frames")
@click.option("--model-arg", multiple=True, help="adapter option key=value (repeatable)")
@click.option("--data", "data_dir", type=click.Path(), help="the benchmark's files")
@click.option("--protocol", type=_ProtocolChoice())
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
@click.option("--bench-arg", multiple=True, help="loader option key=value, e.g. subset=long_qa")
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
@_guard
def run_cmd(benchmark, model_spec, model_arg, data_dir, protocol, frames, fps, max_frames, strategy, frame_order,
            single_frame, blind, order_policy, judge, variant, max_tokens, bench_arg, limit, sample, seed, out,
            cache_dir, retry_errors, max_error_rate, threads, shard, executor, workers, gpus_per_worker, ray_address,
            no_progress):
    """Evaluate a model on a benchmark (rerun the same command to resume)."""
    from .execution.distributed import RayOptions
    from .reports.report import load_scored, print_runs
    from .execution.sharding import Shard

    if executor != "ray" and (workers or gpus_per_worker is not None or ray_address):
        raise click.BadParameter("--workers, --gpus-per-worker and --ray-address go with --executor ray")
    ray = RayOptions(workers=workers, gpus_per_worker=gpus_per_worker, address=ray_address) \
        if executor == "ray" else None
    part = Shard.parse(shard) if shard else None
    counts = _frames_list(frames)
    if counts and fps:
        raise click.BadParameter("give --frames or --fps, not both")
    # Only the flags given change the benchmark's own sampling (VELOCITI: 1 fps).
    given = {k: v for k, v in dict(max_frames=max_frames, strategy=strategy, order=frame_order,
                                   single_frame=single_frame, seed=seed).items() if v is not None}
    if fps is not None:  # the rate asked for, on every clip, unless --max-frames caps it
        given.update(fps=fps, frames=None, max_frames=max_frames)
    samplings = [dict(given, frames=n, fps=None) for n in counts] or ([given] if given else [None])
    base = get_benchmark(benchmark).default_sampling
    samplings = [replace(base, **changes) if changes is not None else None for changes in samplings]
    config = RunConfig(benchmark, model_spec, data_dir=data_dir, protocol=protocol,
                       model_args=_key_values(model_arg, "--model-arg"),
                       limit=limit, sample=sample, seed=seed or 0, order_policy=order_policy, blind=blind, judge=judge,
                       variant=variant, max_tokens=max_tokens, benchmark_args=_key_values(bench_arg, "--bench-arg"))
    refuse_output_inside(out, [data_dir])
    run_dirs, reports = [], []
    for sampling in samplings:
        run_dir = out if len(samplings) == 1 else os.path.join(out, sampling.label())  # several: each labelled
        runner = Runner(plan_run(replace(config, sampling=sampling), part), run_dir, cache_dir=cache_dir,
                        retry_errors=retry_errors, progress=not no_progress and sys.stderr.isatty(), threads=threads,
                        ray=ray)
        reports.append(runner.run())
        if runner.pool:
            for line in worker_lines(runner.pool.summary()):
                click.echo(f"{run_dir}: {line}", err=True)
        if reports[-1].other_shards:
            click.echo(f"{run_dir}: shard {part.label}: {reports[-1].other_shards} items are completed in other shards "
                       "(scored once the shards are joined: timefoil merge)", err=True)
        if runner.capped:
            click.echo(f"{run_dir}: {capped_line(runner.capped, runner.config.sampling)}", err=True)
        if runner.kept_errors:
            click.echo(f"{run_dir}: keeping {runner.kept_errors} errors recorded by an earlier run "
                       "(--retry-errors asks them again)", err=True)
        run_dirs.append(run_dir)
    print_runs([load_scored(d) for d in run_dirs])
    invoked = "timefoil" in os.path.basename(sys.argv[0]) or sys.argv[0].endswith(os.path.join("timefoil", "cli.py"))
    retry = (" ".join(["timefoil"] + [shlex.quote(a) for a in sys.argv[1:]] + ([] if retry_errors else
                                                                               ["--retry-errors"]))
             if invoked else "the same command with --retry-errors")
    summary = failure_summary(reports, retry)
    if summary:
        click.echo(redact(summary), err=True)  # the command line may hold a key in the model's URL
        if sum(r.errors for r in reports) > max_error_rate * sum(r.items for r in reports):
            sys.exit(EXIT_FAILED_REQUESTS)


def worker_lines(summary: dict) -> list[str]:
    """Requests each Ray worker answered this session, and the workers lost."""
    lines = [f"{label}: {count} requests" for label, count in summary["workers"].items()]
    lines += [f"lost {label}: {reason}" for label, reason in summary["lost"].items()]
    if summary["requeued_batches"]:
        lines.append(f"{summary['requeued_batches']} batches of lost workers answered by the others")
    return lines


@main.command()
@click.argument("shard_dirs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--out", required=True, type=click.Path(file_okay=False), help="the merged run directory (new)")
@_guard
def merge(shard_dirs, out):
    """Join the shards of one run (--shard I/N) into a normal run directory, after checking that
    they share one configuration and answer every planned request exactly once."""
    from .commands.merging import MergeError, merge_shards
    from .reports.report import load_scored, print_runs

    refuse_output_inside(out, shard_dirs)
    try:
        done = merge_shards(list(shard_dirs), out)
    except MergeError as exc:
        for line in exc.problems[:50]:
            click.echo(f"  {line}", err=True)
        raise Failure(str(exc)) from None
    print_runs([load_scored(out)])
    click.echo(f"merged {done['shards']} shards ({done['requests']} requests) into {out}")


@main.command()
@click.argument("benchmark")
@click.option("--model", "model_spec", required=True)
@click.option("--model-arg", multiple=True, help="adapter option key=value (repeatable)")
@click.option("--data", "data_dir", type=click.Path(), help="the benchmark's files")
@click.option("--protocol", type=_ProtocolChoice())
@click.option("--frames", help="also a frames sweep, e.g. 1,2,4,8,16,32")
@click.option("--bench-arg", multiple=True, help="loader option key=value")
@click.option("--limit", type=click.IntRange(min=1), help="only the first N groups")
@click.option("--out", required=True, type=click.Path(file_okay=False), help="one run directory per condition")
@click.option("--html", "html_path", type=click.Path(dir_okay=False), help="the ablation table, tables and plots")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), help="the ablation table as JSON")
@click.option("--cache-dir", type=click.Path(file_okay=False))
@click.option("--threads", type=click.IntRange(min=1))
@_guard
def ablate(benchmark, model_spec, model_arg, data_dir, protocol, frames, bench_arg, limit, out, html_path, json_path,
           cache_dir, threads):
    """The papers' temporal-sensitivity runs as one table: full, shuffled, reversed, one frame,
    no video (and a frames sweep), each paired with the full run on the same items."""
    from .commands.ablation import ablate as run_ablation
    from .commands.ablation import ablation_data, ablation_table, dependence_lines
    from .reports.report import make_console

    for written in (out, html_path, json_path):
        refuse_output_inside(written, [data_dir])
    config = RunConfig(benchmark, model_spec, data_dir=data_dir, protocol=protocol, limit=limit,
                       model_args=_key_values(model_arg, "--model-arg"),
                       benchmark_args=_key_values(bench_arg, "--bench-arg"))
    result = run_ablation(config, out, frames=tuple(_frames_list(frames)), cache_dir=cache_dir, threads=threads,
                          progress=sys.stderr.isatty())
    console = make_console()
    console.print(ablation_table(result))
    for line in dependence_lines(result):
        click.echo(line)
    if json_path:
        with open(json_path, "w", encoding="utf-8") as handle:
            json.dump(ablation_data(result), handle, indent=2, ensure_ascii=False)
        click.echo(f"wrote {json_path}")
    if html_path:
        from .reports.html import write_html

        write_html([scored.run_dir for _, scored in result.runs], html_path, ablation=ablation_data(result))
        click.echo(f"wrote {html_path}")
    click.echo(f"runs in {out}/")


@main.command()
@click.argument("benchmark")
@click.option("--data", "data_dir", required=True, type=click.Path(exists=True), help="the benchmark's files")
@click.option("--protocol", type=_ProtocolChoice(), help="whose chance levels to show")
@click.option("--bench-arg", multiple=True, help="loader option key=value")
@click.option("--json", "as_json", is_flag=True)
@_guard
def inspect(benchmark, data_dir, protocol, bench_arg, as_json):
    """Count what a benchmark holds (per test and subtest) and its chance levels; runs nothing."""
    from .commands.inspection import inspect_benchmark

    data = inspect_benchmark(benchmark, data_dir, protocol, **_key_values(bench_arg, "--bench-arg"))
    if as_json:
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
        return
    click.echo(f"{data['benchmark']}: {data['total']} {data['unit']}")
    for key, count in data["counts"].items():
        click.echo(f"  {key:45s} {count:6d}")
    click.echo(f"chance ({data['protocol']}): " + ", ".join(f"{k} {v:.2f}" for k, v in data["chance"].items()))
    if data["missing_tests"]:
        click.echo(f"missing or empty: {', '.join(data['missing_tests'])} (averages cover the other tests and say so)")
    for name, counts in data.get("files", {}).items():
        click.echo(f"  {name}: {counts['records']} records, {counts['removed by the validation filter']} removed by "
                   "the validation filter")
    for name, reason in data.get("ignored", {}).items():
        click.echo(f"  ignored {name}: {reason}")


@main.command()
@click.argument("benchmark")
@click.option("--dest", required=True, type=click.Path(file_okay=False))
@click.option("--no-download", is_flag=True, help="only check what is already in DEST")
@click.option("--youtube", is_flag=True, help="cut missing clips from YouTube with yt-dlp and ffmpeg")
@click.option("--bench-arg", multiple=True, help="loader option key=value")
@_guard
def prepare(benchmark, dest, no_download, youtube, bench_arg):
    """Fetch a benchmark's published files, then list the videos still missing."""
    from .commands.prepare import prepare as run_prepare

    report = run_prepare(benchmark, dest, download=not no_download, youtube=youtube,
                         **_key_values(bench_arg, "--bench-arg"))
    for note in report.notes:
        click.echo(note)
    if report.downloaded:
        click.echo(f"downloaded {len(report.downloaded)} files into {dest}")
    click.echo(f"{report.referenced} videos referenced, {len(report.missing)} missing")
    for path in report.missing[:20]:
        click.echo(f"  missing {path}")
    if len(report.missing) > 20:
        click.echo(f"  ... and {len(report.missing) - 20} more")


@main.command()
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--json", "as_json", is_flag=True)
@click.option("--tie-policy", type=click.Choice(TIE_POLICIES), default="strict", show_default=True)
@_guard
def score(run_dir: str, as_json: bool, tie_policy: str) -> None:
    """Recompute every metric from a run's stored answers (no model needed)."""
    report = score_run(run_dir, tie_policy=tie_policy)
    if as_json:
        click.echo(json.dumps(report.to_json(), indent=2, ensure_ascii=False))
        return
    from .reports.report import load_scored, print_runs

    scored = load_scored(run_dir)
    scored.report = report
    print_runs([scored])


@main.command()
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--no-plan", is_flag=True, help="do not compare with a fresh plan of the benchmark's files")
@_guard
def check(run_dir: str, no_plan: bool) -> None:
    """Verify a stored run: every request answered once, no corrupt line, a readable configuration."""
    from .commands.checking import check_run

    problems, counts = check_run(run_dir, plan=not no_plan)
    summary = ", ".join(f"{v} {k}" for k, v in counts.items())
    if problems:
        for line in problems[:50]:
            click.echo(f"  {line}")
        raise Failure(f"{run_dir}: {len(problems)} problem(s) ({summary})")
    click.echo(f"{run_dir}: whole ({summary})")


@main.command()
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--html", "html_path", type=click.Path(dir_okay=False), help="one self-contained HTML report")
@click.option("--csv", "csv_path", type=click.Path(dir_okay=False), help="the paper tables as CSV")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), help="the paper tables as JSON")
@click.option("--latex", "latex_path", type=click.Path(dir_okay=False), help="the paper tables as LaTeX")
@click.option("--samples", default=200, show_default=True, help="items per run in the HTML sample browser")
@click.option("--no-thumbnails", is_flag=True, help="leave frame thumbnails out of the HTML report")
@_guard
def report(run_dirs, html_path, csv_path, json_path, latex_path, samples, no_thumbnails):
    """Tables of one or more runs, side by side; optionally an HTML report and exports."""
    from .reports.report import load_scored, print_runs
    from .execution.store import RUN_FILES

    # Other files beside a run's own are harmless (a report.html kept with its run); its own are not.
    for written in (html_path, csv_path, json_path, latex_path):
        refuse_output_inside(written, [os.path.join(d, name) for d in run_dirs for name in RUN_FILES])
    runs = [load_scored(d) for d in run_dirs]
    print_runs(runs)
    if csv_path or json_path or latex_path:
        from .reports.html import paper_tables, write_table_csv, write_table_json, write_table_latex

        tables = paper_tables(runs)
        for path, writer in ((csv_path, write_table_csv), (json_path, write_table_json),
                             (latex_path, write_table_latex)):
            if path:
                writer(tables, path)
                click.echo(f"wrote {path}")
    if html_path:
        from .reports.html import write_html

        write_html(list(run_dirs), html_path, limit=samples, thumbnails=not no_thumbnails)
        click.echo(f"wrote {html_path}")


@main.command()
@click.option("--cache-dir", type=click.Path(file_okay=False), help="default: TIMEFOIL_CACHE or ~/.cache/timefoil")
@click.option("--prune", "prune_to", help="evict least recently used frames down to this size (e.g. 500M)")
@click.option("--clear", type=click.Choice(["frames", "responses", "all"]), help="delete cached frames or answers")
@_guard
def cache(cache_dir, prune_to, clear):
    """Show the frame and response caches (size, entries); prune or clear them."""
    from .core.paths import default_cache_dir
    from .video.diskcache import FrameDiskCache, parse_size

    root = cache_dir or default_cache_dir()
    frames = FrameDiskCache(root)
    responses = os.path.join(root, "responses.sqlite")
    if prune_to:
        frames.prune(parse_size(prune_to))
    if clear in ("frames", "all"):
        click.echo(f"removed {frames.clear()} frame entries")
    files = [responses + suffix for suffix in ("", "-wal", "-shm")]
    if clear in ("responses", "all"):
        for path in files:
            try:
                os.remove(path)
            except FileNotFoundError:  # never made, or removed meanwhile by another clear
                pass
        click.echo("removed the response cache")
    size, count = frames.usage()
    answers = sum(os.stat(path).st_size for path in files if os.path.isfile(path))
    click.echo(f"{root}: frames {size / 1024**2:.1f} MB in {count} entries (budget {frames.budget / 1024**2:.0f} MB, "
               f"TIMEFOIL_CACHE_MAX); responses {answers / 1024**2:.1f} MB")


@main.command()
@click.option("--out", default="timefoil-demo", show_default=True, type=click.Path(file_okay=False))
@click.option("--per-family", default=6, show_default=True)
@_guard
def demo(out: str, per_family: int) -> None:
    """Generate a small suite, run the reference models, print the tables (offline)."""
    from .commands.demo import run_demo

    run_demo(out, per_family=per_family)


@main.group()
def build() -> None:
    """Build a new counterfactual benchmark: generate, filter, validate with people."""


@build.command("run")
@click.argument("recipe", type=click.Path(exists=True, dir_okay=False))
@click.option("--out", required=True, type=click.Path(file_okay=False), help="build folder (resumes if present)")
@click.option("--cache-dir", type=click.Path(file_okay=False), help="response cache (TIMEFOIL_CACHE)")
@_guard
def build_run(recipe, out, cache_dir):
    """Run a recipe (YAML or JSON): the benchmark goes to OUT/benchmark, with build.json and datasheet.md."""
    from .building.recipe import Build, read_recipe

    steps, base = read_recipe(recipe), os.path.dirname(os.path.abspath(recipe))
    refuse_output_inside(out, [recipe, os.path.join(base, steps["source"])])
    done = Build(steps, out, base=base, cache_dir=cache_dir, say=click.echo).run()
    click.echo(f"{done['pairs']} pairs -> {done['candidates']} candidates -> {done['items']} items in "
               f"{done['benchmark']} (timefoil run items --data {done['benchmark']} ...); see {out}/datasheet.md")


@build.command("annotate")
@click.argument("bench_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--annotator", required=True, help="their name: it seeds their order of items and options")
@click.option("--task", type=click.Choice(["choice", "validate"]), default="choice", show_default=True)
@click.option("--aspects", help="comma-separated aspects to offer (validate; default: the folder's tests)")
@click.option("--frames", default=6, show_default=True, type=click.IntRange(1, 64))
@click.option("--out", "out", required=True, type=click.Path(dir_okay=False), help="the HTML page to write")
@click.option("--cache-dir", type=click.Path(file_okay=False))
@_guard
def build_annotate(bench_dir, annotator, task, aspects, frames, out, cache_dir):
    """Write one self-contained page on which a person answers the items and saves a JSON file."""
    from .benchmarks import folder
    from .building.annotate import page_data, write_page

    refuse_output_inside(out, [bench_dir])
    items = folder.load(bench_dir)
    name = folder.read_meta(bench_dir).get("name") or os.path.basename(os.path.abspath(bench_dir))
    offered = aspects.split(",") if aspects else list(dict.fromkeys(i.test for i in items))
    data = page_data(items, annotator, task, benchmark=name, aspects=offered, frames=frames, cache_dir=cache_dir)
    write_page(out, data)
    click.echo(f"{out}: {len(data['items'])} items for {annotator} ({task})")


@build.command("collect")
@click.argument("bench_dir", type=click.Path(exists=True, file_okay=False))
@click.argument("answers", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--rule", default="2/3", show_default=True, help="acceptance: K/N, majority or unanimous")
@click.option("--aggregate", type=click.Choice(["mode", "each"]), default="mode", show_default=True,
              help="human run: the mode of the annotators' answers, or one run per annotator")
@click.option("--out", type=click.Path(file_okay=False), help="write the human baseline run here")
@click.option("--accepted", type=click.Path(file_okay=False), help="write the accepted items as a folder here")
@click.option("--build-dir", type=click.Path(exists=True, file_okay=False),
              help="the build folder: agreement goes into its datasheet")
@click.option("--json", "as_json", is_flag=True)
@_guard
def build_collect(bench_dir, answers, rule, aggregate, out, accepted, build_dir, as_json):
    """Agreement (Fleiss' kappa, Krippendorff's alpha, 95% CIs), accepted items and a human run."""
    from .building.collect import collect
    from .building.recipe import agreement_lines

    result = collect(bench_dir, answers, rule=rule, aggregate=aggregate, out=out, accepted_dir=accepted,
                     build_dir=build_dir)
    if as_json:
        click.echo(json.dumps(result, indent=2))
        return
    for line in agreement_lines(result):
        click.echo(line)
    for run_dir in result.get("runs", []):
        click.echo(f"human run: {run_dir} (timefoil report {run_dir} ...)")


if __name__ == "__main__":
    main()
