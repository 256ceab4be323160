"""A run = benchmark x model x protocol x sampling, stored in a directory that can resume.

Requests are deduplicated by content (a (video, text) pair shared by two items is asked
once), grouped so that requests sharing a video are adjacent, looked up in the response
cache, and answered in batches. Every answer is appended to ``items.jsonl`` as it arrives.
"""
from __future__ import annotations

import json
import os
import platform
import subprocess
import time
from collections import Counter, OrderedDict, defaultdict
from dataclasses import dataclass, field, replace
from typing import Any, Sequence

from .answering import Answerer, Entry
from ..benchmarks import get_benchmark
from .distributed import ExecutorError, RayOptions
from ..core.hashing import stable_hash
from ..core.items import Item
from .judging import Judge
from ..models import Model, check_model_spec, load_model
from ..core.options import typed_options
from ..measures.parsing import Parsed
from ..core.paths import __version__, default_cache_dir
from ..protocols import PlanContext, PlannedRequest, Protocol, get_protocol
from ..core.redaction import redact
from ..models.requests import Answer, Request
from ..scoring import ScoreReport, score_records
from .sharding import Shard, VideoUnits, assign, plan_digest, unit_costs
from ..measures.stats import MetricValue
from .store import CONFIG, SHARD, ResponseCache, RunLock, RunLockError, RunLog, write_json
from ..core.threads import apply_threads
from ..video.frames import FRAMES_FORMAT, FrameStore
from ..video.sampling import Sampling


class RunError(RuntimeError):
    """A run that cannot start (bad configuration, unsupported protocol, mismatched run dir)."""


@dataclass
class RunConfig:
    benchmark: str
    model: str
    data_dir: str | None = None
    protocol: str | None = None
    sampling: Sampling | None = None
    model_args: dict[str, Any] = field(default_factory=dict)
    limit: int | None = None  # first N groups; counterfactual groups are never split
    sample: int | None = None  # N groups drawn at random, stratified over tests (seeded by ``seed``)
    seed: int = 0
    order_policy: str | None = None  # "balanced" or "both"; the benchmark's by default
    blind: bool = False  # text only: the language-prior baseline
    judge: str | None = None  # a model that reads answers the protocol's parser cannot
    variant: str | None = None  # a prompt variant of the benchmark (e.g. "cot")
    max_tokens: int | None = None  # answer budget; the variant's own by default (chain of thought: 1024)
    benchmark_args: dict[str, Any] = field(default_factory=dict)  # loader options (subsets, id lists)

    def resolved(self) -> "RunConfig":
        bench = get_benchmark(self.benchmark)
        return RunConfig(**{**self.__dict__,
                            "protocol": self.protocol or bench.default_protocol,
                            "sampling": self.sampling or bench.default_sampling,
                            "order_policy": self.order_policy or bench.order_policy,
                            "data_dir": os.path.abspath(self.data_dir) if self.data_dir else None})

    def to_json(self) -> dict[str, Any]:
        """The stored form; a model spec's URL is stored without its userinfo and query (a key
        may be written there)."""
        data = dict(self.__dict__)
        data["sampling"] = self.sampling.to_json() if self.sampling else None
        data["model"], data["judge"] = redact(self.model), redact(self.judge)
        return data

    @staticmethod
    def from_json(data: dict[str, Any]) -> "RunConfig":
        data = dict(data)
        data["sampling"] = Sampling.from_json(data["sampling"]) if data.get("sampling") else None
        return RunConfig(**data)


def first_groups(items: Sequence[Item], limit: int | None) -> list[Item]:
    if limit is None:
        return list(items)
    keep = list(OrderedDict.fromkeys(item.group_id for item in items))[:limit]
    wanted = set(keep)
    return [item for item in items if item.group_id in wanted]


def sampled_groups(items: Sequence[Item], n: int | None, seed: int) -> list[Item]:
    """``n`` whole groups drawn per test in proportion to the test's size (largest remainders;
    every test gets one while n allows), in a seeded order: the same items for the same seed."""
    if n is None:
        return list(items)
    by_test: dict[str, list[str]] = defaultdict(list)
    for group in OrderedDict((item.group_id, item.test) for item in items).items():
        by_test[group[1]].append(group[0])
    total = sum(len(groups) for groups in by_test.values())
    if n >= total:
        return list(items)
    share = {test: n * len(groups) / total for test, groups in by_test.items()}
    take = {test: int(value) for test, value in share.items()}
    if n >= len(by_test):
        for test in by_test:  # one each first, then the largest remainders
            take[test] = max(1, take[test])
    for test in sorted(share, key=lambda t: (take[t] - share[t], t)):
        if sum(take.values()) >= n:
            break
        if take[test] < len(by_test[test]):
            take[test] += 1
    while sum(take.values()) > n:  # the one-each rule overshot: trim the largest
        largest = max(take, key=lambda t: (take[t], t))
        take[largest] -= 1
    wanted = {g for test, groups in by_test.items()
              for g in sorted(groups, key=lambda g: stable_hash([seed, g]))[:take[test]]}
    return [item for item in items if item.group_id in wanted]


