"""Several benchmarks in one command: ``timefoil run vinoground,velociti --data-root DIR`` (``all``:
the five papers' benchmarks). Each benchmark is read from ``DIR/<benchmark>`` (what ``timefoil
prepare <benchmark> --dest DIR/<benchmark>`` writes) into its own run folder
``OUT/<benchmark>-<protocol>``; OUT is then a suite (``suite.json`` marks it).

Every benchmark is planned before the model loads: its data read, its folder free or holding
this run, a protocol the model answers (one it can, where it cannot answer the benchmark's
default: said in one line). A benchmark that cannot run is one line and is skipped, and the
others run. The model loads once, and only where something is left to ask."""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field, replace
from typing import Callable

from ..benchmarks import BENCHMARKS, PAPERS, DataError, get_benchmark
from ..core.redaction import redact
from ..execution.config import RunConfig, RunError, fitted_to_model
from ..execution.plan import RunPlan, plan_run
from ..core.output import write_whole
from ..execution.rundir import holds_this_run, other_weights
from ..execution.store import CONFIG, RunLog
from ..protocols import get_protocol
from .benchargs import run_options
from .checking import named_change, stored_weights, weights_changed, weights_sized_only

SUITE = "suite.json"  # in a folder that run all (or a list) wrote: one run per benchmark beneath
# protocols tried, in this order, where a model cannot answer a benchmark's default one: a chat
# model is asked to choose between the captions (both orders), else whether a caption holds
FALLBACKS = ("choice", "entailment", "similarity", "retrieval", "generation")


@dataclass
class Planned:
    benchmark: str
    run_dir: str
    plan: RunPlan
    finished: bool = False  # every request answered already: scored without the model


@dataclass
class PapersPlan:
    planned: list[Planned] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # one line each: why, and what to do
    chosen: list[str] = field(default_factory=list)  # one line each: a protocol picked for the model

    @property
    def to_ask(self) -> list[Planned]:
        return [planned for planned in self.planned if not planned.finished]


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


def answers(benchmark: str, protocol: str, variant: str | None, kinds: frozenset[str]) -> bool:
    """Whether a model answering ``kinds`` can be asked ``benchmark`` under ``protocol``."""
    try:
        prompts = get_benchmark(benchmark).prompts_for(variant, protocol)
    except ValueError:  # a variant written for another protocol
        return False
    return get_protocol(protocol).request_kinds(prompts) <= kinds


def answerable(config: RunConfig, kinds: frozenset[str] | None) -> tuple[RunConfig, str | None]:
    """``config`` with a protocol its model answers, and the line saying so where it is not the
    benchmark's default; a protocol asked for by name is kept or refused, never replaced.
    ``kinds``: what the model answers (None: not known before it loads, so nothing is changed)."""
    bench = get_benchmark(config.benchmark)
    protocol = config.protocol or bench.default_protocol
    if kinds is None or answers(bench.name, protocol, config.variant, kinds):
        return as_written(config, protocol, kinds)
    needed = ", ".join(sorted(get_protocol(protocol).request_kinds(bench.prompts_for(config.variant, protocol))
                              - kinds))
    model = redact(config.model)  # a key may be written in a served model's URL
    said = f"model {model!r} cannot answer {needed} requests (it answers: {', '.join(sorted(kinds))})"
    if config.protocol:
        raise RunError(f"{said}; choose another protocol with --bench-arg {bench.name}.protocol=")
    for candidate in [p for p in FALLBACKS if p in bench.protocols] + sorted(set(bench.protocols) - set(FALLBACKS)):
        if answers(bench.name, candidate, config.variant, kinds):
            both = candidate == "choice" and (config.order_policy or "both") == "both"
            chosen = replace(config, protocol=candidate,
                             order_policy=config.order_policy or ("both" if candidate == "choice" else None))
            said = (f"{bench.name}: {model} answers no {needed} requests ({protocol}, the default): "
                    f"asking {candidate}{' in both option orders' if both else ''} "
                    f"(--bench-arg {bench.name}.protocol= decides)")
            chosen, worded = as_written(chosen, candidate, kinds)
            return chosen, "; ".join(filter(None, (said, worded)))
    raise RunError(f"{said}, and none of {bench.name}'s protocols ({', '.join(bench.protocols)}) asks only those")


