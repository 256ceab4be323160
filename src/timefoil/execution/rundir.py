"""A run directory's ``run.json``: written once with the configuration and the environment, matched
on resume, and updated with what a session learnt (model notes, threads, workers, capped videos)."""
from __future__ import annotations

import os
import platform
import subprocess
import time
from collections import Counter
from typing import Any

from ..core.hashing import stored_form
from ..core.jsonfiles import UnreadableFile, read_json
from ..core.paths import __version__
from .config import RunConfig, RunError
from .fallbacks import added_fallbacks
from .plan import RunPlan
from .sharding import plan_contents
from .store import CONFIG, SHARD, write_json


def open_run_dir(run_dir: str, plan: RunPlan, identity: dict[str, Any], extra: dict[str, Any]) -> None:
    """Create ``run.json`` (and a shard's ``shard.json``), or check that the stored run is this
    configuration and this part of its plan. ``identity``: the model's fingerprint facts, which
    a resume must match; ``extra``: facts written once (threads, prompt sources, ``model_files``:
    what each file of a local model's folder holds, so a refusal names the file that changed)."""
    os.makedirs(run_dir, exist_ok=True)
    path = os.path.join(run_dir, CONFIG)
    shard = plan.shard_facts()
    # compared as stored: a tuple in a configuration or a fingerprint is a list in run.json
    wanted = stored_form({"config": plan.config.to_json(), **identity, "shard": shard})
    if os.path.exists(path):
        _match(run_dir, _stored(path), wanted, extra.get("model_files"))
        return
    if shard:  # "elsewhere": an item's requests placed on other shards (its other video), so that
        # a complete shard is scored and checked as complete
        elsewhere = Counter(item.id for item, _ in plan.full)
        elsewhere.subtract(Counter(item.id for item, _ in plan.part))
        here = {item.id for item, _ in plan.part}
        write_json(os.path.join(run_dir, SHARD),
                   {**shard, "ids": sorted(p.id for _, p in plan.part),
                    "elsewhere": {i: n for i, n in sorted(elsewhere.items()) if n and i in here}})
        # what the whole plan asks, for merge to compare shards by (never matched on resume)
        extra = {**extra, "plan": plan_contents(plan.full, plan.config.protocol, identity.get("fingerprint_hash"))}
    write_json(path, {**wanted, "created": time.strftime("%Y-%m-%dT%H:%M:%S"), **environment(), **extra})


def holds_this_run(run_dir: str, plan: RunPlan) -> bool:
    """Whether ``run_dir`` already holds this plan's run (False: none yet), checked before any
    model loads: a run.json that cannot be read, or that holds another configuration or another
    shard, is refused as ``open_run_dir`` would refuse it. The model's fingerprint is compared
    only once the model is loaded."""
    path = os.path.join(run_dir, CONFIG)
    if not os.path.exists(path):
        return False
    _match(run_dir, _stored(path), stored_form({"config": plan.config.to_json(), "shard": plan.shard_facts()}))
    return True


def _stored(path: str) -> dict:
    try:
        stored = read_json(path, "run configuration")
    except UnreadableFile as exc:
        raise RunError(f"{exc}; it is written whole, so it was cut or changed since: restore it, or use a "
                       "new --out directory") from None
    try:  # a run made before a configuration field existed has that field's default
        stored["config"] = stored_form(RunConfig.from_json(stored["config"]).to_json())
    except (KeyError, TypeError):
        pass  # not a configuration this version can read: the comparison refuses it
    return stored


def _match(run_dir: str, stored: dict, wanted: dict, files: dict | None = None) -> None:
    if {k: stored.get(k) for k in wanted} != wanted:
        if all(stored.get(k) == wanted[k] for k in wanted if k != "shard"):
            raise RunError(f"{run_dir} holds {_part(stored.get('shard'))} of this configuration, not "
                           f"{_part(wanted['shard'])}; use one --out directory per shard")
        if _other_weights(stored, wanted):
            before = stored.get("model_files")
            raise other_weights(run_dir, sized_only=_sized_only(stored["model_fingerprint"]),
                                changed=_changed(before, files))
        if _other_served(stored, wanted):
            raise other_served(run_dir, stored["model_fingerprint"], wanted["model_fingerprint"])
        raise RunError(f"{run_dir} holds a run with another configuration; "
                       "use a new --out directory (or delete this one)")


