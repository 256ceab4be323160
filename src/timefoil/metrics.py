"""Metrics as pure functions. Each returns a ``MetricValue`` (percent, n, chance, 95% CI,
p-value against chance); chance levels are derived from the structure of what is scored.
"""
from __future__ import annotations

import itertools
import math
import random
from functools import lru_cache
from typing import Hashable, Mapping, Sequence

from .stats import MetricValue, mean_of, paired_difference, proportion

TIE_POLICIES = ("strict", "ties-correct")
Scores = Sequence[float | None]


# -- pairwise ranking (similarity) -------------------------------------------------------
def rank_outcome(scores: Scores, target: int, tie_policy: str = "strict") -> tuple[bool, bool]:
    """(correct, tie): the target must score above every other option. A missing score
    (an error) is wrong. Ties lose unless ``tie_policy`` is "ties-correct" (ViLMA's script)."""
    if tie_policy not in TIE_POLICIES:
        raise ValueError(f"tie policy must be one of {TIE_POLICIES}")
    if any(s is None for s in scores):
        return False, False
    best_other = max(s for i, s in enumerate(scores) if i != target)
    tie = scores[target] == best_other
    return (scores[target] > best_other) or (tie and tie_policy == "ties-correct"), tie


def ranking_accuracy(name: str, score_lists: Sequence[Scores], targets: Sequence[int],
                     tie_policy: str = "strict") -> MetricValue:
    results = [rank_outcome(s, t, tie_policy) for s, t in zip(score_lists, targets)]
    return proportion(name, [c for c, _ in results], [1 / len(s) for s in score_lists],
                      ties=sum(t for _, t in results), tie_policy=tie_policy)


# -- groups: Vinoground text/video/group, MBA, P+T ----------------------------------------
def all_correct(name: str, groups: Mapping[Hashable, Sequence[bool]],
                chances: Mapping[Hashable, float]) -> MetricValue:
    """A group counts only if every one of its units is right; mean over groups."""
    keys = list(groups)
    return proportion(name, [all(groups[k]) for k in keys], [chances[k] for k in keys])


def independent_chance(unit_chances: Sequence[float]) -> float:
    return math.prod(unit_chances)


def similarity_group_chance(comparisons: Sequence[tuple[Hashable, Sequence[Hashable]]]) -> float:
    """Chance that every comparison (winner beats each loser) holds when each distinct score
    key gets an independent continuous random score. Comparisons that share a score (the
    2x2 matrix of a Vinoground pair) are not independent: 1/6 there, not 1/16."""
    names = sorted({k for w, losers in comparisons for k in (w, *losers)}, key=str)
    index = {k: i for i, k in enumerate(names)}
    canonical = tuple(sorted((index[w], tuple(sorted(index[x] for x in losers))) for w, losers in comparisons))
    return _rank_chance(len(names), canonical)


@lru_cache(maxsize=4096)
def _rank_chance(n_keys: int, comparisons: tuple) -> float:
    def holds(rank) -> bool:
        return all(rank[w] > rank[x] for w, losers in comparisons for x in losers)

    if n_keys <= 8:  # exact: every ordering of the distinct scores is equally likely
        perms = list(itertools.permutations(range(n_keys)))
        return sum(holds(p) for p in perms) / len(perms)
    rng = random.Random(0)
    draws = 200_000
    return sum(holds([rng.random() for _ in range(n_keys)]) for _ in range(draws)) / draws


def winoground_scores(matrices: Sequence[Sequence[Sequence[float]]]) -> list[MetricValue]:
    """Text, video and group score from 2x2 matrices s[c][v] = score(caption c, video v),
    caption i describing video i (strict: ties lose)."""
    text, video, group = {}, {}, {}
    for g, s in enumerate(matrices):
        text[g] = [s[0][0] > s[1][0], s[1][1] > s[0][1]]
        video[g] = [s[0][0] > s[0][1], s[1][1] > s[1][0]]
        group[g] = text[g] + video[g]
    text_cmp = [((0, 0), [(1, 0)]), ((1, 1), [(0, 1)])]
    video_cmp = [((0, 0), [(0, 1)]), ((1, 1), [(1, 0)])]
    chance = {name: similarity_group_chance(c) for name, c in
              (("text", text_cmp), ("video", video_cmp), ("group", text_cmp + video_cmp))}
    return [all_correct(name, data, {g: chance[name] for g in data})
            for name, data in (("text", text), ("video", video), ("group", group))]


