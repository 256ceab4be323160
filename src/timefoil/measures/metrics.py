"""Metrics as pure functions. Each returns a ``MetricValue`` (percent, n, chance, 95% CI,
p-value against chance); chance levels are derived from the structure of what is scored.
"""
from __future__ import annotations

import math
from typing import Hashable, Mapping, Sequence

from .chance import NO, YES, Beats, Event, Within, event_proportion, probability
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
                     tie_policy: str = "strict", keys: Sequence[Sequence[Hashable]] | None = None) -> MetricValue:
    """``keys``: each option's request key (options asking the same request share a score);
    without them every score is its own request."""
    keys = keys or [[(i, j) for j in range(len(s))] for i, s in enumerate(score_lists)]
    results = [rank_outcome(s, t, tie_policy) for s, t in zip(score_lists, targets)]
    return event_proportion(name, [c for c, _ in results], [ranks_above(k, t) for k, t in zip(keys, targets)],
                            ties=sum(t for _, t in results), tie_policy=tie_policy)


def ranks_above(keys: Sequence[Hashable], target: int) -> Event:
    """The target's score above every other option's (ties have no weight under random scores)."""
    return tuple(Beats(keys[target], k) for j, k in enumerate(keys) if j != target)


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
    return probability(tuple(Beats(w, x) for w, losers in comparisons for x in losers))


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


# Request keys of an item's captions: (the positive's, the negatives'). Items that ask the same
# (video, caption) question share its key and so its answer; without keys each caption is its own.
CaptionKeys = Sequence[tuple[Hashable, Sequence[Hashable]]]


def _own_keys(e_neg: Sequence[Scores]) -> list[tuple[Hashable, list[Hashable]]]:
    return [((i, 0), [(i, j + 1) for j in range(len(negs))]) for i, negs in enumerate(e_neg)]


def strict_event(pos: Hashable, negs: Sequence[Hashable]) -> Event:
    """e(V,C+) > 0.5 and every e(V,C-) < 0.5: one coin per distinct request."""
    return (Within(pos, YES), *(Within(x, NO) for x in negs))


def strict_vle(e_pos: Scores, e_neg: Sequence[Scores], keys: CaptionKeys | None = None) -> MetricValue:
    """Right iff e(V,C+) > 0.5 and every e(V,C-) < 0.5; chance (1/2)^(1+foils) for items that
    share no request."""
    keys = keys or _own_keys(e_neg)
    ok = [_e_ok(p, True) and all(_e_ok(x, False) for x in negs) for p, negs in zip(e_pos, e_neg)]
    return event_proportion("StrictVLE", ok, [strict_event(p, n) for p, n in keys])


def classic_vle(e_pos: Scores, e_neg: Sequence[Scores], keys: CaptionKeys | None = None) -> MetricValue:
    """Right iff e(V,C+) beats every e(V,C-) (strictly); chance 1/(1+foils) for items that share
    no request."""
    keys = keys or _own_keys(e_neg)
    ok = [rank_outcome([p, *negs], 0)[0] for p, negs in zip(e_pos, e_neg)]
    return event_proportion("ClassicVLE", ok, [ranks_above([p, *n], 0) for p, n in keys])


ROWS_NOTE = "each item counts its positive, as the paper counts; chance and p from the distinct requests"


def positive_accuracy(e_pos: Scores, keys: Sequence[Hashable] | None = None) -> MetricValue:
    """e(V,C+) > 0.5 per item, as VELOCITI's paper and released analysis count (a positive that
    several items ask, a VELOCITI caption in two tests, counts in each). Its chance and p-value
    come from the distinct requests: items that share a positive share its one answer, so they
    are one coin, not several (the "sharing" field says how many and that the count is by item)."""
    keys = list(keys or range(len(e_pos)))
    metric = event_proportion("acc(pos)", [_e_ok(p, True) for p in e_pos], [(Within(k, YES),) for k in keys])
    if "sharing" in metric.extra:
        metric.extra["sharing"] = {**metric.extra["sharing"], "distinct requests": len(set(keys)),
                                   "counted": ROWS_NOTE}
    return metric


def negative_accuracy_given_positive(e_pos: Scores, e_neg: Sequence[Scores],
                                     keys: CaptionKeys | None = None) -> MetricValue:
    """Accuracy on negatives among items whose positive was right. Chance is conditional on the
    positives' answers: a negative that is another item's positive request has its answer known."""
    keys = keys or _own_keys(e_neg)
    known = {k: _e_ok(p, True) for p, (k, _) in zip(e_pos, keys)}
    kept = [(negs, neg_keys) for p, negs, (_, neg_keys) in zip(e_pos, e_neg, keys) if _e_ok(p, True)]

    def wrong_if_known(key: Hashable) -> Within:
        return Within(key, NO if key not in known else ((0.0, 1.0),) if not known[key] else ())

    return event_proportion("acc(neg|pos)", [all(_e_ok(x, False) for x in negs) for negs, _ in kept],
                            [tuple(map(wrong_if_known, neg_keys)) for _, neg_keys in kept])


# -- choice ----------------------------------------------------------------------------
def picks(key: Hashable, position: int, n_options: int) -> Event:
    """A choice request among ``n_options`` letters names the one at ``position``."""
    return (Within(key, ((position / n_options, (position + 1) / n_options),)),)


def accuracy(name: str, correct: Sequence[bool], n_options: Sequence[int],
             events: Sequence[Event] | None = None) -> MetricValue:
    """Binary or multi-choice accuracy; chance 1/options per distinct question."""
    events = events or [picks(i, 0, k) for i, k in enumerate(n_options)]
    return event_proportion(name, correct, events)


def order_metrics(correct_a: Sequence[bool], correct_b: Sequence[bool], events_a: Sequence[Event] | None = None,
                  events_b: Sequence[Event] | None = None) -> list[MetricValue]:
    """Two-option questions asked twice: the true option shown as A, then as B.
    Returns acc_A, acc_B, bias = acc_B - acc_A (points), and A∧B (both right)."""
    events_a = events_a or [picks((i, "A"), 0, 2) for i in range(len(correct_a))]
    events_b = events_b or [picks((i, "B"), 1, 2) for i in range(len(correct_b))]
    return [event_proportion("acc_A", correct_a, events_a), event_proportion("acc_B", correct_b, events_b),
            paired_difference("bias", correct_a, correct_b),
            event_proportion("A∧B", [a and b for a, b in zip(correct_a, correct_b)],
                             [a + b for a, b in zip(events_a, events_b)])]


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


def recall_events(key: Hashable, total: int, negatives: int, k: int) -> dict[str, Event]:
    """One random ranking of ``total`` texts, as spans of its request's draw: the caption in the
    top k, and one of its ``negatives`` counterfactuals in the top k, with their exact joint
    chance (both: the caption in the top k less the k-sets holding it and no counterfactual)."""
    caption, counterfactual = recall_chance(total, 1, k), recall_chance(total, negatives, k)
    alone = math.comb(total - 1 - negatives, k - 1) / math.comb(total, k) if k < total else 0.0
    both = caption - alone
    return {"caption": (Within(key, ((0.0, caption),)),),
            "counterfactual": (Within(key, ((0.0, both), (caption, caption + counterfactual - both))),)}


__all__ = ["TIE_POLICIES", "accuracy", "all_correct", "classic_vle", "independent_chance", "mean_of",
           "negative_accuracy_given_positive", "order_metrics", "picks", "positive_accuracy", "rank_outcome",
           "ranking_accuracy", "ranks_above", "recall_at_k", "recall_events", "similarity_group_chance",
           "strict_event", "strict_vle", "winoground_scores"]
