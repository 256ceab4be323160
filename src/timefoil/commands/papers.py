"""Several benchmarks in one command: ``timefoil run vinoground,velociti --data-root DIR`` (``all``:
the five papers' benchmarks under their default protocols). Each benchmark is read from
``DIR/<benchmark>`` (what ``timefoil prepare <benchmark> --dest DIR/<benchmark>`` writes) into its
own run folder ``OUT/<benchmark>-<protocol>``, with the model loaded once for all of them. A run
folder resumes as a single run does; a benchmark whose data is missing or unreadable is one line
and is skipped, and the others run."""
from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import Callable

from ..benchmarks import DataError, get_benchmark
from ..execution.config import RunConfig
from ..execution.plan import RunPlan, plan_run
from ..protocols import PROTOCOLS

PAPERS = ("vinoground", "temporalbench", "vitatecs", "velociti", "vilma")  # "all"
RUN_OPTIONS = ("protocol", "variant")  # --bench-arg NAME.protocol=... sets a run option, not a loader's


@dataclass
class Planned:
    benchmark: str
    run_dir: str
    plan: RunPlan


@dataclass
class PapersPlan:
    planned: list[Planned] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # one line each: what is missing and what to do


def benchmarks_named(argument: str) -> list[str] | None:
    """The benchmarks of a multi-benchmark run ("all", or names joined by commas), each checked;
    None for a single benchmark (a plain run)."""
    if argument != "all" and "," not in argument:
        return None
    names = list(PAPERS) if argument == "all" else [n.strip() for n in argument.split(",") if n.strip()]
    for name in names:
        get_benchmark(name)  # an unknown name is refused before anything loads
    if len(set(names)) != len(names):
        raise ValueError(f"{argument!r} names a benchmark twice")
    return names


def split_bench_args(pairs: dict[str, str], benchmarks: list[str]) -> dict[str, dict[str, str]]:
    """``NAME.KEY=VALUE`` options for one benchmark each; a plain ``KEY=VALUE`` for all of them."""
    out: dict[str, dict[str, str]] = {name: {} for name in benchmarks}
    for key, value in pairs.items():
        name, dot, option = key.partition(".")
        if not dot:
            for options in out.values():
                options[key] = value
        elif name not in out:
            raise ValueError(f"--bench-arg {key}={value}: {name!r} is not one of this run's benchmarks "
                             f"({', '.join(benchmarks)})")
        else:
            out[name][option] = value
    return out


def plan_papers(benchmarks: list[str], base: RunConfig, data_root: str, out: str,
                bench_args: dict[str, str], sampling_for: Callable) -> PapersPlan:
    """Each benchmark's plan, or the line saying why it is skipped. ``base``: the options every
    benchmark shares (model, protocol, variant, ...); ``sampling_for(benchmark)``: its samplings."""
    result = PapersPlan()
    for name, options in split_bench_args(bench_args, benchmarks).items():
        data = os.path.join(data_root, name)
        if not os.path.isdir(data):
            result.skipped.append(f"{name}: no data in {data}; get it with: timefoil prepare {name} --dest {data}")
            continue
        run_options = {k: options.pop(k) for k in RUN_OPTIONS if k in options}
        if "protocol" in run_options:
            PROTOCOLS.find(run_options["protocol"])
        config = replace(base, benchmark=name, data_dir=data, benchmark_args={**base.benchmark_args, **options},
                         protocol=run_options.get("protocol", base.protocol),
                         variant=run_options.get("variant", base.variant))
        protocol = config.protocol or get_benchmark(name).default_protocol
        samplings = sampling_for(name)
        try:
            for sampling in samplings:
                folder = os.path.join(out, f"{name}-{protocol}")
                if len(samplings) > 1:  # a frames sweep: one folder per value, as a single run writes them
                    folder = os.path.join(folder, sampling.label())
                result.planned.append(Planned(name, folder, plan_run(replace(config, sampling=sampling),
                                                                     check_specs=False)))
        except DataError as exc:  # its files unreadable: said, and the other benchmarks still run
            result.skipped.append(f"{name}: {exc}")
    return result


def run_papers(plan: PapersPlan, model_spec: str, model_args: dict, *, cache_dir: str | None, on_done: Callable,
               threads: int | None = None, ray=None, **runner_options) -> list[tuple[Planned, object]]:
    """Every planned run with one model, loaded once (on Ray, each run's workers load their own);
    ``on_done(planned, runner, report)`` after each."""
    from ..core.paths import cache_root
    from ..core.threads import apply_threads
    from ..execution.runner import Runner
    from ..models import load_model

    if not plan.planned:
        return []
    apply_threads(threads)  # before the model loads: loading runs on them too
    cache_dir = cache_root(cache_dir)
    model = None if ray else load_model(model_spec, model_args, cache_dir=cache_dir)
    done = []
    for planned in plan.planned:
        runner = Runner(planned.plan, planned.run_dir, cache_dir=cache_dir, model=model, loaded_from_spec=True,
                        threads=threads, ray=ray, **runner_options)
        report = runner.run()
        on_done(planned, runner, report)
        done.append((planned, report))
    return done


__all__ = ["PAPERS", "PapersPlan", "Planned", "benchmarks_named", "plan_papers", "run_papers", "split_bench_args"]
