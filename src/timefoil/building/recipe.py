"""`timefoil build run RECIPE`: (video, caption) pairs -> generated candidates -> filters -> a
benchmark folder, with provenance (``build.json``) and a datasheet.

A recipe (YAML or JSON) names the source and the steps, in order::

    name: my-temporal-set
    source: pairs.jsonl         # {"id", "video", "caption"[, "events": [{"agent", "action"}]]} per line
    steps:
      - generate: rules         # swap-events, count-easy, count-hard, spatial, order-words, direction
        rules: [swap-events, count-easy, direction]
      - generate: roles         # from "events" (VELOCITI style)
      - generate: llm           # VITATECS style, any generative model spec
        model: openai:gpt-4o-mini
        aspects: [direction, sequence]
      - filter: same-words      # only: [swap-events] limits a filter to candidates of those rules
        only: [swap-events]
      - filter: entailment
        model: hf:...
      - filter: aspect
        model: hf:...
        margin: 0.3
      - filter: language-prior
        model: blind-lm
        threshold: 0.8
        action: drop            # or flag

Every step's verdicts go to ``steps/NN-name.jsonl`` once the step is complete; a rerun with the
same recipe reuses complete steps, and model answers come from the response cache, so a killed
build resumes without asking a model twice.
"""
from __future__ import annotations

import json
import os
import shutil
from collections import Counter
from dataclasses import asdict, replace
from typing import Any, Callable

from ..benchmarks import folder
from ..core.hashing import stable_hash
from ..core.output import write_whole
from ..core.items import Item, VideoRef
from ..core.jsonfiles import UnreadableFile, parse_json, read_json_lines, read_text
from ..core.paths import default_cache_dir
from ..execution.store import write_json
from .asking import Asker
from .datasheet import mean_or_none, write_datasheet
from .rules import Event
from .steps import Candidate, filter_step, generate_step



def read_recipe(path: str) -> dict[str, Any]:
    text = read_text(path, "recipe")
    if path.endswith((".yaml", ".yml")):
        try:
            import yaml
        except ImportError:
            raise ValueError(f"{path}: reading YAML needs PyYAML (pip install 'timefoil[build]'), or write JSON")
        try:
            recipe = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark, problem = getattr(exc, "problem_mark", None), getattr(exc, "problem", None) or "not YAML"
            place = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
            raise UnreadableFile(f"{path}: not a readable recipe ({problem}{place})") from None
    else:
        recipe = parse_json(text, path, "recipe", kind=None)
    if not isinstance(recipe, dict) or "source" not in recipe or not isinstance(recipe.get("steps"), list):
        raise ValueError(f"{path}: a recipe needs 'source' and a list of 'steps'")
    return recipe


def read_pairs(path: str) -> list[dict[str, Any]]:
    root, pairs = os.path.dirname(os.path.abspath(path)), []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                pair = {"id": str(record["id"]), "video": os.path.join(root, record["video"]),
                        "caption": str(record.get("caption") or ""),
                        "events": [Event(e["agent"], e["action"]) for e in record.get("events") or ()]}
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise ValueError(f"{path}: line {number}: needs id, video and caption or events ({exc})") from None
            if not os.path.exists(pair["video"]):
                raise ValueError(f"{path}: line {number}: video {record['video']!r} not found")
            pairs.append(pair)
    return pairs


