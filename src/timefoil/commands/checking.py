"""``timefoil check RUN``: is a stored run whole? Every planned request answered once, no
corrupt line in the log, a configuration this version reads."""
from __future__ import annotations

import os
from collections import Counter, defaultdict
from dataclasses import replace

from ..execution.config import RunConfig, RunError
from ..execution.plan import plan_run
from ..execution.stored import load_run
from ..execution.sharding import Shard
from ..execution.store import answered_twice
from ..models.local.hf_loading import files_changed, model_files, sized_weights_fingerprint, weights_fingerprint


def check_run(run_dir: str, *, plan: bool = True) -> tuple[list[str], dict]:
    """(problems, counts). With ``plan`` and the benchmark's files still at the recorded
    place, the run is also compared with a fresh plan of the same configuration."""
    meta, records = load_run(run_dir, strict=False)
    problems = [f"items.jsonl line {n} is not a record" for n in meta["corrupt_lines"]]
    problems += [f"items.jsonl line {n} is not a record timefoil wrote ({fault}): correct or remove it"
                 for n, fault in meta["malformed"]]
    try:
        config = RunConfig.from_json(meta["config"])
    except (KeyError, TypeError) as exc:
        raise RunError(f"{run_dir}: run.json holds no configuration this version reads ({exc})") from None
    by_id: dict[str, list[dict]] = defaultdict(list)
    for record in records:
        by_id[record["id"]].append(record)
    problems += [f"{request_id} answered {n} times" for request_id, n in answered_twice(records).items()]
    expected: dict[str, int] = {}
    per_item: Counter = Counter()
    for request_id, answers in by_id.items():
        item = answers[-1]["item"]["id"]
        expected[item] = answers[-1]["expected"]
        per_item[item] += 1
    elsewhere = meta["elsewhere"]  # a shard answers only its part of an item that shows two videos
    problems += [f"item {item}: {per_item[item]} of {n - elsewhere.get(item, 0)} requests answered"
                 + (f" ({elsewhere[item]} more on other shards)" if elsewhere.get(item) else "")
                 for item, n in expected.items() if per_item[item] != n - elsewhere.get(item, 0)]
    changed = weights_changed(meta)
    if changed:
        problems.append(changed)
    errors = sum(1 for answers in by_id.values() if answers[-1]["answer"].get("error"))
    counts = {"records": len(records), "requests": len(by_id), "items": len(expected), "errors": errors}
    if plan and config.data_dir and os.path.exists(config.data_dir):
        # the plan needs no model; a shard is compared with its part
        part = plan_run(replace(config, judge=None), Shard.from_json(meta.get("shard")), check_specs=False).part
        planned = {p.id for _, p in part}
        missing, extra = planned - set(by_id), set(by_id) - planned
        problems += [f"planned request {i} has no record" for i in sorted(missing)[:20]]
        problems += [f"record {i} was not planned by this configuration" for i in sorted(extra)[:20]]
        counts["planned"] = len(planned)
    return problems, counts


def stored_weights(meta: dict) -> tuple[str, str] | None:
    """(the local model folder a run was answered by, its stored weights fingerprint), or None
    where the run names no such folder."""
    fingerprint = meta.get("model_fingerprint")
    stored = fingerprint.get("weights") if isinstance(fingerprint, dict) else None
    if not isinstance(stored, str):
        return None
    folder = fingerprint.get("path") or str(meta["config"].get("model", "")).partition(":")[2]
    return (folder, stored) if isinstance(folder, str) and os.path.isdir(folder) else None


def weights_sized_only(meta: dict, memo_dir: str | None = None) -> bool:
    """Whether the run was made before the weights' content counted and the folder's files have
    their sizes still: whether the weights changed since cannot be told."""
    found = stored_weights(meta)
    try:
        return found is not None and \
            found[1] == sized_weights_fingerprint(found[0]) != weights_fingerprint(found[0], memo_dir)
    except OSError:
        return False


def named_change(meta: dict, folder: str, memo_dir: str | None = None) -> str | None:
    """Which files of ``folder`` changed since the run, in words (config.json named as not a
    weight file); None where run.json kept no listing of them (made before it did)."""
    before = meta.get("model_files")
    return files_changed(before, model_files(folder, memo_dir)) if isinstance(before, dict) else None


def weights_changed(meta: dict, memo_dir: str | None = None) -> str | None:
    """A local model's folder whose weight files are no longer those the run was answered with
    (a checkpoint saved again in place): the stored answers are the old weights'. A run made
    before the weights' content counted (its fingerprint has their sizes only) cannot tell.
    ``memo_dir``: the cache folder keeping the weights' hashes."""
    fingerprint = meta.get("model_fingerprint")
    stored = fingerprint.get("weights") if isinstance(fingerprint, dict) else None
    if not isinstance(stored, str):
        return None
    folder = fingerprint.get("path") or str(meta["config"].get("model", "")).partition(":")[2]
    if not isinstance(folder, str) or not os.path.isdir(folder):
        return None
    try:
        if stored in (weights_fingerprint(folder, memo_dir), sized_weights_fingerprint(folder)):
            return None
        changed = named_change(meta, folder, memo_dir)
    except OSError:
        return None  # the folder cannot be read as a whole here: nothing to compare
    if changed and not changed.startswith("the model's weight files"):  # config.json or code, not the weights
        return (f"the files in {folder} are not those this run was answered with ({changed}): its answers "
                "are the earlier files'")
    return (f"the weights in {folder} are not those this run was answered with (its files changed since): "
            "its answers are the earlier weights'")
