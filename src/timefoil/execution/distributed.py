"""The Ray executor: one run answered by many model replicas (``--executor ray``).

The driver plans, owns the run directory and records every answer; each worker is a Ray actor
holding one model replica and its own frame store over the shared cache. Work goes out in
bundles of video-grouped batches (a video's requests stay on one worker, so it is decoded once
and a model can reuse it); each worker keeps a couple of batches queued so it never waits for
the driver. A worker that is lost (killed, out of memory, node gone) has its queued batches
handed to the others; an answer is recorded only when its batch comes back, so nothing is
lost or recorded twice, and a driver that dies leaves a log the same command resumes.
"""
from __future__ import annotations

import logging
import os
import socket
import sys
from collections import Counter, deque
from dataclasses import dataclass
from typing import Any, Iterator

from .answering import Answerer, Entry
from .fallbacks import added_fallbacks
from ..models import fingerprint_of, load_model
from ..core.redaction import redact
from ..models.requests import Answer, Request
from .sharding import video_batches
from ..core.threads import apply_threads, physical_cores
from ..video.frames import FrameStore


class ExecutorError(RuntimeError):
    """The cluster cannot run the workers, or every worker was lost (the log keeps what came back)."""


@dataclass(frozen=True)
class RayOptions:
    workers: int | None = None  # default: one per GPU of the cluster (gpus_per_worker each), else 1
    gpus_per_worker: float | None = None  # default: 1 where the cluster has GPUs, else 0
    address: str | None = None  # an existing cluster ("auto", "ray://host:10001", ...); none: start a local one
    queued_per_worker: int = 2  # batches sent ahead to each worker


class Worker:
    """A Ray actor's body: one model replica answering batches."""

    def __init__(self, spec: str, model_args: dict, model, cache_dir: str, threads: int | None):
        apply_threads(threads)
        self.model = model if model is not None else load_model(spec, model_args, cache_dir=cache_dir)
        frames = FrameStore(cache_dir=cache_dir, store=getattr(self.model, "stores_frames", True))
        self.answerer = Answerer(self.model, frames)

    def describe(self) -> dict[str, Any]:
        import ray

        return {"name": self.model.name, "kinds": sorted(self.model.kinds), "batch_size": self.model.batch_size,
                "whole_videos": bool(getattr(self.model, "whole_videos", False)),
                "fingerprint": fingerprint_of(self.model), "pid": os.getpid(), "host": socket.gethostname(),
                "gpus": [str(g) for g in ray.get_gpu_ids()]}

    def answer(self, requests: list[Request]) -> list[tuple[dict, dict]]:
        return [(answer.to_json(), facts) for answer, facts in self.answerer.answer_batch(requests)]

    def notes(self) -> dict:
        return self.model.notes

    def fallbacks(self) -> dict:
        return self.answerer.fallback_counts


class RemoteModel:
    """What the driver knows of the workers' model: enough to plan, key the cache and check
    the kinds it answers, with no replica in the driver."""

    def __init__(self, described: dict[str, Any], pool: "RayPool"):
        self.name, self.batch_size = described["name"], described["batch_size"]
        self.whole_videos = described.get("whole_videos", False)
        self.kinds = frozenset(described["kinds"])
        self._fingerprint, self._pool = described["fingerprint"], pool

    def fingerprint(self) -> dict:
        return self._fingerprint

    @property
    def notes(self) -> dict:
        return self._pool.notes()


def _ray():
    try:
        import ray
    except ImportError:
        raise ImportError("--executor ray needs Ray: pip install 'timefoil[ray]'") from None
    return ray


def _lost(exc: BaseException) -> bool:
    """A worker (or its node) is gone, as opposed to an exception raised inside its code."""
    ray = _ray()
    return isinstance(exc, ray.exceptions.RayError) and not isinstance(exc, ray.exceptions.RayTaskError)


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return redact(f"{type(exc).__name__}: {text[0] if text else ''}")[:300]