def _environment() -> dict[str, Any]:
    from importlib import metadata

    versions = {"timefoil": __version__, "python": platform.python_version()}
    for package in ("numpy", "av", "torch", "transformers", "httpx"):
        try:  # read from metadata: importing torch just to name its version costs seconds
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            continue
    revision = None
    try:
        revision = subprocess.run(["git", "rev-parse", "HEAD"], cwd=os.path.dirname(__file__), capture_output=True,
                                  text=True, timeout=5).stdout.strip() or None
    except Exception:
        pass
    return {"versions": versions, "git_revision": revision, "platform": platform.platform()}


class Runner:
    def __init__(self, config: RunConfig, run_dir: str, *, cache_dir: str | None = None,
                 model: Model | None = None, progress: bool = True, retry_errors: bool = False,
                 threads: int | None = None, shard: Shard | None = None, ray: RayOptions | None = None):
        """``shard``: answer only this shard of the plan (by video). ``ray``: answer on a Ray
        cluster, one model replica per worker (``model``, when given, is copied to each)."""
        self.threads = apply_threads(threads)  # before the model loads: loading runs on them too
        self.shard = shard
        self.config = config.resolved()
        self.run_dir = run_dir
        self.cache_dir = cache_dir or default_cache_dir()
        self.benchmark = get_benchmark(self.config.benchmark)
        self.protocol: Protocol = get_protocol(self.config.protocol)
        if self.config.protocol not in self.benchmark.protocols:
            raise RunError(f"{self.benchmark.name} has no {self.config.protocol!r} protocol; "
                           f"choose from {', '.join(self.benchmark.protocols)}")
        # A variant unknown, or written for another protocol, is refused before any model loads.
        self.prompts = self.benchmark.prompts_for(self.config.variant, self.config.protocol)
        for spec in ([] if model else [self.config.model]) + ([self.config.judge] if self.config.judge else []):
            check_model_spec(spec)
        self.items = self._load_items()  # a bad annotation is refused before any model loads
        self.pool = None
        if ray is not None:
            from .distributed import RayPool

            try:
                self.pool = RayPool(ray, spec=self.config.model, model_args=self.config.model_args, model=model,
                                    cache_dir=self.cache_dir, threads=threads)
            except ExecutorError as exc:
                raise RunError(str(exc)) from None
            self.model = self.pool.model
        else:
            self.model = model or load_model(self.config.model, self.config.model_args, cache_dir=self.cache_dir)
        self.judge = Judge(self.config.judge, load_model(self.config.judge, cache_dir=self.cache_dir)) \
            if self.config.judge else None
        self.progress = progress
        self.retry_errors = retry_errors
        self.kept_errors = 0
        self.capped: dict | None = None  # videos whose fps sampling the max_frames cap changed
        self.frames = FrameStore(cache_dir=self.cache_dir)
        self.executor = self.pool or Answerer(self.model, self.frames)
        self.fingerprint = stable_hash(self.model.fingerprint())
        missing = self.protocol.request_kinds(self.prompts) - self.model.kinds
        if missing:
            self.close()
            raise RunError(f"model {self.config.model!r} cannot answer {', '.join(sorted(missing))} requests "
                           f"(it answers: {', '.join(sorted(self.model.kinds))})")

    def close(self) -> None:
        """Let the Ray workers go (a one-process run holds nothing)."""
        if self.pool is not None:
            self.pool.close()

    # -- the run directory ------------------------------------------------------------------
    def _open_run_dir(self, full_plan: list[tuple[Item, PlannedRequest]],
                      planned: list[tuple[Item, PlannedRequest]]) -> None:
        os.makedirs(self.run_dir, exist_ok=True)
        path = os.path.join(self.run_dir, CONFIG)
        shard = None
        if self.shard:  # what `merge` needs to check that the shards make the whole plan, once
            shard = {**self.shard.to_json(), "planned": len(full_plan),
                     "plan_digest": plan_digest(p.id for _, p in full_plan)}
        wanted = {"config": self.config.to_json(), "model_fingerprint": self.model.fingerprint(),
                  "fingerprint_hash": self.fingerprint, "shard": shard}
        if os.path.exists(path):
            with open(path, encoding="utf-8") as handle:
                stored = json.load(handle)
            try:  # a run made before a configuration field existed has that field's default
                stored["config"] = RunConfig.from_json(stored["config"]).to_json()
            except (KeyError, TypeError):
                pass  # not a configuration this version can read: the comparison below refuses it
            if {k: stored.get(k) for k in wanted} != wanted:
                if all(stored.get(k) == wanted[k] for k in wanted if k != "shard"):
                    raise RunError(f"{self.run_dir} holds {_part(stored.get('shard'))} of this configuration, not "
                                   f"{_part(shard)}; use one --out directory per shard")
                raise RunError(f"{self.run_dir} holds a run with another configuration; "
                               "use a new --out directory (or delete this one)")
            return
        if shard:  # "elsewhere": an item's requests placed on other shards (its other video), so that
            # a complete shard is scored and checked as complete
            elsewhere = Counter(item.id for item, _ in full_plan)
            elsewhere.subtract(Counter(item.id for item, _ in planned))
            here = {item.id for item, _ in planned}
            write_json(os.path.join(self.run_dir, SHARD),
                       {**shard, "ids": sorted(p.id for _, p in planned),
                        "elsewhere": {i: n for i, n in sorted(elsewhere.items()) if n and i in here}})
        data = {**wanted, "created": time.strftime("%Y-%m-%dT%H:%M:%S"), **_environment(), "threads": self.threads,
                "prompts": self.prompts.source}  # where the wording came from, as this version declared it
        write_json(path, data)

    def _record_notes(self) -> None:
        """The model's notes and this session's thread count, added to run.json (never part of
        the configuration a resume must match)."""
        path = os.path.join(self.run_dir, CONFIG)
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
        notes = {**data.get("model_notes", {}), **getattr(self.model, "notes", {})}
        executor = self.pool.summary() if self.pool else None
        if (data.get("model_notes", {}) == notes and data.get("threads") == self.threads and not executor
                and data.get("capped") == self.capped):
            return
        data["model_notes"], data["threads"] = notes, self.threads
        data.pop("capped", None)
        if self.capped:  # the cap changed what some videos show: said here and on the terminal
            data["capped"] = self.capped
        if executor:  # this session's workers: who answered how much, who was lost
            data["executor"] = executor
        write_json(path, data)

    def _load_items(self) -> list[Item]:
        options = typed_options(self.benchmark.load, self.config.benchmark_args, f"{self.benchmark.name} option")
        loaded = self.benchmark.load(self.config.data_dir or "", **options)
        return first_groups(sampled_groups(loaded, self.config.sample, self.config.seed), self.config.limit)

    def full_plan(self) -> list[tuple[Item, PlannedRequest]]:
        """Every request of the configuration (all shards)."""
        config = self.config
        context = PlanContext(prompts=self.prompts, sampling=config.sampling, order_policy=config.order_policy,
                              seed=config.seed, blind=config.blind, max_tokens=config.max_tokens)
        return self.protocol.plan(self.items, context)

    def plan(self) -> list[tuple[Item, PlannedRequest]]:
        """The requests this runner answers: the whole plan, or its shard."""
        return self.in_shard(self.full_plan())

    def in_shard(self, planned: list[tuple[Item, PlannedRequest]]) -> list[tuple[Item, PlannedRequest]]:
        if self.shard is None:
            return planned
        units = VideoUnits()
        costs = unit_costs((p.request for _, p in planned), units)
        if self.shard.count > max(1, len(costs)):  # a shard beyond the videos would be empty
            raise RunError(f"--shard {self.shard.label}: the plan shows {len(costs)} videos, so it splits into "
                           f"at most {len(costs)} shards")
        placed = assign(costs, self.shard.count)
        return [(item, p) for item, p in planned if placed[units(p.request)] == self.shard.index]

    def run(self) -> ScoreReport:
        try:
            full_plan = self.full_plan()
            planned = self.in_shard(full_plan)  # a shard that cannot be is refused before anything is written
            os.makedirs(self.run_dir, exist_ok=True)
            with RunLock(self.run_dir):
                return self._run(full_plan, planned)
        except (RunLockError, ExecutorError) as exc:
            raise RunError(str(exc)) from None
        finally:
            self.close()

    def _run(self, full_plan: list[tuple[Item, PlannedRequest]],
             planned: list[tuple[Item, PlannedRequest]]) -> ScoreReport:
        self._open_run_dir(full_plan, planned)
        log = RunLog(self.run_dir)
        log.repair()
        done = log.done_ids(include_errors=not self.retry_errors)
        # errors recorded last time and kept (not re-asked) this time: the caller says so
        self.kept_errors = 0 if self.retry_errors else len(done - log.done_ids(include_errors=False))
        pending: dict[str, list[tuple[Item, PlannedRequest]]] = defaultdict(list)
        requests: dict[str, Request] = {}
        for item, p in planned:
            if p.id not in done:
                key = p.request.key()
                pending[key].append((item, p))
                requests[key] = p.request
        # Requests sharing a video sit together: frames stay hot and a model can reuse them.
        keys = sorted(pending, key=lambda k: (requests[k].kind, requests[k].video.key() if requests[k].video else "",
                                              requests[k].text))
        cache = ResponseCache(os.path.join(self.cache_dir, "responses.sqlite"))
        try:
            todo = sum(len(users) for users in pending.values())
            with _progress(self.progress, todo, len(planned) - todo, self.config.benchmark) as advance:
                found = cache.get_many([self._cache_key(k) for k in keys])
                cached = {k: found[self._cache_key(k)] for k in keys if self._cache_key(k) in found}
                hits = [(k, Answer.from_json(hit["answer"]), hit["frames"]) for k, hit in cached.items()]
                for start in range(0, len(hits), 256):
                    self._store(hits[start:start + 256], pending, log, cache, advance)
                asked = [k for k in keys if k not in cached]
                for entries in self.executor.entries(asked, requests):
                    cache.put_many({self._cache_key(key): {"answer": answer.to_json(), "frames": frames}
                                    for key, answer, frames in entries if not answer.error})
                    self._store(entries, pending, log, cache, advance)
            self.capped = capped_videos(log.read())
        finally:
            cache.close()
            self._record_notes()
        return score_run(self.run_dir)

    def _cache_key(self, request_key: str) -> str:
        # the frames' format is part of it: an answer given on frames decoded another way (before
        # rotated videos were turned upright) is never reused for today's frames
        return stable_hash([self.fingerprint, request_key, FRAMES_FORMAT], 40)

    def _store(self, entries: list[Entry], pending, log, cache, advance) -> None:
        """Append the records of answered requests, with the judge's verdicts where one reads them."""
        if not entries:
            return
        verdicts: list[dict | None] = [None] * len(entries)
        if self.judge:
            stored = [stored_request(pending[key][0][1], key) for key, _, _ in entries]
            verdicts = self.judge.verdicts(self.protocol, [(r, a) for r, (_, a, _) in zip(stored, entries)],
                                           cache, self.frames.get)
        for (key, answer, frames), verdict in zip(entries, verdicts):
            log.append(records_for(pending[key], answer, frames, key, self.protocol, verdict))
            advance(len(pending[key]))


