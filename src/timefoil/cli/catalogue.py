"""What timefoil knows and holds: ``list``, ``inspect``, ``generate``, ``prepare`` and ``demo``."""
from __future__ import annotations

import json
import os
import shutil
import sys
import textwrap

import click

from ..benchmarks import BENCHMARKS, DataError, paper_order
from ..models import MODELS
from ..protocols import PROTOCOLS
from .app import main
from .common import Failure, ProtocolChoice, guard, key_values


# Metrics every protocol gets from the structure of the items; each protocol adds its own.
STRUCTURE_METRICS = {
    "P": "accuracy on proficiency items", "P+T": "main and proficiency both right (ViLMA)",
    "group": "all main items of a group right (Vinoground group score, TemporalBench MBA)",
    "text / video": "all-correct per role (Vinoground text and video scores)",
    "average": "mean over tests of the benchmark's headline metric",
}


def metrics_meanings() -> dict[str, str]:
    out = dict(STRUCTURE_METRICS)
    for protocol in PROTOCOLS.values():
        for name, meaning in protocol.metrics.items():
            said = f"{meaning} ({protocol.name})"
            out[name] = f"{out[name]}; {said}" if name in out else said
    return out


@main.command("list")
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
def list_cmd(as_json: bool) -> None:
    """Benchmarks, their --bench-arg options, protocols, models, metrics and the papers' numbers."""
    from ..commands.benchargs import accepted_keys

    data = {"benchmarks": {n: BENCHMARKS[n].description for n in sorted(BENCHMARKS, key=paper_order)},
            "benchmark options": {n: ", ".join(keys) if (keys := accepted_keys(n)) is not None else "any key=value"
                                  for n in BENCHMARKS},
            "protocols": {n: p.description for n, p in PROTOCOLS.items()},
            "models": {n: m.description for n, m in MODELS.items()}, "metrics": metrics_meanings(),
            "paper numbers": {n: b.paper_numbers for n, b in BENCHMARKS.items() if b.paper_numbers},
            # where each prompt's wording comes from: a paper, a released script, or timefoil
            "prompt variants": {f"{n} {variant}": source for n, b in BENCHMARKS.items()
                                for variant, source in b.prompt_sources().items()}}
    if as_json:
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
        return
    width = _text_width()
    heads = {"benchmark options": "benchmark options (--bench-arg NAME.KEY=VALUE)"}
    for section, entries in data.items():
        click.echo(click.style(heads.get(section, section), bold=True))
        for name, text in entries.items():
            if section == "paper numbers" and BENCHMARKS[name].quoted:
                _paper_tables(name, width)
                continue
            click.echo(_wrapped(text, width, f"  {name:28s} "))


def _paper_tables(name: str, width: int) -> None:
    """A benchmark's quoted rows: each table on a line of its own, each row under it on its own."""
    tables: dict[tuple[str, str], list[str]] = {}
    for row in BENCHMARKS[name].quoted:
        tables.setdefault((row.source, row.protocol), []).append(f"{row.label}: {row.describe()[len(row.label) + 1:]}")
    click.echo(f"  {name}")
    for (source, protocol), rows in tables.items():
        click.echo(f"    {source} ({protocol})")
        for row in rows:
            click.echo(_wrapped(row, width, " " * 6))


def _wrapped(text: str, width: int, lead: str) -> str:
    """Lines that break between words only (never inside a number), the rest indented."""
    return textwrap.fill(text, width, initial_indent=lead, subsequent_indent=" " * (len(lead) + 2),
                         break_long_words=False, break_on_hyphens=False)


def _text_width() -> int:
    """The terminal's columns; 100 where the output is piped (COLUMNS, where set, decides)."""
    if sys.stdout.isatty():
        return max(60, shutil.get_terminal_size((100, 24)).columns)
    try:
        return max(60, int(os.environ.get("COLUMNS", "")))
    except ValueError:
        return 100


