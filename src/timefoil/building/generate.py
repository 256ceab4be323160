"""Counterfactuals written by a language model, one temporal aspect at a time (VITATECS style).

Per query the model gets the aspect's instruction, six worked examples of that aspect and two
"not applicable" ones (chosen from the exemplar file by a seeded hash of the caption, so a
rerun asks the same question and hits the cache), then the caption. The aspect instructions
and exemplars are data files (``data/aspects.json``, ``data/exemplars.jsonl``) a user copies and
edits, then names in the recipe.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from typing import Sequence

from ..core.hashing import stable_hash
from ..core.jsonfiles import read_json, read_json_lines
from ..models.requests import Request
from .asking import Asker
from .rules import Foil

NOT_APPLICABLE = "Not applicable"
POSITIVES, NOT_APPLICABLES = 6, 2  # examples per query, as VITATECS uses


def _data(name: str) -> str:
    return str(resources.files("timefoil.building") / "data" / name)


@dataclass(frozen=True)
class Exemplar:
    aspect: str
    caption: str
    counterfactual: str | None  # None: the aspect does not apply to this caption


def load_aspects(path: str | None = None) -> dict[str, str]:
    path = path or _data("aspects.json")
    aspects = read_json(path, "aspects file")
    if not isinstance(aspects, dict) or not all(isinstance(v, str) and v.strip() for v in aspects.values()):
        raise ValueError(f"{path}: expected an object of aspect name -> instruction")
    return aspects


def load_exemplars(path: str | None = None) -> list[Exemplar]:
    out = []
    path = path or _data("exemplars.jsonl")
    for number, record in enumerate(read_json_lines(path, "exemplars file"), 1):
        try:
            out.append(Exemplar(record["aspect"], record["caption"], record.get("counterfactual")))
        except (KeyError, TypeError):
            raise ValueError(f"{path}: record {number}: needs aspect, caption, counterfactual") from None
    return out


def choose(exemplars: Sequence[Exemplar], caption: str, seed: int, k: int) -> list[Exemplar]:
    """``k`` exemplars in a seeded order that depends on the query: stable across reruns."""
    return sorted(exemplars, key=lambda e: stable_hash([seed, caption, e.caption]))[:k]


def prompt(aspect: str, instruction: str, exemplars: Sequence[Exemplar], caption: str, seed: int = 0) -> str:
    mine = [e for e in exemplars if e.aspect == aspect]
    shown = choose([e for e in mine if e.counterfactual], caption, seed, POSITIVES) + \
        choose([e for e in mine if not e.counterfactual], caption, seed, NOT_APPLICABLES)
    shown.sort(key=lambda e: stable_hash([seed, "order", caption, e.caption]))  # N/A not always last
    lines = [instruction, f'If the caption cannot be changed this way, write "{NOT_APPLICABLE}".', ""]
    for e in shown:
        lines += [f"Caption: {e.caption}", f"Counterfactual: {e.counterfactual or NOT_APPLICABLE}", ""]
    lines += [f"Caption: {caption}", "Counterfactual:"]
    return "\n".join(lines)


def read_counterfactual(raw: str, caption: str) -> tuple[str | None, str]:
    """(the counterfactual, "") or (None, why not): the first non-empty line, without a label
    or quotes; "not applicable", an empty reply or the caption itself give none."""
    line = next((ln.strip() for ln in (raw or "").splitlines() if ln.strip()), "")
    line = re.sub(r"^(counterfactual|answer)\s*:\s*", "", line, flags=re.IGNORECASE).strip().strip('"“”\'').strip()
    if not line:
        return None, "empty reply"
    if line.lower().rstrip(".").startswith(NOT_APPLICABLE.lower()):
        return None, "not applicable"
    if line.lower().rstrip(".") == caption.lower().rstrip("."):
        return None, "unchanged"
    return line, ""


def generate(asker: Asker, captions: Sequence[str], aspects: Sequence[str], *, aspects_file: str | None = None,
             exemplars_file: str | None = None, seed: int = 0, max_tokens: int = 64
             ) -> list[tuple[int, Foil | None, str]]:
    """(caption index, foil or None, reason) per caption and aspect, asked in one cached pass."""
    instructions = load_aspects(aspects_file)
    unknown = [a for a in aspects if a not in instructions]
    if unknown:
        raise ValueError(f"unknown aspect(s) {', '.join(unknown)}; the aspects file has {', '.join(instructions)}")
    exemplars = load_exemplars(exemplars_file)
    asked = [(i, a) for i, _ in enumerate(captions) for a in aspects]
    requests = [Request("generation", None, prompt(a, instructions[a], exemplars, captions[i], seed),
                        max_tokens=max_tokens) for i, a in asked]
    out = []
    for (i, aspect), answer in zip(asked, asker.ask(requests)):
        if answer.error:
            out.append((i, None, f"model error: {answer.error}"))
            continue
        text, why = read_counterfactual(answer.raw or "", captions[i])
        out.append((i, Foil(text, aspect, "llm") if text else None, why))
    return out


def exemplar_paths() -> tuple[str, str]:
    """Where the shipped aspect and exemplar files are (to copy and edit)."""
    return _data("aspects.json"), _data("exemplars.jsonl")


__all__ = ["Exemplar", "exemplar_paths", "generate", "load_aspects", "load_exemplars", "prompt",
           "read_counterfactual"]
