"""``timefoil merge SHARD_DIR... --out RUN``: shard runs (``--shard I/N``) into one run.

The shards must come from one configuration (the same config, model fingerprint and plan, down to
the prompts asked and the items as loaded) and together record every planned request exactly
once; otherwise nothing is written and every missing or duplicated request is reported with the
shard to rerun. Shards made with different package versions merge, with a warning kept in the
merged run.json beside each shard's versions and revision. The result is a normal run directory:
scored, reported, checked and resumed like any other.

A merge holds the output's lock (``run.lock``), as a run does, so a second merge or a run into the
same folder is refused while it writes. It writes run.json first, marked unfinished with the
command that finishes it, then the log (whole, renamed into place), then run.json unmarked: a merge
cut short at any moment is said as such by every command that reads the folder, and the same merge
command run again writes it anew."""
from __future__ import annotations

import os
import shlex
import sys
import time
from collections import defaultdict
from typing import Any

from ..core.jsonfiles import UnreadableFile, read_json
from ..execution.config import RunError
from ..execution.fallbacks import added_fallbacks
from ..execution.sharding import PLAN_PARTS, plan_digest
from ..execution.store import (ANSWERS, CONFIG, MERGING, SHARD, RunLock, RunLockError, RunLog, StoreWriteError,
                               answered_twice, strict_json, write_failure, write_json)

SAME = ("config", "model_fingerprint", "fingerprint_hash")  # what makes two shards parts of one run
ENVIRONMENT = ("created", "versions", "git_revision", "platform")  # each shard's, kept in the merged run.json
SHOWN = 5  # example ids per problem


class MergeError(RunError):
    def __init__(self, message: str, problems: list[str] | None = None):
        super().__init__(message)
        self.problems = problems or []


def _read_json(path: str, what: str) -> dict[str, Any]:
    try:
        return read_json(path, what)
    except FileNotFoundError:
        raise MergeError(f"{os.path.dirname(path)} is not a shard run (no {os.path.basename(path)}; "
                         "shards are made by timefoil run ... --shard I/N)") from None
    except UnreadableFile as exc:
        raise MergeError(str(exc)) from None


def _plan_differences(a: dict | None, b: dict | None) -> list[str]:
    """What differs between two shards' plan contents (``plan_contents``), in words."""
    if a == b:
        return []
    if not a or not b:  # one made by a timefoil that did not record its plan's contents
        return ["the plan's contents are recorded by only one of them (made by an older timefoil: "
                "run that shard again into a new directory)"]
    differ = [part for part in PLAN_PARTS if a.get(part) != b.get(part)]
    if len(differ) > 1 and "requests" in differ:  # the requests hold the rest: named only when alone
        differ.remove("requests")
    return [f"{PLAN_PARTS[part]} differ" for part in differ] or \
        [f"the plans differ (digest {a.get('digest')} vs {b.get('digest')})"]


def _differences(a: dict, b: dict) -> str:
    said = []
    for key in SAME:
        if a.get(key) == b.get(key):
            continue
        if key == "config" and isinstance(a.get(key), dict) and isinstance(b.get(key), dict):
            said += [f"{k}: {a[key].get(k)!r} vs {b[key].get(k)!r}" for k in sorted(set(a[key]) | set(b[key]))
                     if a[key].get(k) != b[key].get(k)]
        else:
            said.append(key.replace("_", " "))
    shard_a, shard_b = a.get("shard") or {}, b.get("shard") or {}
    said += [f"{k}: {shard_a.get(k)} vs {shard_b.get(k)}" for k in ("count", "planned", "plan_digest")
             if shard_a.get(k) != shard_b.get(k)]
    said += _plan_differences(a.get("plan"), b.get("plan"))
    if said:  # a likely cause: another version of timefoil or of what it reads with
        versions_a, versions_b = a.get("versions") or {}, b.get("versions") or {}
        said += [f"{p} {versions_a.get(p, 'absent')} vs {versions_b.get(p, 'absent')}"
                 for p in sorted(set(versions_a) | set(versions_b)) if versions_a.get(p) != versions_b.get(p)]
    return "; ".join(said)


