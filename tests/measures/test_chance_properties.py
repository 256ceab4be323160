"""Property-based: over generated group structures (captions shared within and across groups,
positives shared by several questions, proficiency items, 2x2 matrices), a random model's
metrics average to the chance scoring states, and their p-values are calibrated.

The random model is simulated here, not through chance.py: one uniform draw per distinct
request key, read by the protocols' own outcome logic (a similarity score, e = u, the letter
floor(u * n)), and scored by ``summarize``. Each metric's stated chance must equal the Monte-Carlo
mean of (value - chance) = 0 within its standard error, and P(p <= v) must equal v at each
attained p-value v (the exact calibration of a discrete test)."""
import math
import random

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from timefoil.protocols import get_protocol
from timefoil.protocols.choice import ChoiceOutcome, Trial
from timefoil.protocols.entailment import EntailmentOutcome
from timefoil.protocols.similarity import ScoredOutcome
from timefoil.scoring import SummarySpec, summarize

REPLICATES = 300
SETTINGS = settings(max_examples=6, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
Z = 4.5  # per check; the checks are many, the bounds must hold for all of them


@st.composite
def groups(draw, shared_across_groups=True):
    """Groups of items, each item (keys of its options, target, role). Keys come from a small
    pool per group (so items share captions and positives), sometimes from a pool common to
    every group (a caption asked in two tests)."""
    structure = []
    for g in range(draw(st.integers(2, 5))):
        pool = [f"g{g}k{j}" for j in range(draw(st.integers(2, 5)))]
        if shared_across_groups:
            pool += [f"x{j}" for j in range(draw(st.integers(0, 2)))]
        items = []
        for i in range(draw(st.integers(1, 3))):
            n = draw(st.integers(2, min(3, len(pool))))
            keys = draw(st.lists(st.sampled_from(pool), min_size=n, max_size=n, unique=True))
            role = "proficiency" if i and draw(st.booleans()) else "main"
            items.append((keys, draw(st.integers(0, n - 1)), role))
        structure.append(items)
    return structure


def winoground(n_pairs: int):
    """2x2 matrices: text items (a video, both captions) and video items (a caption, both videos)."""
    out = []
    for g in range(n_pairs):
        key = [[f"g{g}c{c}v{v}" for v in range(2)] for c in range(2)]  # key[c][v] = request (caption c, video v)
        out.append([([key[0][0], key[1][0]], 0, "text"), ([key[0][1], key[1][1]], 1, "text"),
                    ([key[0][0], key[0][1]], 0, "video"), ([key[1][0], key[1][1]], 1, "video")])
    return out


def item(g: int, i: int, keys, target: int, role: str) -> dict:
    return {"id": f"g{g}i{i}", "group_id": f"g{g}", "test": "t", "subtest": None, "role": role, "categories": [],
            "target": target, "n_options": len(keys), "options_are": "texts",
            "texts": [f"text {k}" for k in keys], "metadata": {}}


def outcomes(protocol: str, structure, draws: dict[str, float]):
    out = []
    for g, items in enumerate(structure):
        for i, (keys, target, role) in enumerate(items):
            fields = item(g, i, keys, target, role)
            if protocol == "choice":  # one request per item, its key the first option's (duplicates share it)
                key, n = f"q{'|'.join(keys)}>{target}", len(keys)  # the same question asked twice shares it
                chosen = min(n - 1, int(draws[key] * n))
                position = target  # the target shown where the item says
                out.append(ChoiceOutcome(fields, trials=[Trial(position, chosen, chosen == position, "ok", key)]))
            else:
                kind = EntailmentOutcome if protocol == "entailment" else ScoredOutcome
                out.append(kind(fields, scores=[draws[k] for k in keys], keys=list(keys)))
    return out


def simulate(protocol: str, structure, seed: int) -> dict[str, list[tuple[float, float, float | None, int]]]:
    """(value, chance, p-value, n) of each metric over replicates of the random model."""
    keys = sorted({f"q{'|'.join(keys)}>{target}" if protocol == "choice" else k for items in structure
                   for keys, target, _ in items for k in keys})
    rng = random.Random(seed)
    found: dict[str, list] = {}
    for _ in range(REPLICATES):
        draws = {k: rng.random() for k in keys}
        for m in summarize(outcomes(protocol, structure, draws), get_protocol(protocol), SummarySpec()):
            # "central is true" describes the options, not the answers
            if m.value is not None and m.chance is not None and not m.extra.get("difference") \
                    and not m.name.endswith("central is true"):
                found.setdefault(m.name, []).append((m.value, m.chance, m.p_value, m.n))
    return found


def check_calibrated(found) -> None:
    for name, rows in found.items():
        diff = np.array([v - c for v, c, _, _ in rows])
        if len(rows) < 50:
            continue  # a conditional metric (acc(neg|pos)) with too few replicates where it exists
        se = diff.std(ddof=1) / math.sqrt(len(rows))
        assert abs(diff.mean()) <= Z * se + 1e-9, (name, diff.mean(), se)
        p = np.array([r[2] for r in rows])
        if len({r[3] for r in rows}) == 1 and len({round(r[1], 9) for r in rows}) == 1:
            levels = np.unique(p)  # one null distribution: P(p <= v) = v at each attained v
            for v in levels[levels < 1]:
                share = (p <= v + 1e-12).mean()
                assert abs(share - v) <= Z * math.sqrt(v * (1 - v) / len(p)) + 1 / len(p), (name, v, share)
        else:  # the null changes with the replicate (a conditional metric): never anti-conservative
            for alpha in (0.05, 0.1, 0.25, 0.5):
                share = (p <= alpha).mean()
                assert share <= alpha + Z * math.sqrt(alpha * (1 - alpha) / len(p)), (name, alpha, share)


@SETTINGS
@given(groups())
def test_similarity_chance_and_p_values(structure):
    check_calibrated(simulate("similarity", structure, 1))


@SETTINGS
@given(groups())
def test_entailment_chance_and_p_values(structure):
    check_calibrated(simulate("entailment", structure, 2))


@SETTINGS
@given(groups())
def test_choice_with_repeated_questions(structure):
    check_calibrated(simulate("choice", structure, 3))


def test_two_by_two_matrices_under_similarity():
    found = simulate("similarity", winoground(6), 4)
    check_calibrated(found)
    assert math.isclose(found["overall/group"][0][1], 100 / 6)


def test_shared_positive_under_entailment():
    """Four questions of a video share its positive: MBA chance 1/32, not (1/4)^4; acc(pos) counts
    the positive in each question (as VELOCITI's paper counts) and takes its chance from the five
    distinct positives."""
    structure = [[([f"v{v}p", f"v{v}n{q}"], 0, "main") for q in range(4)] for v in range(5)]
    found = simulate("entailment", structure, 5)
    check_calibrated(found)
    assert math.isclose(found["overall/group"][0][1], 100 / 32)
    assert found["overall/acc(pos)"][0][3] == 20  # twenty questions, five distinct positives behind them