class RayPool:
    def __init__(self, options: RayOptions, *, spec: str, model_args: dict, model=None, cache_dir: str,
                 threads: int | None = None):
        ray = _ray()
        self.options, self.started = options, False
        if not ray.is_initialized():
            os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # a cluster started for one run reports nothing
            try:
                ray.init(address=options.address, include_dashboard=False, logging_level=logging.ERROR,
                         log_to_driver=False)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise ExecutorError(f"could not reach the Ray cluster at {options.address}: {_reason(exc)}") \
                    if options.address else ExecutorError(f"could not start a local Ray cluster: {_reason(exc)}")
            self.started = True
        resources = ray.cluster_resources()
        gpus = options.gpus_per_worker
        if gpus is None:
            gpus = 1 if resources.get("GPU", 0) >= 1 else 0
        workers = options.workers or (max(1, int(resources.get("GPU", 0) // gpus)) if gpus else 1)
        for name, each in (("GPU", gpus), ("CPU", 1)):
            if each and workers * each > resources.get(name, 0):
                self.close()
                raise ExecutorError(f"{workers} worker{'s' if workers != 1 else ''} x {each:g} {name} need "
                                    f"{workers * each:g}; the Ray cluster has "
                                    f"{resources.get(name, 0):g} (--workers, --gpus-per-worker)")
        if threads is None and self.started:  # a local cluster: the workers share this machine's cores
            threads = max(1, physical_cores() // workers)
        actor = ray.remote(Worker).options(num_cpus=1, num_gpus=gpus, max_restarts=0)
        self.actors = [actor.remote(spec, model_args, model, cache_dir, threads) for _ in range(workers)]
        described = self._start(ray, spec, gpus)
        if any(d["fingerprint"] != described[0]["fingerprint"] for d in described):
            self.close()
            raise ExecutorError("the Ray workers load different models (differing library versions on the nodes?): "
                                + "; ".join(f"{d['host']}: {d['fingerprint']}" for d in described))
        self.labels = [f"worker {i + 1} (pid {d['pid']} on {d['host']}" + (f", GPU {','.join(d['gpus'])})"
                                                                            if d["gpus"] else ")")
                       for i, d in enumerate(described)]
        self.pids = [d["pid"] for d in described]
        self.alive = set(range(workers))
        self.lost: dict[int, str] = {}
        self.answered: Counter = Counter()
        self.requeued = 0
        self.model = RemoteModel(described[0], self)

    def _start(self, ray, spec: str, gpus: float) -> list[dict[str, Any]]:
        """Each worker's description once its model is loaded; said every minute while some
        wait (for a free GPU, or a large model's download), never a silent hang."""
        pending = {actor.describe.remote(): i for i, actor in enumerate(self.actors)}
        described: list[dict[str, Any]] = [{} for _ in self.actors]
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=len(pending), timeout=60)
            for ref in ready:
                try:
                    described[pending.pop(ref)] = ray.get(ref)
                except Exception as exc:
                    self.close()
                    cause = getattr(exc, "cause", None) or exc
                    raise ExecutorError(f"a Ray worker could not load {spec}: {_reason(cause)}") from None
            if pending:
                free = ray.available_resources()
                print(f"timefoil: {len(pending)} of {len(self.actors)} Ray workers still starting (loading {spec}; "
                      f"each needs 1 CPU and {gpus:g} GPU; free now: {free.get('CPU', 0):g} CPU, "
                      f"{free.get('GPU', 0):g} GPU)", file=sys.stderr)
        return described

    # -- answering --------------------------------------------------------------------------
    def entries(self, keys: list[str], requests: dict[str, Request]) -> Iterator[list[Entry]]:
        """(key, answer, frame facts) per batch, as batches come back from any worker."""
        ray = _ray()
        queue: deque[list[list[str]]] = deque(video_batches(keys, requests, self.model.batch_size,
                                                            whole_videos=self.model.whole_videos))
        ahead: dict[int, deque[list[str]]] = {w: deque() for w in self.alive}  # the worker's bundle, not yet sent
        flying: dict[Any, tuple[int, list[str]]] = {}  # object ref -> (worker, batch)
        recorded: set[str] = set()
        while queue or flying or any(ahead.values()):
            for w in sorted(self.alive):
                while sum(1 for v, _ in flying.values() if v == w) < self.options.queued_per_worker:
                    if not ahead[w]:
                        if not queue:
                            break
                        ahead[w] = deque(queue.popleft())
                    batch = ahead[w].popleft()
                    flying[self.actors[w].answer.remote([requests[k] for k in batch])] = (w, batch)
            if not flying:
                raise ExecutorError(self._all_lost())
            done, _ = ray.wait(list(flying), num_returns=1)
            for ref in done:
                w, batch = flying.pop(ref)
                try:
                    results = ray.get(ref)
                except Exception as exc:
                    if not _lost(exc):  # raised inside the worker's own code: those requests' error
                        results = [(Answer(error=f"worker error: {_reason(getattr(exc, 'cause', None) or exc)}")
                                    .to_json(), {}) for _ in batch]
                    else:
                        self._lose(w, exc, batch, flying, ahead, queue)
                        continue
                fresh = [(key, Answer.from_json(answer), facts) for key, (answer, facts) in zip(batch, results)
                         if key not in recorded]
                recorded.update(key for key, _, _ in fresh)
                self.answered[w] += len(fresh)
                yield fresh

    def _lose(self, w: int, exc: BaseException, batch: list[str], flying: dict, ahead: dict, queue: deque) -> None:
        """Hand a lost worker's batches (the failed one, those queued on it, its bundle's rest)
        back to the queue, in front: they are the oldest work."""
        back = [batch] + [b for ref, (v, b) in list(flying.items()) if v == w] + list(ahead[w])
        for ref in [ref for ref, (v, _) in flying.items() if v == w]:
            del flying[ref]
        ahead[w] = deque()
        self.alive.discard(w)
        self.lost[w] = _reason(exc)
        self.requeued += len(back)
        queue.appendleft(back)
        print(f"timefoil: lost {self.labels[w]} ({self.lost[w]}); {len(back)} of its batches go to the "
              f"{len(self.alive)} other worker(s)", file=sys.stderr)

    def _all_lost(self) -> str:
        return (f"every Ray worker was lost (last: {self.lost[max(self.lost)] if self.lost else 'unknown'}); "
                "the answers that came back are in items.jsonl: run the same command to resume")

    # -- facts --------------------------------------------------------------------------------
    def notes(self) -> dict:
        ray = _ray()
        notes: dict = {}
        for w in sorted(self.alive):
            try:
                notes.update(ray.get(self.actors[w].notes.remote(), timeout=60))
            except Exception:  # a worker lost since: its notes are gone with it
                continue
        return notes

    @property
    def fallback_counts(self) -> dict:
        """The batches each worker asked again one request at a time, summed (a lost worker's
        are gone with it)."""
        ray = _ray()
        counts: dict = {}
        for w in sorted(self.alive):
            try:
                counts = added_fallbacks(counts, ray.get(self.actors[w].fallbacks.remote(), timeout=60))
            except Exception:
                continue
        return counts if counts.get("batches") else {}

    def summary(self) -> dict[str, Any]:
        """This session's workers: requests each answered, and those lost with why."""
        return {"executor": "ray", "workers": {label: self.answered[w] for w, label in enumerate(self.labels)},
                "lost": {self.labels[w]: reason for w, reason in self.lost.items()}, "requeued_batches": self.requeued}

    def close(self) -> None:
        ray = _ray()
        for actor in getattr(self, "actors", []):
            try:
                ray.kill(actor)
            except Exception:
                continue
        self.actors = []
        if self.started and ray.is_initialized():
            ray.shutdown()
            self.started = False
