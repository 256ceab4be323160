"""The recipe's generators and filters, one table each: a step names an entry, and adding a
generator or a filter is one function and one line here."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Callable

from ..core.hashing import stable_hash
from .asking import Asker
from .filters import Verdict, aspect_filter, entailment_filter, language_prior_filter, same_words_filter
from .generate import generate as llm_generate
from .rules import Foil, count_foil, role_swaps, swap_events, swap_words

AskerFor = Callable[[str], Asker]  # a model spec -> its asker (one per spec and build)


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


def candidate(pair: dict, caption: str, foil: Foil) -> Candidate:
    return Candidate(stable_hash([pair["id"], caption, foil.text, foil.aspect], 12), pair["id"], pair["video"],
                     caption, foil.text, foil.aspect, foil.rule)


RULES: dict[str, Callable[[str], Foil | None]] = {
    "swap-events": swap_events,
    "count-easy": lambda c: count_foil(c, "easy"),
    "count-hard": lambda c: count_foil(c, "hard"),
    "spatial": lambda c: swap_words(c, "spatial"),
    "order-words": lambda c: swap_words(c, "order"),
    "direction": lambda c: swap_words(c, "direction"),
}


def by_rules(step: dict, pairs: list[dict], asker_for: AskerFor) -> list[dict]:
    made = []
    names = step.get("rules") or list(RULES)
    unknown = [n for n in names if n not in RULES]
    if unknown:
        raise ValueError(f"unknown rule(s) {', '.join(unknown)}; known: {', '.join(RULES)}")
    for pair in pairs:
        for rule in names:
            foil = RULES[rule](pair["caption"]) if pair["caption"] else None
            made.append(asdict(candidate(pair, pair["caption"], foil)) if foil else {"why": f"{rule}: does not apply"})
    return made


def by_roles(step: dict, pairs: list[dict], asker_for: AskerFor) -> list[dict]:
    made = []
    for pair in pairs:
        swaps = role_swaps(pair["events"])
        made += [asdict(candidate(pair, caption, foil)) for caption, foil in swaps] or \
            [{"why": "roles: fewer than two events"}]
    return made


def by_llm(step: dict, pairs: list[dict], asker_for: AskerFor) -> list[dict]:
    made = []
    captions = [p["caption"] for p in pairs]
    for index, foil, why in llm_generate(asker_for(step["model"]), captions, step.get("aspects") or ["sequence"],
                                         aspects_file=step.get("aspects_file"),
                                         exemplars_file=step.get("exemplars"), seed=step.get("seed", 0)):
        made.append(asdict(candidate(pairs[index], captions[index], foil)) if foil else {"why": why})
    return made


GENERATORS: dict[str, Callable[[dict, list[dict], AskerFor], list[dict]]] = {
    "rules": by_rules, "roles": by_roles, "llm": by_llm}


def _texts(todo: list[Candidate]) -> list[tuple[str, str]]:
    return [(c.caption, c.foil) for c in todo]


FILTERS: dict[str, Callable[[dict, list[Candidate], AskerFor], list[Verdict]]] = {
    "same-words": lambda step, todo, asker_for: [same_words_filter(c, f) for c, f in _texts(todo)],
    "entailment": lambda step, todo, asker_for: entailment_filter(
        asker_for(step["model"]), _texts(todo), float(step.get("threshold", 0.5))),
    "aspect": lambda step, todo, asker_for: aspect_filter(
        asker_for(step["model"]), [(c.caption, c.foil, c.aspect) for c in todo],
        step.get("aspects") or sorted({c.aspect for c in todo}), float(step.get("margin", 0.3))),
    "language-prior": lambda step, todo, asker_for: language_prior_filter(
        asker_for(step["model"]), _texts(todo), float(step.get("threshold", 0.8)), step.get("action", "drop")),
}


def generate_step(step: dict, pairs: list[dict], asker_for: AskerFor) -> list[dict]:
    """A generate step's records: candidates, or {"why": ...} where a pair made none."""
    how = step["generate"]
    if how not in GENERATORS:
        raise ValueError(f"unknown generator {how!r}; known: {', '.join(GENERATORS)}")
    return GENERATORS[how](step, pairs, asker_for)


def filter_step(step: dict, todo: list[Candidate], asker_for: AskerFor) -> list[Verdict]:
    """A filter step's verdict on each candidate of ``todo`` (no model is loaded for none)."""
    how = step["filter"]
    if how not in FILTERS:
        raise ValueError(f"unknown filter {how!r}; known: {', '.join(FILTERS)}")
    return FILTERS[how](step, todo, asker_for) if todo or how == "same-words" else []
