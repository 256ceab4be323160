"""``timefoil build``: make a new counterfactual benchmark."""
from __future__ import annotations

import json
import os

import click

from ..core.paths import refuse_output_inside
from .app import main
from .common import guard


@main.group()
def build() -> None:
    """Build a new counterfactual benchmark: generate, filter, validate with people."""


@build.command("run")
@click.argument("recipe", type=click.Path(exists=True, dir_okay=False))
@click.option("--out", required=True, type=click.Path(file_okay=False), help="build folder (resumes if present)")
@click.option("--cache-dir", type=click.Path(file_okay=False), help="response cache (TIMEFOIL_CACHE)")
@guard
def build_run(recipe, out, cache_dir):
    """Run a recipe (YAML or JSON): the benchmark goes to OUT/benchmark, with build.json and datasheet.md."""
    from ..building.recipe import Build, read_recipe

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
@guard
def build_annotate(bench_dir, annotator, task, aspects, frames, out, cache_dir):
    """Write one self-contained page on which a person answers the items and saves a JSON file."""
    from ..benchmarks import folder
    from ..building.annotate import page_data, write_page

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
@guard
def build_collect(bench_dir, answers, rule, aggregate, out, accepted, build_dir, as_json):
    """Agreement (Fleiss' kappa, Krippendorff's alpha, 95% CIs), accepted items and a human run."""
    from ..building.collect import collect
    from ..building.datasheet import agreement_lines

    result = collect(bench_dir, answers, rule=rule, aggregate=aggregate, out=out, accepted_dir=accepted,
                     build_dir=build_dir)
    if as_json:
        click.echo(json.dumps(result, indent=2))
        return
    for line in agreement_lines(result):
        click.echo(line)
    for run_dir in result.get("runs", []):
        click.echo(f"human run: {run_dir} (timefoil report {run_dir} ...)")