class Build:
    def __init__(self, recipe: dict[str, Any], out: str, *, base: str = ".", cache_dir: str | None = None,
                 say: Callable[[str], None] = print):
        self.recipe, self.out, self.base, self.say = recipe, out, base, say
        self.cache_dir = cache_dir or default_cache_dir()
        self.askers: dict[str, Asker] = {}
        self.steps: list[dict[str, Any]] = []

    def asker(self, spec: str) -> Asker:
        if spec not in self.askers:
            self.askers[spec] = Asker(spec, self.cache_dir)
        return self.askers[spec]

    def run(self) -> dict[str, Any]:
        os.makedirs(os.path.join(self.out, "steps"), exist_ok=True)
        pairs = read_pairs(os.path.join(self.base, self.recipe["source"]))
        candidates: list[Candidate] = []
        for number, step in enumerate(self.recipe["steps"], 1):
            candidates = self._step(number, step, pairs, candidates)
        kept = [c for c in candidates if not c.dropped]
        bench = self._write_benchmark(kept)
        write_whole(os.path.join(self.out, "candidates.jsonl"),
                    lambda handle: handle.writelines(json.dumps(asdict(c), ensure_ascii=False) + "\n"
                                                     for c in candidates))
        provenance = {"name": self.recipe.get("name", "built"), "recipe": self.recipe, "pairs": len(pairs),
                      "candidates": len(candidates), "items": len(kept), "steps": self.steps, "benchmark": bench}
        write_json(os.path.join(self.out, "build.json"), provenance)
        write_datasheet(self.out)
        return provenance

    # -- steps ---------------------------------------------------------------------------------
    def _step(self, number: int, step: dict, pairs: list[dict], candidates: list[Candidate]) -> list[Candidate]:
        kind = "generate" if "generate" in step else "filter" if "filter" in step else None
        if kind is None:
            raise ValueError(f"step {number}: needs 'generate: ...' or 'filter: ...', found {sorted(step)}")
        name = f"{number:02d}-{kind}-{step[kind]}"
        alive = [c for c in candidates if not c.dropped]
        only = step.get("only")
        todo = [c for c in alive if not only or c.rule in only]
        signature = stable_hash([step, [c.id for c in todo] if kind == "filter" else [p["id"] for p in pairs]])
        log = os.path.join(self.out, "steps", name + ".jsonl")
        stored, header = _read_step(log, signature)
        info: dict[str, Any] = {"step": name, "params": step, "in": len(todo) if kind == "filter" else len(pairs)}
        if "model" in step:  # a reused step names its model from its log, without loading it
            info["model"] = step["model"]
            info["model_fingerprint"] = header.get("model_fingerprint") if stored is not None else \
                self.asker(step["model"]).fingerprint
        if kind == "generate":
            made = stored if stored is not None else generate_step(step, pairs, self.asker)
            if stored is None:
                _write_step(log, signature, made, info.get("model_fingerprint"))
            new = [Candidate(**m) for m in made if m.get("id")]
            reasons = Counter(m["why"] for m in made if not m.get("id"))
            seen = {c.id for c in candidates}
            new = [c for c in new if c.id not in seen]
            info.update(out=len(new), not_made=dict(reasons))
            self.steps.append(info)
            self.say(f"{name}: {len(new)} candidates")
            return candidates + new
        verdicts = stored if stored is not None else [asdict(v) for v in filter_step(step, todo, self.asker)]
        if stored is None:
            _write_step(log, signature, [{"id": c.id, **v} for c, v in zip(todo, verdicts)],
                        info.get("model_fingerprint"))
        by_id = {c.id: v for c, v in zip(todo, verdicts)}
        out = []
        for c in candidates:
            v = by_id.get(c.id)
            if v is not None:
                c = replace(c, dropped=c.dropped or ("" if v["keep"] else f"{name}: {v['reason']}"),
                            flagged=c.flagged or (f"{name}: {v['reason']}" if v["flagged"] else ""),
                            detail={**(c.detail or {}), name: v["detail"]} if v["detail"] else c.detail)
            out.append(c)
        kept = sum(1 for v in verdicts if v["keep"])
        info.update(out=kept, pass_rate=round(kept / len(todo), 4) if todo else None,
                    dropped=dict(Counter(v["reason"] for v in verdicts if not v["keep"])))
        if step["filter"] == "language-prior":
            before = [v["detail"]["correct"] for v in verdicts if v["detail"]]
            after = [v["detail"]["correct"] for v in verdicts if v["detail"] and v["keep"]]
            info["blind_accuracy"] = {"before": mean_or_none(before), "after": mean_or_none(after)}
        self.steps.append(info)
        self.say(f"{name}: kept {kept} of {len(todo)}")
        return out

    # -- output --------------------------------------------------------------------------------
    def _write_benchmark(self, kept: list[Candidate]) -> str:
        bench = os.path.join(self.out, "benchmark")
        videos = os.path.join(bench, "videos")
        os.makedirs(videos, exist_ok=True)
        placed: dict[str, str] = {}
        items = []
        for c in kept:
            if c.video not in placed:
                name = f"{stable_hash(c.video, 8)}-{os.path.basename(c.video)}"
                target = os.path.join(videos, name)
                if not os.path.exists(target):
                    shutil.copyfile(c.video, target)
                placed[c.video] = target
            metadata = {"rule": c.rule, "source": c.source, **({"flagged": c.flagged} if c.flagged else {})}
            items.append(Item(id=c.id, group_id=c.id, benchmark=self.recipe.get("name", "built"), test=c.aspect,
                              videos=(VideoRef.file(placed[c.video]),), texts=(c.caption, c.foil), target=0,
                              metadata=metadata))
        folder.write(bench, items, {"name": self.recipe.get("name", "built"),
                                    "description": self.recipe.get("description", "built with timefoil build"),
                                    "protocols": ["similarity", "entailment", "choice"]})
        return bench


def _read_step(path: str, signature: str) -> tuple[list[dict] | None, dict]:
    """A complete step's records and header when it was made from the same inputs; else (None, {})."""
    if not os.path.exists(path):
        return None, {}
    try:  # written whole (renamed into place), so a line that does not parse was changed since
        lines = read_json_lines(path, "build step")
    except UnreadableFile as exc:
        raise UnreadableFile(f"{exc}; delete it and the step is made again") from None
    if not lines or lines[0].get("signature") != signature or not lines[-1].get("complete"):
        return None, {}
    return lines[1:-1], lines[0]


def _write_step(path: str, signature: str, records: list[dict], fingerprint: dict | None) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(json.dumps({"signature": signature, "model_fingerprint": fingerprint}) + "\n")
        handle.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
        handle.write(json.dumps({"complete": True}) + "\n")
    os.replace(tmp, path)


