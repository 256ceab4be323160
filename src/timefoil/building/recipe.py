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
from dataclasses import asdict, dataclass, replace
from typing import Any, Callable

from ..benchmarks import folder
from ..core.hashing import stable_hash
from ..core.items import Item, VideoRef
from ..core.paths import default_cache_dir
from ..execution.store import write_json
from .asking import Asker
from .filters import Verdict, aspect_filter, entailment_filter, language_prior_filter, same_words_filter
from .generate import generate as llm_generate
from .rules import Event, Foil, count_foil, role_swaps, swap_events, swap_words

RULES: dict[str, Callable[[str], Foil | None]] = {
    "swap-events": swap_events,
    "count-easy": lambda c: count_foil(c, "easy"),
    "count-hard": lambda c: count_foil(c, "hard"),
    "spatial": lambda c: swap_words(c, "spatial"),
    "order-words": lambda c: swap_words(c, "order"),
    "direction": lambda c: swap_words(c, "direction"),
}


@dataclass
class Candidate:
    id: str
    source: str
    video: str
    caption: str
    foil: str
    aspect: str
    rule: str
    dropped: str = ""  # "step NN: reason" when a filter dropped it
    flagged: str = ""
    detail: dict | None = None


def read_recipe(path: str) -> dict[str, Any]:
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    if path.endswith((".yaml", ".yml")):
        try:
            import yaml
        except ImportError:
            raise ValueError(f"{path}: reading YAML needs PyYAML (pip install 'timefoil[build]'), or write JSON")
        recipe = yaml.safe_load(text)
    else:
        recipe = json.loads(text)
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


def _candidate(pair: dict, caption: str, foil: Foil) -> Candidate:
    return Candidate(stable_hash([pair["id"], caption, foil.text, foil.aspect], 12), pair["id"], pair["video"],
                     caption, foil.text, foil.aspect, foil.rule)


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
        with open(os.path.join(self.out, "candidates.jsonl"), "w", encoding="utf-8") as handle:
            handle.writelines(json.dumps(asdict(c), ensure_ascii=False) + "\n" for c in candidates)
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
            made = stored if stored is not None else self._generate(step, pairs)
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
        verdicts = stored if stored is not None else [asdict(v) for v in self._filter(step, todo)]
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
            info["blind_accuracy"] = {"before": _mean(before), "after": _mean(after)}
        self.steps.append(info)
        self.say(f"{name}: kept {kept} of {len(todo)}")
        return out

    def _generate(self, step: dict, pairs: list[dict]) -> list[dict]:
        how, made = step["generate"], []
        if how == "rules":
            names = step.get("rules") or list(RULES)
            unknown = [n for n in names if n not in RULES]
            if unknown:
                raise ValueError(f"unknown rule(s) {', '.join(unknown)}; known: {', '.join(RULES)}")
            for pair in pairs:
                for rule in names:
                    foil = RULES[rule](pair["caption"]) if pair["caption"] else None
                    made.append(asdict(_candidate(pair, pair["caption"], foil)) if foil else
                                {"why": f"{rule}: does not apply"})
        elif how == "roles":
            for pair in pairs:
                swaps = role_swaps(pair["events"])
                made += [asdict(_candidate(pair, caption, foil)) for caption, foil in swaps] or \
                    [{"why": "roles: fewer than two events"}]
        elif how == "llm":
            asker = self.asker(step["model"])
            captions = [p["caption"] for p in pairs]
            for index, foil, why in llm_generate(asker, captions, step.get("aspects") or ["sequence"],
                                                 aspects_file=step.get("aspects_file"),
                                                 exemplars_file=step.get("exemplars"), seed=step.get("seed", 0)):
                made.append(asdict(_candidate(pairs[index], captions[index], foil)) if foil else {"why": why})
        else:
            raise ValueError(f"unknown generator {how!r}; known: rules, roles, llm")
        return made

    def _filter(self, step: dict, todo: list[Candidate]) -> list[Verdict]:
        how, pairs = step["filter"], [(c.caption, c.foil) for c in todo]
        if how == "same-words":
            return [same_words_filter(c, f) for c, f in pairs]
        if not todo:
            return []
        asker = self.asker(step["model"])
        if how == "entailment":
            return entailment_filter(asker, pairs, float(step.get("threshold", 0.5)))
        if how == "aspect":
            aspects = step.get("aspects") or sorted({c.aspect for c in todo})
            return aspect_filter(asker, [(c.caption, c.foil, c.aspect) for c in todo], aspects,
                                 float(step.get("margin", 0.3)))
        if how == "language-prior":
            return language_prior_filter(asker, pairs, float(step.get("threshold", 0.8)), step.get("action", "drop"))
        raise ValueError(f"unknown filter {how!r}; known: same-words, entailment, aspect, language-prior")

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
    with open(path, encoding="utf-8") as handle:
        lines = [json.loads(line) for line in handle if line.strip()]
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


