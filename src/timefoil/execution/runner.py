"""Executing a plan into a run directory that can resume.

The plan's requests are de-duplicated by content (a (video, text) pair shared by two items is
asked once), grouped so that requests sharing a video are adjacent, looked up in the response
cache, and answered in batches. Every answer is appended to ``items.jsonl`` as it arrives.
"""
from __future__ import annotations

import os
import sys

from ..core.hashing import hash_files, stable_hash
from ..core.paths import CacheRootUnusable, cache_root, cache_writable
from ..core.threads import apply_threads, decode_workers
from ..benchmarks import BENCHMARKS
from ..core.redaction import redact
from ..models import MODELS, Model, check_model_spec, declared_frames, fingerprint_of, load_model
from ..models.checks import answer_problem
from ..models.requests import Answer
from ..measures.stats import unread_of
from ..scoring import ScoreReport, cut_texts
from ..video.frames import FRAMES_FORMAT, FrameStore
from .answering import Answerer, Entry
from .config import RunConfig, RunError, fitted_to_model, shown_count
from .distributed import ExecutorError, RayOptions
from .judging import Judge
from .plan import RunPlan, by_content, plan_run
from .progress import progress as progress_bar
from .records import capped_videos, records_for, stored_request
from .rundir import open_run_dir, record_notes
from .store import ResponseCache, RunLock, RunLockError, RunLog
from .stored import score_run


class Runner:
    def __init__(self, plan: RunPlan | RunConfig, run_dir: str, *, cache_dir: str | None = None,
                 model: Model | None = None, progress: bool = True, retry_errors: bool = False,
                 threads: int | None = None, ray: RayOptions | None = None, loaded_from_spec: bool = False):
        """``plan``: what to answer (a configuration is planned first, whole). ``ray``: answer on a
        Ray cluster, one model replica per worker (``model``, when given, is copied to each).
        ``loaded_from_spec``: the given model is the configuration's spec loaded once for several
        runs; run.json names where it came from as a run that loaded it itself would."""
        self.threads = apply_threads(threads)  # before the model loads: loading runs on them too
        self.plan = plan if isinstance(plan, RunPlan) else plan_run(plan, check_specs=model is None)
        self.config, self.protocol = self.plan.config, self.plan.protocol
        self.run_dir, self.progress, self.retry_errors = run_dir, progress, retry_errors
        try:  # before any model loads: a cache root that is a file is said once, not at every video
            self.cache_dir = cache_root(cache_dir)
        except CacheRootUnusable as exc:
            raise RunError(str(exc)) from None
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
        self.kept_errors = 0
        self.origins = {"benchmark": BENCHMARKS.origin(self.config.benchmark),
                        "model": MODELS.origin(self.config.model.partition(":")[0])
                        if model is None or loaded_from_spec else
                        {"name": self.config.model, "from": "given", "class": qualified_name(model)},
                        **({"judge": MODELS.origin(self.config.judge.partition(":")[0])} if self.config.judge else {})}
        self.capped: dict | None = None  # videos whose fps sampling the max_frames cap changed
        self.texts_cut: dict | None = None  # texts cut to a contrastive model's text limit (scoring.cut_texts)
        self.frames = FrameStore(cache_dir=self.cache_dir, store=getattr(self.model, "stores_frames", True)
                                 and cache_writable(self.cache_dir))
        self.executor = self.pool or Answerer(self.model, self.frames, workers=decode_workers(threads=self.threads))
        self.model_fingerprint = fingerprint_of(self.model)
        self.fingerprint = stable_hash(self.model_fingerprint)
        fixed = getattr(self.model, "fixed_frames", None)
        sampling = self.config.sampling
        if isinstance(fixed, int) and not self.config.blind and sampling is not None and sampling.frames != fixed:
            self.close()  # before any video is decoded: every request would fail in the model's forward
            raise RunError(f"model {redact(self.config.model)} takes exactly {fixed} frames, not "
                           f"{shown_count(sampling)}; use --frames {fixed}")
        missing = self.protocol.request_kinds(self.plan.prompts) - self.model.kinds
        if missing:
            self.close()
            raise RunError(f"model {self.config.model!r} cannot answer {', '.join(sorted(missing))} requests "
                           f"(it answers: {', '.join(sorted(self.model.kinds))})")

    def close(self) -> None:
        """Let the Ray workers go (a one-process run holds nothing)."""
        if self.pool is not None:
            self.pool.close()

    def run(self) -> ScoreReport:
        try:
            os.makedirs(self.run_dir, exist_ok=True)
            with RunLock(self.run_dir):
                return self._run()
        except (RunLockError, ExecutorError) as exc:
            raise RunError(str(exc)) from None
        finally:
            self.close()

    def _run(self) -> ScoreReport:
        identity = {"model_fingerprint": self.model_fingerprint, "fingerprint_hash": self.fingerprint}
        files, fitted = self._model_files(), self._frames_fitted()
        open_run_dir(self.run_dir, self.plan, identity, {"threads": self.threads, "prompts": self.plan.prompts.source,
                                                         "origins": self.origins,
                                                         **({"model_files": files} if files else {}),
                                                         **({"frames_fitted": fitted} if fitted else {})})
        log = RunLog(self.run_dir)
        log.repair()
        done = log.done_ids(include_errors=not self.retry_errors)
        # errors recorded last time and kept (not re-asked) this time: the caller says so
        self.kept_errors = 0 if self.retry_errors else len(done - log.done_ids(include_errors=False))
        # the videos' content keys the requests: hashed side by side first, not one after another
        hash_files(video_paths(self.plan.part, skip=done), decode_workers(threads=self.threads))
        pending, requests = by_content(self.plan.part, skip=done)
        # Requests sharing a video sit together: frames stay hot and a model can reuse them.
        keys = sorted(pending, key=lambda k: (requests[k].kind, requests[k].video.key() if requests[k].video else "",
                                              requests[k].text))
        cache = ResponseCache.in_dir(self.cache_dir)
        try:
            todo = sum(len(users) for users in pending.values())
            label = f"{self.config.benchmark} · {self.config.protocol}"
            meter = progress_bar(self.progress, todo, len(self.plan.part) - todo, label)
            meter.hold_last = True  # its last line says how many answers could not be read
            with meter as advance:
                found = cache.get_many([self._cache_key(k) for k in keys])
                cached = {k: found[self._cache_key(k)] for k in keys if self._cache_key(k) in found}
                hits = [(k, Answer.from_json(hit["answer"]), hit["frames"]) for k, hit in cached.items()]
                # an answer cached before answers were checked (a NaN stored as null) is asked again
                hits = [hit for hit in hits if answer_problem(hit[1], requests[hit[0]]) is None]
                cached = {k: cached[k] for k, _, _ in hits}
                for start in range(0, len(hits), 256):
                    self._store(hits[start:start + 256], pending, log, cache, advance)
                asked = [k for k in keys if k not in cached]
                for entries in self.executor.entries(asked, requests):
                    cache.put_many({self._cache_key(key): {"answer": answer.to_json(), "frames": frames}
                                    for key, answer, frames in entries if not answer.error})
                    self._store(entries, pending, log, cache, advance)
            stored = log.read()
            self.capped, self.texts_cut = capped_videos(stored), cut_texts(stored)
        finally:
            cache.close()
            record_notes(self.run_dir, notes=getattr(self.model, "notes", {}), threads=self.threads,
                         executor=self.pool.summary() if self.pool else None, capped=self.capped,
                         fallbacks=getattr(self.executor, "fallback_counts", None), texts_cut=self.texts_cut)
        report = score_run(self.run_dir)
        meter.finish(unread_note(report))
        return report

    def _frames_fitted(self) -> dict | None:
        """Where a model that takes a fixed frame count is given it in place of the benchmark's
        own sampling (``fitted_to_model``): both, for run.json."""
        fixed, default = getattr(self.model, "fixed_frames", None), self.plan.benchmark.default_sampling
        if not isinstance(fixed, int) or self.config.blind or default.frames == fixed:
            return None
        return {"model_takes": fixed, "benchmark_samples": shown_count(default)}

    def _model_files(self) -> dict[str, str]:
        """What each file of a local model's folder holds (run.json keeps it: a resume refused
        for other files names the one that changed); nothing for a model without a folder."""
        path = getattr(self.model, "path", None)
        if not isinstance(path, str) or not os.path.isdir(path):
            return {}
        from ..models.local.hf_loading import model_files

        try:
            return model_files(path, self.cache_dir)
        except OSError:  # a folder that cannot be read whole: the refusal then names no file
            return {}

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


