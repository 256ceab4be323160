"""A build's ``datasheet.md``: what was made, what each step kept and why, and people's agreement."""
from __future__ import annotations

import os
from collections import Counter

from ..core.jsonfiles import read_json, read_json_lines
from ..core.output import write_whole


def mean_or_none(values: list) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def write_datasheet(build_dir: str) -> str:
    """``datasheet.md`` from ``build.json``, ``candidates.jsonl`` and, once collected, ``agreement.json``."""
    build = read_json(os.path.join(build_dir, "build.json"), "build record")
    candidates = read_json_lines(os.path.join(build_dir, "candidates.jsonl"), "build's candidates")
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
        agreement = read_json(agreement_path, "agreement record")
        lines += ["", "## Validation by people", ""] + agreement_lines(agreement)
    path = os.path.join(build_dir, "datasheet.md")
    return write_whole(path, "\n".join(lines) + "\n")


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