def _mean(values: list) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def write_datasheet(build_dir: str) -> str:
    """``datasheet.md`` from ``build.json``, ``candidates.jsonl`` and, once collected, ``agreement.json``."""
    with open(os.path.join(build_dir, "build.json"), encoding="utf-8") as handle:
        build = json.load(handle)
    with open(os.path.join(build_dir, "candidates.jsonl"), encoding="utf-8") as handle:
        candidates = [json.loads(line) for line in handle if line.strip()]
    kept = [c for c in candidates if not c["dropped"]]
    lines = [f"# Datasheet: {build['name']}", "",
             f"{build['pairs']} (video, caption) pairs -> {build['candidates']} candidates -> {build['items']} items.",
             "", "## Items per test (aspect) and rule", "", "| test | rule | items |", "|---|---|---|"]
    for (aspect, rule), n in sorted(Counter((c["aspect"], c["rule"]) for c in kept).items()):
        lines.append(f"| {aspect} | {rule} | {n} |")
    lines += ["", "## Text lengths (words)", "", "| texts | n | mean | min | max |", "|---|---|---|---|---|"]
    for label, texts in (("captions", [c["caption"] for c in kept]), ("counterfactuals", [c["foil"] for c in kept])):
        sizes = [len(t.split()) for t in texts]
        if sizes:
            lines.append(f"| {label} | {len(sizes)} | {sum(sizes) / len(sizes):.1f} | {min(sizes)} | {max(sizes)} |")
    lines += ["", "## Steps", "", "| step | model | in | out | pass rate | why dropped or not made |",
              "|---|---|---|---|---|---|"]
    for step in build["steps"]:
        reasons = step.get("dropped") or step.get("not_made") or {}
        why = "; ".join(f"{k}: {v}" for k, v in sorted(reasons.items(), key=lambda kv: -kv[1])) or "-"
        rate = "-" if step.get("pass_rate") is None else f"{100 * step['pass_rate']:.1f}%"
        lines.append(f"| {step['step']} | {step.get('model', '-')} | {step['in']} | {step['out']} | {rate} | {why} |")
        if "blind_accuracy" in step:
            acc = step["blind_accuracy"]
            lines.append(f"|  | blind accuracy before {_pct(acc['before'])}, after {_pct(acc['after'])} | | | | |")
    flagged = [c for c in kept if c["flagged"]]
    if flagged:
        lines += ["", f"{len(flagged)} items kept but flagged (solved without the video)."]
    agreement_path = os.path.join(build_dir, "agreement.json")
    if os.path.exists(agreement_path):
        with open(agreement_path, encoding="utf-8") as handle:
            agreement = json.load(handle)
        lines += ["", "## Validation by people", ""] + agreement_lines(agreement)
    path = os.path.join(build_dir, "datasheet.md")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    return path


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def agreement_lines(agreement: dict) -> list[str]:
    out = [f"{agreement['annotators']} annotators ({', '.join(agreement['names'])}), task {agreement['task']}, "
           f"{agreement['items']} items, rule {agreement['rule']}: {agreement['accepted']} accepted."]
    for name in ("fleiss_kappa", "krippendorff_alpha"):
        value = agreement[name]
        ci = f" (95% CI {value['ci95'][0]} to {value['ci95'][1]})" if value["ci95"] else ""
        out.append(f"- {name.replace('_', ' ')}: {value['value']}{ci}")
    if agreement.get("human_accuracy") is not None:
        out.append(f"- human accuracy ({agreement['aggregate']}): {_pct(agreement['human_accuracy'])}")
    return out