def video_paths(planned, skip: set[str] = frozenset()) -> list[str]:
    """The files the planned requests' videos come from (each part of a concatenation), ids in
    ``skip`` left out."""
    paths = []
    for _, p in planned:
        video = p.request.video
        if video is not None and p.id not in skip:
            paths += [part.path for part in video.parts] if video.is_concat else [video.path]
    return paths


def unread_note(report: ScoreReport) -> str | None:
    """"84 / 84 answers unread" where some of the run's numbers are shown as unread (stats.unread_of)."""
    if not any(unread_of(m) for m in report.metrics):
        return None
    return f"{report.parse_failures + report.stopped:,} / {report.answers:,} answers unread"


def qualified_name(obj) -> str:
    return f"{type(obj).__module__}.{type(obj).__qualname__}"


def run(config: RunConfig, run_dir: str, *, shard=None, **options) -> ScoreReport:
    """Run (or resume) ``config`` (or its ``shard``) into ``run_dir`` and return its scores. A
    model that takes a fixed frame count (X-CLIP) is given it where the benchmark samples
    another, said in one line on stderr."""
    given = options.get("model")
    if given is None:
        check_model_spec(config.model)
    fixed = getattr(given, "fixed_frames", None)
    config, said = fitted_to_model(config, declared_frames(config.model) if given is None else
                                   (fixed, "its own frame count") if isinstance(fixed, int) else None)
    if said:
        print(f"timefoil: {said}", file=sys.stderr)
    plan = plan_run(config, shard, check_specs=options.get("model") is None)
    return Runner(plan, run_dir, **options).run()