def _part(shard: dict | None) -> str:
    return f"shard {shard['index']}/{shard['count']}" if shard else "the whole plan"


def stored_request(planned: PlannedRequest, key: str) -> dict[str, Any]:
    return {**planned.request.to_json(), **planned.info, "key": key}


def records_for(users: Sequence[tuple[Item, PlannedRequest]], answer: Answer, frames: dict, key: str,
                protocol: Protocol, verdict: dict | None = None) -> list[dict]:
    """The stored form of one answer, once per request id that asked it. Each record carries
    its item's description, so a run directory rescores with no benchmark files at hand; a
    judge's verdict sits beside the answer ("judge"), never inside it."""
    records = []
    for item, p in users:
        request = stored_request(p, key)
        parsed = None if answer.error else protocol.read(request, answer, verdict)
        records.append({"id": p.id, "item": item.describe(), "expected": p.expected, "request": request,
                        "answer": answer.to_json(), "judge": verdict, "frames": frames,
                        "parsed": parsed_json(parsed)})
    return records


def capped_videos(records: Sequence[dict]) -> dict | None:
    """How many of the run's videos an fps sampling's ``max_frames`` cap changed (fewer frames
    than the rate asks for, unevenly spaced), from the records' frame facts; None if none."""
    videos: set[str] = set()
    capped: dict[str, dict] = {}
    for record in records:
        video = record["request"].get("video")
        if video:
            key = json.dumps(video, sort_keys=True)
            videos.add(key)
            if (record.get("frames") or {}).get("capped"):
                capped[key] = record["frames"]["capped"]
    if not capped:
        return None
    return {"videos": len(capped), "of": len(videos), "max_frames": max(c["max_frames"] for c in capped.values()),
            "most_asked": max(c["asked"] for c in capped.values())}