def _environments(labels: list[str], metas: list[dict]) -> tuple[dict[str, dict[str, list[str]]], list[str]]:
    """Where the shards' package versions (and timefoil's revision) differ: name -> value ->
    the shards that had it; and the warning that says so, when they do."""
    named = [{**(meta.get("versions") or {}), "timefoil revision": meta.get("git_revision") or "unknown"}
             for meta in metas]
    differ: dict[str, dict[str, list[str]]] = {}
    for name in sorted({n for versions in named for n in versions}):
        seen: dict[str, list[str]] = {}
        for label, versions in zip(labels, named):
            seen.setdefault(str(versions.get(name, "absent")), []).append(label)
        if len(seen) > 1:
            differ[name] = seen
    if not differ:
        return differ, []
    said = "; ".join(f"{name} " + " vs ".join(f"{value} (shard {', '.join(where)})" for value, where in seen.items())
                     for name, seen in differ.items())
    return differ, [f"the shards were made with different versions: {said}; their answers may differ for "
                    "that reason alone"]


def _examples(ids) -> str:
    ids = sorted(ids)
    return ", ".join(ids[:SHOWN]) + (f" and {len(ids) - SHOWN} more" if len(ids) > SHOWN else "")


def _write_merged(out: str, merged: dict[str, Any], ordered: list[list[dict]], finish: str) -> None:
    """The merged run written into ``out`` (its lock held): run.json marked unfinished, the log
    whole, then run.json unmarked. A run already there is refused; a merge cut short is redone."""
    config_path, path = os.path.join(out, CONFIG), os.path.join(out, ANSWERS)
    if os.path.exists(config_path):
        try:
            unfinished = read_json(config_path, "run configuration").get(MERGING)
        except UnreadableFile:
            unfinished = None
        if not unfinished:
            raise MergeError(f"{out} already holds a run; merge into a new directory")
        print(f"timefoil: {out} holds a merge that was cut short before it finished; writing it again",
              file=sys.stderr)
    elif os.path.exists(path):
        raise MergeError(f"{out} already holds a run's answers ({ANSWERS}, with no {CONFIG}); merge into a new "
                         "directory")
    write_json(config_path, {MERGING: finish, **merged})
    try:
        with open(path + ".tmp", "w", encoding="utf-8") as handle:  # whole or not at all
            for shard in ordered:
                handle.writelines(strict_json(r, ensure_ascii=False) + "\n" for r in shard)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(path + ".tmp", path)
    except OSError as exc:
        raise write_failure(path, exc, "the merged answers", "run the same merge again") from None
    write_json(config_path, merged)  # last: a run.json without the mark means the log is whole