# -- entailment (VELOCITI) ----------------------------------------------------------------
def _e_ok(value: float | None, positive: bool) -> bool:
    return value is not None and (value > 0.5 if positive else value < 0.5)


def strict_vle(e_pos: Scores, e_neg: Sequence[Scores]) -> MetricValue:
    """Right iff e(V,C+) > 0.5 and every e(V,C-) < 0.5; chance (1/2)^(1+foils)."""
    ok = [_e_ok(p, True) and all(_e_ok(x, False) for x in negs) for p, negs in zip(e_pos, e_neg)]
    return proportion("StrictVLE", ok, [0.5 ** (1 + len(n)) for n in e_neg])


def classic_vle(e_pos: Scores, e_neg: Sequence[Scores]) -> MetricValue:
    """Right iff e(V,C+) beats every e(V,C-) (strictly); chance 1/(1+foils)."""
    ok = [rank_outcome([p, *negs], 0)[0] for p, negs in zip(e_pos, e_neg)]
    return proportion("ClassicVLE", ok, [1 / (1 + len(n)) for n in e_neg])


def positive_accuracy(e_pos: Scores) -> MetricValue:
    return proportion("acc(pos)", [_e_ok(p, True) for p in e_pos], [0.5] * len(e_pos))


def negative_accuracy_given_positive(e_pos: Scores, e_neg: Sequence[Scores]) -> MetricValue:
    """Accuracy on negatives among items whose positive was right."""
    kept = [negs for p, negs in zip(e_pos, e_neg) if _e_ok(p, True)]
    return proportion("acc(neg|pos)", [all(_e_ok(x, False) for x in negs) for negs in kept],
                      [0.5 ** len(n) for n in kept])


# -- choice ----------------------------------------------------------------------------
def accuracy(name: str, correct: Sequence[bool], n_options: Sequence[int]) -> MetricValue:
    """Binary or multi-choice accuracy; chance 1/options per question."""
    return proportion(name, correct, [1 / k for k in n_options])


def order_metrics(correct_a: Sequence[bool], correct_b: Sequence[bool]) -> list[MetricValue]:
    """Two-option questions asked twice: the true option shown as A, then as B.
    Returns acc_A, acc_B, bias = acc_B - acc_A (points), and A∧B (both right)."""
    n = len(correct_a)
    return [proportion("acc_A", correct_a, [0.5] * n), proportion("acc_B", correct_b, [0.5] * n),
            paired_difference("bias", correct_a, correct_b),
            proportion("A∧B", [a and b for a, b in zip(correct_a, correct_b)], [0.25] * n)]


# -- retrieval -------------------------------------------------------------------------
def recall_at_k(name: str, scores: Sequence[Sequence[float]], relevant: Sequence[set[int]], k: int = 10) -> MetricValue:
    """Video-to-text retrieval: a video is a hit when one of its relevant texts ranks in the
    top k of all texts. Chance per video: 1 - C(T - g, k) / C(T, k) for g relevant of T."""
    hits, chances = [], []
    for row, rel in zip(scores, relevant):
        order = sorted(range(len(row)), key=lambda j: (-row[j], j))
        hits.append(bool(set(order[:k]) & rel))
        chances.append(recall_chance(len(row), len(rel), k))
    return proportion(name, hits, chances, k=k)


def recall_chance(total: int, relevant: int, k: int) -> float:
    """Chance that a random ranking of ``total`` candidates puts one of ``relevant`` in the top k."""
    return 1 - math.comb(total - relevant, k) / math.comb(total, k) if k < total else 1.0


__all__ = ["TIE_POLICIES", "accuracy", "all_correct", "classic_vle", "independent_chance", "mean_of",
           "negative_accuracy_given_positive", "order_metrics", "positive_accuracy", "rank_outcome",
           "ranking_accuracy", "recall_at_k", "similarity_group_chance", "strict_vle", "winoground_scores"]