def capped_line(capped: dict, sampling: Sampling) -> str:
    return (f"max_frames {capped['max_frames']} capped {sampling.fps:g} fps on {capped['videos']} of {capped['of']} "
            f"videos: they show {capped['max_frames']} evenly spread frames, not the up to {capped['most_asked']} "
            f"the rate asks for (--max-frames {capped['most_asked']} keeps the rate)")


def parsed_json(parsed: Parsed | None) -> dict | None:
    """The stored reading; where it could come from the text or the probabilities, which."""
    if parsed is None:
        return None
    return {"value": parsed.value, "status": parsed.status, **({"read_from": parsed.read_from}
                                                                if parsed.read_from else {})}


class _progress:
    """A rich progress bar with items/s and ETA; silent when disabled."""

    def __init__(self, enabled: bool, total: int, completed: int, label: str):
        self.enabled, self.total, self.completed, self.label = enabled, total, completed, label

    def __enter__(self):
        if not self.enabled:
            return lambda n: None
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TextColumn("{task.fields[rate]}"), TimeRemainingColumn(), transient=True)
        self.bar.__enter__()
        task = self.bar.add_task(self.label, total=self.total + self.completed, completed=self.completed,
                                 rate="")
        started = time.perf_counter()
        counted = [0]

        def advance(n: int) -> None:
            counted[0] += n
            rate = counted[0] / max(1e-9, time.perf_counter() - started)
            self.bar.update(task, advance=n, rate=f"{rate:.1f} req/s")

        return advance

    def __exit__(self, *exc):
        if self.enabled:
            self.bar.__exit__(*exc)
        return False