def merge_shards(shard_dirs: list[str], out: str) -> dict[str, Any]:
    """Check the shards and write the merged run into ``out``; returns what was merged."""
    metas = [_read_json(os.path.join(d, CONFIG), "run configuration") for d in shard_dirs]
    for directory, meta in zip(shard_dirs, metas):
        if not meta.get("shard"):
            raise MergeError(f"{directory} is a whole run, not a shard (made without --shard)")
    first = metas[0]
    for directory, meta in zip(shard_dirs[1:], metas[1:]):
        differ = _differences(first, meta)
        if differ:
            raise MergeError(f"{directory} is a shard of another run than {shard_dirs[0]} ({differ}); "
                             "only shards of one configuration merge")
    count = first["shard"]["count"]
    by_index: dict[int, list[str]] = defaultdict(list)
    for directory, meta in zip(shard_dirs, metas):
        by_index[meta["shard"]["index"]].append(directory)
    problems = [f"shard {i}/{count} given twice: {', '.join(dirs)}" for i, dirs in sorted(by_index.items())
                if len(dirs) > 1]
    problems += [f"shard {i}/{count} not given (run it with --shard {i}/{count})" for i in range(1, count + 1)
                 if i not in by_index]
    if problems:
        raise MergeError(f"cannot merge: {'; '.join(problems)}", problems)

    assigned: dict[str, str] = {}  # request id -> the shard directory it was planned in
    for directory in shard_dirs:
        for request_id in _read_json(os.path.join(directory, SHARD), "shard plan").get("ids", []):
            if request_id in assigned:
                problems.append(f"request {request_id} is planned in both {assigned[request_id]} and {directory}")
            assigned[request_id] = directory
    if len(assigned) != first["shard"]["planned"] or plan_digest(assigned) != first["shard"]["plan_digest"]:
        problems.append(f"the shards' plans hold {len(assigned)} requests, not the {first['shard']['planned']} "
                        "of the run they were cut from (a shard.json was changed?)")

    records: dict[str, list[dict]] = {}
    recorded_in: dict[str, list[str]] = defaultdict(list)
    for directory in shard_dirs:
        log = RunLog(directory)
        records[directory] = log.read(strict=False)
        problems += [f"{directory}: {ANSWERS} line {n} is not a record" for n in log.corrupt]
        problems += [f"{directory}: {ANSWERS} line {n} is not a record timefoil wrote ({fault})"
                     for n, fault in log.malformed]
        for record in records[directory]:
            if directory not in recorded_in[record["id"]]:
                recorded_in[record["id"]].append(directory)
        twice = list(answered_twice(records[directory]))
        if twice:
            problems.append(f"{directory}: {len(twice)} requests answered more than once ({_examples(twice)})")
        foreign = [i for i in {r["id"] for r in records[directory]} if assigned.get(i) != directory]
        if foreign:
            problems.append(f"{directory}: {len(foreign)} requests recorded that its shard did not plan "
                            f"({_examples(foreign)})")
    duplicated = [i for i, dirs in recorded_in.items() if len(dirs) > 1]
    if duplicated:
        problems.append(f"{len(duplicated)} requests recorded by more than one shard ({_examples(duplicated)})")
    for directory, meta in zip(shard_dirs, metas):
        missing = [i for i, d in assigned.items() if d == directory and directory not in recorded_in.get(i, [])]
        if missing:
            label = f"{meta['shard']['index']}/{count}"
            problems.append(f"shard {label} ({directory}): {len(missing)} of "
                            f"{sum(1 for d in assigned.values() if d == directory)} requests unanswered "
                            f"({_examples(missing)}); run its command again to finish it")
    if problems:
        raise MergeError(f"cannot merge {len(shard_dirs)} shards: {len(problems)} problem(s)", problems)

    labels = [f"{m['shard']['index']}/{count}" for m in metas]
    differ, warnings = _environments(labels, metas)
    merged = {k: v for k, v in first.items() if k not in ("shard", "executor")}
    merged["shard"] = None
    merged["model_notes"] = {k: v for meta in metas for k, v in meta.get("model_notes", {}).items()}
    merged.pop("batch_fallbacks", None)  # every shard's, not the first's alone
    for meta in metas:
        if meta.get("batch_fallbacks"):
            merged["batch_fallbacks"] = added_fallbacks(merged.get("batch_fallbacks") or {}, meta["batch_fallbacks"])
    # what every shard shares stands at the top, as in any run; each shard's own is under "merged"
    merged["versions"] = {k: v for k, v in (first.get("versions") or {}).items() if k not in differ}
    for key, name in (("git_revision", "timefoil revision"), ("platform", None)):
        if name in differ or len({str(m.get(key)) for m in metas}) > 1:
            merged[key] = None
    if warnings:
        merged["warnings"] = warnings
    merged["merged"] = {"created": time.strftime("%Y-%m-%dT%H:%M:%S"),
                        "shards": [{"dir": os.path.abspath(d), "shard": label, "records": len(records[d]),
                                    **{k: m.get(k) for k in ENVIRONMENT}}
                                   for d, m, label in zip(shard_dirs, metas, labels)],
                        "versions_differ": differ}
    ordered = [records[d] for _, d in sorted((m["shard"]["index"], d) for d, m in zip(shard_dirs, metas))]
    finish = shlex.join(["timefoil", "merge", *shard_dirs, "--out", out])
    try:
        os.makedirs(out, exist_ok=True)
        with RunLock(out):
            _write_merged(out, merged, ordered, finish)
    except (RunLockError, StoreWriteError) as exc:
        raise MergeError(str(exc)) from None
    except OSError as exc:
        raise MergeError(str(write_failure(out, exc, "the merged run", "run the same merge again"))) from None
    return {"out": out, "shards": count, "requests": len(assigned),
            "records": sum(len(r) for r in records.values()), "warnings": warnings}