def record_notes(run_dir: str, *, notes: dict, threads: int, executor: dict | None, capped: dict | None,
                 fallbacks: dict | None = None, texts_cut: dict | None = None) -> None:
    """The model's notes and this session's thread count, added to run.json (never part of
    the configuration a resume must match). ``fallbacks``: this session's failed batches asked
    again one request at a time, added to those of the sessions before."""
    path = os.path.join(run_dir, CONFIG)
    data = read_json(path, "run configuration")
    notes = {**data.get("model_notes", {}), **notes}
    if (data.get("model_notes", {}) == notes and data.get("threads") == threads and not executor
            and data.get("capped") == capped and not fallbacks and data.get("texts_cut") == texts_cut):
        return
    if fallbacks:
        data["batch_fallbacks"] = added_fallbacks(data.get("batch_fallbacks") or {}, fallbacks)
    data["model_notes"], data["threads"] = notes, threads
    data.pop("capped", None)
    if capped:  # the cap changed what some videos show: said here and on the terminal
        data["capped"] = capped
    data.pop("texts_cut", None)
    if texts_cut:  # captions cut to the model's text limit: counted here and said on the terminal
        data["texts_cut"] = texts_cut
    if executor:  # this session's workers: who answered how much, who was lost
        data["executor"] = executor
    write_json(path, data)


def other_weights(run_dir: str, sized_only: bool = False, changed: str | None = None) -> RunError:
    """The refusal of a run answered by other weights than the model's folder holds now
    (``sized_only``: a run made when weights were named by their files' sizes, which cannot tell;
    ``changed``: which files changed, in words, where the run kept what its files held)."""
    if sized_only:
        return RunError(f"{run_dir} holds a run made before the weights were named by their content (by their "
                        "files' sizes only), so whether they changed since cannot be told; use a new --out "
                        "directory (or delete this one)")
    changed = changed or "the model's weight files changed since"
    answered = "by other weights" if changed.startswith("the model's weight files") else "with other model files"
    return RunError(f"{run_dir} holds a run answered {answered} ({changed}); use a new --out directory "
                    "(or delete this one)")


def _changed(before, now: dict | None) -> str | None:
    """Which files changed, in words; None where the stored run kept no listing (made before
    run.json held one) or this model has no folder."""
    from ..models.local.hf_loading import files_changed

    return files_changed(before, now) if isinstance(before, dict) and now else None


def _other_weights(stored: dict, wanted: dict) -> bool:
    """Whether the stored run differs from this one by its weights' fingerprint alone (a
    checkpoint saved again into the same folder)."""
    before, now = stored.get("model_fingerprint"), wanted.get("model_fingerprint")
    if not (isinstance(before, dict) and isinstance(now, dict)) or before.get("weights") == now.get("weights"):
        return False
    same = ("config", "shard")
    return all(stored.get(k) == wanted[k] for k in same) and \
        {k: v for k, v in before.items() if k != "weights"} == {k: v for k, v in now.items() if k != "weights"}


def other_served(run_dir: str, before: dict, now: dict) -> RunError:
    """The refusal of a run answered by another served model than the server serves now."""
    from ..models.served.identity import described

    return RunError(f"{run_dir} holds a run answered by {described(before.get('served'))}; "
                    f"{now.get('base_url')} now serves {described(now.get('served'))}: serve that model again to "
                    "resume, or use a new --out directory")


def _other_served(stored: dict, wanted: dict) -> bool:
    """Whether the stored run differs from this one by the served model alone (another file
    served at the same address under the same spec), the setting that follows it included."""
    before, now = stored.get("model_fingerprint"), wanted.get("model_fingerprint")
    if not (isinstance(before, dict) and isinstance(now, dict)) or before.get("served") == now.get("served"):
        return False
    follows = ("served", "cache_prompt")  # sent to llama-server alone: it changes with the server
    return all(stored.get(k) == wanted[k] for k in ("config", "shard")) and \
        {k: v for k, v in before.items() if k not in follows} == {k: v for k, v in now.items() if k not in follows}


def _sized_only(fingerprint: dict) -> bool:
    """Whether a stored local model's weights fingerprint is the earlier form (names and sizes)."""
    from ..models.local.hf_loading import sized_weights_fingerprint

    path = fingerprint.get("path")
    try:
        return isinstance(path, str) and os.path.isdir(path) and \
            fingerprint.get("weights") == sized_weights_fingerprint(path)
    except OSError:
        return False


def _part(shard: dict | None) -> str:
    return f"shard {shard['index']}/{shard['count']}" if shard else "the whole plan"


def environment() -> dict[str, Any]:
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