def load_run(run_dir: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    config_path = os.path.join(run_dir, CONFIG)
    if not os.path.exists(config_path):
        raise RunError(f"{run_dir} is not a run directory (no {CONFIG})")
    try:
        with open(config_path, encoding="utf-8") as handle:
            meta = json.load(handle)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise RunError(f"{config_path}: not a readable run configuration ({exc})") from None
    log = RunLog(run_dir)
    records = log.read()
    meta["corrupt_lines"] = log.corrupt
    meta["elsewhere"] = _elsewhere(run_dir) if meta.get("shard") else {}
    return meta, records


def _elsewhere(run_dir: str) -> dict[str, int]:
    """A shard's items with requests on other shards: item id -> how many are there."""
    try:
        with open(os.path.join(run_dir, SHARD), encoding="utf-8") as handle:
            part = json.load(handle)
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise RunError(f"{os.path.join(run_dir, SHARD)}: not readable ({exc})") from None
    elsewhere = part.get("elsewhere", {}) if isinstance(part, dict) else {}
    return {str(k): int(v) for k, v in elsewhere.items()} if isinstance(elsewhere, dict) else {}


def score_run(run_dir: str, tie_policy: str = "strict") -> ScoreReport:
    """Every metric recomputed from the stored answers; no model is loaded."""
    meta, records = load_run(run_dir)
    config = meta["config"]
    try:
        benchmark = get_benchmark(config["benchmark"])
    except ValueError as exc:
        raise RunError(f"{run_dir}: {exc} (a run of a benchmark this timefoil does not know cannot be scored)") \
            from None
    report = score_records(records, benchmark=config["benchmark"], model=config["model"],
                           protocol=config["protocol"], spec=benchmark.summary, tie_policy=tie_policy,
                           elsewhere=meta["elsewhere"])
    report.corrupt_lines = meta["corrupt_lines"]
    report.metrics = [with_paper_chance(m, benchmark.paper_chance(config["protocol"], m.name)) for m in report.metrics]
    return report


def with_paper_chance(metric: MetricValue, stated: float | None) -> MetricValue:
    """The paper's nominal chance beside the exact one, where they differ (Vinoground marks its
    group scores against 16.67, while four independent two-way choices give 6.25)."""
    if stated is None or metric.chance is None or abs(stated - metric.chance) < 0.05:
        return metric
    return replace(metric, extra={**metric.extra, "paper_chance": stated})


def run(config: RunConfig, run_dir: str, **options) -> ScoreReport:
    """Run (or resume) ``config`` into ``run_dir`` and return its scores."""
    return Runner(config, run_dir, **options).run()