WRITTEN_ONLY = frozenset({"entailment", "choice", "generation"})  # a chat model: no scores, only replies


def as_written(config: RunConfig, protocol: str, kinds: frozenset[str] | None) -> tuple[RunConfig, str | None]:
    """``config`` asked with the prompts its paper gave models that answer only in writing (its
    closed models: VELOCITI's "Just answer with either Yes or No."), where the model is such a
    one, no variant is given and those prompts differ for ``protocol``; and the line saying so."""
    bench = get_benchmark(config.benchmark)
    if config.variant or kinds is None or not kinds <= WRITTEN_ONLY or bench.written_variant is None:
        return config, None
    variant, default = bench.written_variant
    try:
        written = bench.prompts_for(variant, protocol)
    except ValueError:  # a variant written for other protocols
        return config, None
    kind = get_protocol(protocol).kind
    if getattr(written, kind, None) == getattr(bench.prompts_for(None, protocol), kind, None):
        return config, None
    return (replace(config, variant=variant),
            f"{bench.name}: a model that answers only in writing is asked with the paper's prompt for its closed "
            f"models ({written.source}; --bench-arg {bench.name}.variant={default} keeps the open models' one)")


def finished(run_dir: str, plan: RunPlan, retry_errors: bool, memo_dir: str | None = None) -> bool:
    """Whether ``run_dir`` holds this plan's run with every request answered (a failed one
    counts as answered unless ``retry_errors``); a folder holding another run is refused.
    ``memo_dir``: the cache folder keeping the weights' hashes (the run's --cache-dir)."""
    if not holds_this_run(run_dir, plan):
        return False
    # scored without its model, a run is still held to the weights of a local folder, read from
    # the files alone: a checkpoint saved again in place makes it another model's run
    with open(os.path.join(run_dir, CONFIG), encoding="utf-8") as handle:
        meta = json.load(handle)
    sized_only = weights_sized_only(meta, memo_dir)
    if sized_only or weights_changed(meta, memo_dir):
        found = stored_weights(meta)
        raise other_weights(run_dir, sized_only=sized_only,
                            changed=named_change(meta, found[0], memo_dir) if found else None)
    try:
        done = RunLog(run_dir).done_ids(include_errors=not retry_errors)
    except ValueError:  # a record the runner itself refuses, naming its line
        return False
    return all(p.id in done for _, p in plan.part)


def plan_papers(benchmarks: list[str], base: RunConfig, data_root: str, out: str,
                options: dict[str, dict[str, str]], sampling_for: Callable, *,
                kinds: frozenset[str] | None = None, retry_errors: bool = False,
                memo_dir: str | None = None, frames: tuple[int, str] | None = None) -> PapersPlan:
    """Each benchmark's plan, or the line saying why it is skipped. ``base``: the options every
    benchmark shares (model, protocol, variant, ...); ``options``: each benchmark's --bench-arg
    options (benchargs.bench_options); ``sampling_for(benchmark)``: its samplings; ``kinds``:
    the request kinds the model answers, where known before it loads; ``frames``: the frame count
    it takes, where fixed (X-CLIP: each benchmark samples that many, or one asked otherwise is skipped)."""
    result = PapersPlan()
    for name in benchmarks:
        data = os.path.join(data_root, name)
        if not os.path.isdir(data):
            result.skipped.append(f"{name}: no data in {data}; get it with: timefoil prepare {name} --dest {data}")
            continue
        asked, loader = run_options(options.get(name, {}))
        config = replace(base, benchmark=name, data_dir=data, benchmark_args={**base.benchmark_args, **loader},
                         protocol=asked.get("protocol", base.protocol), variant=asked.get("variant", base.variant))
        try:
            config, said = answerable(config, kinds)
            protocol = config.protocol or get_benchmark(name).default_protocol
            samplings, runs = sampling_for(name), []
            for sampling in samplings:
                folder = os.path.join(out, f"{name}-{protocol}")
                if len(samplings) > 1:  # a frames sweep: one folder per value, as a single run writes them
                    folder = os.path.join(folder, sampling.label())
                asked, fitted = fitted_to_model(replace(config, sampling=sampling), frames)
                if fitted and fitted not in result.chosen:  # X-CLIP on Vinoground: its 8 frames, not 32
                    result.chosen.append(fitted)
                plan = plan_run(asked, check_specs=False)
                runs.append(Planned(name, folder, plan, finished(folder, plan, retry_errors, memo_dir)))
        except (DataError, RunError, ValueError) as exc:  # said, and the other benchmarks still run
            result.skipped.append(f"{name}: {exc}")
            continue
        result.planned += runs
        if said:
            result.chosen.append(said)
    return result