@main.command()
@click.argument("benchmark")
@click.option("--data", "data_dir", required=True, type=click.Path(exists=True), help="the benchmark's files")
@click.option("--protocol", type=ProtocolChoice(), help="whose chance levels to show")
@click.option("--bench-arg", multiple=True, help="loader option key=value")
@click.option("--json", "as_json", is_flag=True)
@guard
def inspect(benchmark, data_dir, protocol, bench_arg, as_json):
    """Count what a benchmark holds (per test and subtest) and its chance levels; runs nothing."""
    from ..commands.inspection import inspect_benchmark

    from ..commands.benchargs import bench_options, run_options

    asked, loader = run_options(bench_options(bench_arg, [BENCHMARKS.find(benchmark).name])[benchmark])
    data = inspect_benchmark(benchmark, data_dir, asked.get("protocol", protocol), **loader)
    if data.get("repeated"):  # on stderr, as every warning: the counts below include them
        said = data["repeated"]
        click.echo(f"timefoil: {said['items']} item(s) ask word for word what an earlier one asks (first: "
                   f"{said['first'][0]} repeats {said['first'][1]}); each is counted, as the files count it",
                   err=True)
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
@click.argument("benchmark", type=click.Choice(["synth"]))  # the published benchmarks come from `prepare`
@click.option("--out", required=True, type=click.Path(file_okay=False), help="directory to write")
@click.option("--per-family", default=8, show_default=True, help="counterfactual pairs per family")
@click.option("--seed", default=0, show_default=True)
@guard
def generate(benchmark: str, out: str, per_family: int, seed: int) -> None:
    """Render the synthetic counterfactual suite."""
    from ..synth import generate as generate_suite

    items = generate_suite(out, per_family=per_family, seed=seed)
    click.echo(f"wrote {len(items)} items to {out}")


@main.command()
@click.argument("benchmark")
@click.option("--dest", required=True, type=click.Path(file_okay=False))
@click.option("--no-download", is_flag=True, help="only check what is already in DEST")
@click.option("--youtube", is_flag=True, help="cut missing clips from YouTube with yt-dlp and ffmpeg")
@click.option("--bench-arg", multiple=True, help="loader option key=value")
@guard
def prepare(benchmark, dest, no_download, youtube, bench_arg):
    """Fetch a benchmark's published files, then list the videos still missing. BENCHMARK "all":
    the five papers' benchmarks, each into DEST/<benchmark> (what run --data-root reads)."""
    from ..commands.papers import PAPERS
    from ..commands.prepare import prepare as run_prepare

    if benchmark != "all":
        return _prepared(run_prepare(benchmark, dest, download=not no_download, youtube=youtube,
                                     **key_values(bench_arg, "--bench-arg")))
    failed = []
    for name in PAPERS:  # one that cannot be fetched is one line; the others are still prepared
        try:
            report = run_prepare(name, os.path.join(dest, name), download=not no_download, youtube=youtube)
        except DataError as exc:  # named in its own line: stderr and stdout may not interleave in order
            click.echo(f"{name}: {exc}", err=True)
            failed.append(name)
            continue
        click.echo(f"{name}:")
        _prepared(report)
    if failed:
        raise Failure(f"{len(failed)} of {len(PAPERS)} benchmarks not ready ({', '.join(failed)}): each line above "
                      "says where its files come from")


def _prepared(report) -> None:
    for note in report.notes:
        click.echo(note)
    if report.downloaded:
        click.echo(f"downloaded {len(report.downloaded)} files into {report.dest}")
    click.echo(f"{report.referenced} videos referenced, {len(report.missing)} missing")
    for path in report.missing[:20]:
        click.echo(f"  missing {path}")
    if len(report.missing) > 20:
        click.echo(f"  ... and {len(report.missing) - 20} more")


@main.command()
@click.option("--out", default="timefoil-demo", show_default=True, type=click.Path(file_okay=False))
@click.option("--per-family", default=6, show_default=True)
@guard
def demo(out: str, per_family: int) -> None:
    """Generate a small suite, run the reference models, print the tables (offline)."""
    from ..commands.demo import run_demo

    run_demo(out, per_family=per_family)