def is_suite(path: str) -> bool:
    """Whether ``path`` is a folder of runs that run all (or a list) wrote: marked so, or (one
    written before the mark) holding a ``<benchmark>-<protocol>`` run folder and no run itself."""
    if os.path.isfile(os.path.join(path, SUITE)):
        return True
    if not os.path.isdir(path) or os.path.isfile(os.path.join(path, CONFIG)):
        return False
    return any(folder.partition("-")[0] in BENCHMARKS and os.path.isfile(os.path.join(path, folder, CONFIG))
               for folder in os.listdir(path) if "-" in folder)


def refuse_run_as_suite(out: str) -> None:
    """A folder holding one run is not a suite: writing the benchmarks beneath it would mix
    them with that run."""
    if os.path.isfile(os.path.join(out, CONFIG)):
        raise RunError(f"{out} holds one run (its run.json), not a suite of benchmarks; give several "
                       "benchmarks a new --out folder")


def mark_suite(out: str, model: str) -> None:
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, SUITE)
    if not os.path.exists(path):
        write_whole(path, json.dumps({"what": "a suite of runs, one per benchmark (OUT/<benchmark>-<protocol>)",
                                      "model": redact(model), "created": time.strftime("%Y-%m-%dT%H:%M:%S")},
                                     indent=2))


def run_papers(plan: PapersPlan, model_spec: str, model_args: dict, *, cache_dir: str | None, on_done: Callable,
               on_skip: Callable, threads: int | None = None, ray=None, load: Callable | None = None,
               **runner_options) -> list[tuple[Planned, object]]:
    """Every planned run: those finished scored as they stand, the others with one model,
    loaded once and only where one is left (on Ray, each run's workers load their own).
    ``on_done(planned, runner or None, report)`` after each; ``on_skip(line)`` for a run that
    could not start once the model was there (a fingerprint or request kind it refuses).
    ``load(spec, args, cache_dir)``: how the model loads (the command says so on the terminal)."""
    from ..execution.stored import score_run

    done = []
    for planned in [p for p in plan.planned if p.finished]:
        report = score_run(planned.run_dir)
        on_done(planned, None, report)
        done.append((planned, report))
    if plan.to_ask:
        done += _asked(plan, model_spec, model_args, cache_dir=cache_dir, on_done=on_done, on_skip=on_skip,
                       threads=threads, ray=ray, load=load, **runner_options)
    order = {id(planned): index for index, planned in enumerate(plan.planned)}
    return sorted(done, key=lambda pair: order[id(pair[0])])  # in the command's order, however answered


def _asked(plan: PapersPlan, model_spec: str, model_args: dict, *, cache_dir: str | None, on_done: Callable,
           on_skip: Callable, threads: int | None, ray, load: Callable | None, **runner_options):
    from ..core.paths import cache_root
    from ..core.threads import apply_threads
    from ..execution.runner import Runner
    from ..models import load_model

    done = []
    apply_threads(threads)  # before the model loads: loading runs on them too
    cache_dir = cache_root(cache_dir)  # a cache root that is a file, or unwritable: one line, before the load
    model = None if ray else (load or load_model)(model_spec, model_args, cache_dir=cache_dir)
    for planned in plan.to_ask:
        try:
            runner = Runner(planned.plan, planned.run_dir, cache_dir=cache_dir, model=model, loaded_from_spec=True,
                            threads=threads, ray=ray, **runner_options)
            report = runner.run()
        except RunError as exc:  # another model's run in its folder, a kind it cannot answer after all
            on_skip(f"{planned.benchmark}: {exc}")
            continue
        on_done(planned, runner, report)
        done.append((planned, report))
    return done


__all__ = ["FALLBACKS", "PAPERS", "PapersPlan", "Planned", "SUITE", "answerable", "benchmarks_named", "finished",
           "is_suite", "mark_suite", "plan_papers", "refuse_run_as_suite", "run_papers"]
