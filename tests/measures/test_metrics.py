"""Every metric on a small example worked out by hand."""
import itertools
import math

import pytest

from timefoil.measures import metrics as M
from timefoil.measures.stats import mcnemar_exact, mean_of, proportion, upper_tail, wilson
from timefoil.scoring import SummarySpec, score_records
from timefoil.models.requests import Answer

from helpers import pair_item, vinoground_group
from timefoil.execution.records import records_for
from timefoil.protocols import PlanContext, get_protocol
from timefoil.video.sampling import Sampling


def test_ranking_accuracy_strict_and_ties_correct():
    scores = [[0.9, 0.1], [0.2, 0.5], [0.4, 0.4], [0.7, 0.3, 0.8]]
    strict = M.ranking_accuracy("acc", scores, [0, 0, 0, 0])
    assert strict.value == 25.0 and strict.n == 4
    assert strict.chance == pytest.approx(100 * (0.5 + 0.5 + 0.5 + 1 / 3) / 4)
    assert strict.extra["ties"] == 1
    lenient = M.ranking_accuracy("acc", scores, [0, 0, 0, 0], tie_policy="ties-correct")
    assert lenient.value == 50.0 and lenient.extra["ties"] == 1


def test_missing_score_is_wrong():
    assert M.rank_outcome([None, 0.1], 0) == (False, False)


def test_winoground_from_matrices():
    matrices = [
        [[0.9, 0.1], [0.2, 0.8]],  # all four comparisons right
        [[0.5, 0.6], [0.4, 0.3]],  # text: second fails; video: first fails
        [[0.5, 0.4], [0.6, 0.3]],  # text fails; video: second fails
        [[0.6, 0.5], [0.7, 0.8]],  # text fails; video right
    ]
    text, video, group = M.winoground_scores(matrices)
    assert (text.value, video.value, group.value) == (25.0, 50.0, 25.0)
    assert text.n == video.n == group.n == 4
    assert text.chance == pytest.approx(25.0)
    assert video.chance == pytest.approx(25.0)
    assert group.chance == pytest.approx(100 / 6)


def test_similarity_group_chance_by_enumeration():
    # The 2x2 group: 24 orderings of four scores, four of which satisfy every comparison.
    cmp = [("00", ["10"]), ("11", ["01"]), ("00", ["01"]), ("11", ["10"])]
    assert M.similarity_group_chance(cmp) == pytest.approx(1 / 6)
    # Disjoint comparisons are independent.
    assert M.similarity_group_chance([("a", ["b"]), ("c", ["d", "e"])]) == pytest.approx(1 / 2 * 1 / 3)
    # One true caption against M negatives, asked as M binary comparisons: 1 / (M + 1).
    assert M.similarity_group_chance([("t", [n]) for n in "xyz"]) == pytest.approx(1 / 4)


def test_all_correct_mba_with_unequal_group_sizes():
    groups = {"v1": [True, True, True], "v2": [True, False, True], "v3": [True]}
    chances = {"v1": 0.125, "v2": 0.125, "v3": 0.5}
    mba = M.all_correct("MBA", groups, chances)
    assert mba.value == pytest.approx(200 / 3) and mba.n == 3
    assert mba.chance == pytest.approx(25.0)


def test_entailment_metrics():
    e_pos = [0.9, 0.6, 0.4, 0.8, None]
    e_neg = [[0.2], [0.7], [0.3], [0.45], [0.1]]
    strict = M.strict_vle(e_pos, e_neg)
    assert (strict.value, strict.n, strict.chance) == (40.0, 5, 25.0)
    classic = M.classic_vle(e_pos, e_neg)
    assert (classic.value, classic.chance) == (60.0, 50.0)
    assert M.positive_accuracy(e_pos).value == 60.0
    neg = M.negative_accuracy_given_positive(e_pos, e_neg)
    assert neg.n == 3 and neg.value == pytest.approx(200 / 3) and neg.chance == 50.0
    # Two foils: chance (1/2)^3 strict, 1/3 classic.
    assert M.strict_vle([0.9], [[0.1, 0.2]]).chance == pytest.approx(12.5)
    assert M.classic_vle([0.9], [[0.1, 0.2]]).chance == pytest.approx(100 / 3)


def test_choice_order_metrics():
    acc_a, acc_b, bias, both = M.order_metrics([True, True, True, False], [True, False, False, False])
    assert (acc_a.value, acc_b.value, bias.value, both.value) == (75.0, 25.0, -50.0, 25.0)
    assert (acc_a.chance, bias.chance, both.chance) == (50.0, 0.0, 25.0)
    # Two discordant pairs, both favouring A: McNemar two-sided p = 2 * (1/2)^2.
    assert bias.p_value == pytest.approx(0.5)


def test_multi_choice_and_binary_accuracy():
    acc = M.accuracy("mc", [True, False, True], [4, 4, 4])
    assert acc.value == pytest.approx(200 / 3) and acc.chance == 25.0


def test_recall_at_k():
    scores = [[0.1, 0.9, 0.3, 0.2], [0.5, 0.4, 0.3, 0.8]]
    relevant = [{1}, {0}]
    at1 = M.recall_at_k("R@1", scores, relevant, k=1)
    assert at1.value == 50.0 and at1.chance == pytest.approx(25.0)
    at2 = M.recall_at_k("R@2", scores, relevant, k=2)
    assert at2.value == 100.0 and at2.chance == pytest.approx(50.0)


def test_wilson_and_exact_tails():
    lo, hi = wilson(5, 10)
    assert (round(lo, 2), round(hi, 2)) == (23.66, 76.34)
    assert upper_tail(8, [0.5] * 10) == pytest.approx(56 / 1024)
    # Heterogeneous chances against brute-force enumeration.
    chances = [0.5, 0.5, 1 / 3, 1 / 3, 0.25]
    brute = sum(math.prod(p if x else 1 - p for p, x in zip(chances, outcome))
                for outcome in itertools.product([0, 1], repeat=5) if sum(outcome) >= 3)
    assert upper_tail(3, chances) == pytest.approx(brute)
    assert mcnemar_exact(0, 0) == 1.0


def test_mean_of_averages_parts_unweighted():
    a = proportion("a", [True] * 5 + [False] * 5, [0.5] * 10)
    b = proportion("b", [True] * 14 + [False] * 6, [0.25] * 20)
    avg = mean_of("avg", [a, b])
    assert avg.value == pytest.approx(60.0) and avg.chance == pytest.approx(37.5) and avg.n == 30


def test_mean_of_parts_at_zero_keeps_an_interval():
    """Two tests at 0/10: each Wilson interval is (0, w); a part's standard error is w / (2 z),
    the mean's sqrt(2) times smaller, so the interval is (0, w / (2 sqrt 2)), not 0 +- 0."""
    import math

    zero = proportion("t", [False] * 10, [0.5] * 10)
    avg = mean_of("avg", [zero, zero])
    w = wilson(0, 10)[1]
    assert w > 20 and avg.value == 0.0 and avg.ci95[0] == 0.0
    assert avg.ci95[1] == pytest.approx(w / (2 * math.sqrt(2)))


def test_mean_of_differences_is_two_sided_around_zero():
    bias = [M.paired_difference("bias", [True] * 8 + [False] * 2, [False] * 8 + [True] * 2),
            M.paired_difference("bias", [True] * 5 + [False] * 5, [True] * 5 + [False] * 5)]
    avg = mean_of("average bias", bias)
    assert avg.value == pytest.approx((-60 + 0) / 2) and avg.extra["difference"]
    assert avg.ci95[0] < -30 < avg.ci95[1] < 0 and avg.p_value < 0.05  # clearly below 0

def _similarity_records(items, scores):
    """Records for a similarity run where ``scores[item_id]`` lists each option's score."""
    records, similarity = [], get_protocol("similarity")
    for item, planned in similarity.plan(items, PlanContext(sampling=Sampling(frames=8))):
        answer = Answer(score=scores[item.id][planned.info["option"]])
        records += records_for([(item, planned)], answer, {}, planned.request.key(), similarity)
    return records


def test_aggregation_pools_subtests_and_averages_tests_without_excluded():
    """Within a test, subtests pool items; the headline averages tests, leaving control out."""
    items, scores = [], {}
    right, wrong = [0.9, 0.1], [0.1, 0.9]
    # test "a": subtest x 1/1 right, subtest y 1/3 right -> pooled 2/4 = 50 (not (100+33)/2).
    for i, ok in enumerate([True]):
        items.append(pair_item(f"ax{i}", f"ax{i}", ["c", "f"], test="a", subtest="x"))
        scores[f"ax{i}"] = right if ok else wrong
    for i, ok in enumerate([True, False, False]):
        items.append(pair_item(f"ay{i}", f"ay{i}", ["c", "f"], test="a", subtest="y"))
        scores[f"ay{i}"] = right if ok else wrong
    # test "b": 2/2 right; test "control": 0/2 right and excluded from the average.
    for i in range(2):
        items.append(pair_item(f"b{i}", f"b{i}", ["c", "f"], test="b"))
        scores[f"b{i}"] = right
        items.append(pair_item(f"c{i}", f"c{i}", ["c", "f"], test="control"))
        scores[f"c{i}"] = wrong
    spec = SummarySpec(average="accuracy", average_excludes=("control",))
    report = score_records(_similarity_records(items, scores), benchmark="t", model="m", protocol="similarity",
                           spec=spec)
    assert report.get("a/accuracy").value == 50.0
    assert report.get("a/x/accuracy").value == 100.0
    assert report.get("a/y/accuracy").value == pytest.approx(100 / 3)
    assert report.get("overall/average accuracy").value == pytest.approx(75.0)  # (50 + 100) / 2
    # the pooled overall leaves the excluded control test out too (4 of a's and b's 6), and says so
    assert report.get("overall/accuracy").value == pytest.approx(100 * 4 / 6)
    assert report.get("overall/accuracy").extra["excludes"] == "control"
    assert report.get("control/accuracy").value == 0.0


def test_vinoground_scores_through_items_match_the_matrix_route():
    """The generic all-correct over items gives the same text/video/group as the matrix formula."""
    matrices = [[[0.9, 0.1], [0.2, 0.8]], [[0.5, 0.6], [0.4, 0.3]], [[0.5, 0.4], [0.6, 0.3]],
                [[0.6, 0.5], [0.7, 0.8]]]
    items, scores = [], {}
    for g, s in enumerate(matrices):  # s[caption][video]
        t1, t2, v1, v2 = vinoground_group(g)
        items += [t1, t2, v1, v2]
        scores[t1.id] = [s[0][0], s[1][0]]
        scores[t2.id] = [s[0][1], s[1][1]]
        scores[v1.id] = [s[0][0], s[0][1]]
        scores[v2.id] = [s[1][0], s[1][1]]
    report = score_records(_similarity_records(items, scores), benchmark="t", model="m", protocol="similarity")
    expected = {m.name: m.value for m in M.winoground_scores(matrices)}
    assert report.get("overall/text").value == expected["text"] == 25.0
    assert report.get("overall/video").value == expected["video"] == 50.0
    assert report.get("overall/group").value == expected["group"] == 25.0
    assert report.get("overall/group").chance == pytest.approx(100 / 6)


def test_proficiency_and_p_plus_t():
    items = [pair_item("m1", "g1", ["c", "f"]), pair_item("p1", "g1", ["pc", "pf"], role="proficiency"),
             pair_item("m2", "g2", ["c", "f", "f2"]), pair_item("p2", "g2", ["pc", "pf"], role="proficiency")]
    scores = {"m1": [0.9, 0.1], "p1": [0.9, 0.1], "m2": [0.9, 0.1, 0.95], "p2": [0.8, 0.2]}
    report = score_records(_similarity_records(items, scores), benchmark="t", model="m", protocol="similarity")
    assert report.get("overall/accuracy").value == 50.0
    assert report.get("overall/accuracy").chance == pytest.approx(100 * (1 / 2 + 1 / 3) / 2)
    assert report.get("overall/P").value == 100.0
    pt = report.get("overall/P+T")
    assert pt.value == 50.0 and pt.chance == pytest.approx(100 * (1 / 4 + 1 / 6) / 2)


def test_vinoground_from_choice_answers():
    """Choice answers: each question is asked once; group chance is then (1/2)^4."""
    from helpers import answer_offline
    from timefoil.models.base import Model

    class Scripted(Model):
        kinds = frozenset({"choice"})

        def answer(self, requests, frames):
            out = []
            for r in requests:
                if r.video.is_concat:  # video questions: always "first segment"
                    out.append(Answer(raw="A"))
                else:  # text questions: the option naming the red square first
                    out.append(Answer(raw="ABC"[[o.startswith("caption one") for o in r.option_texts].index(True)]))
            return out

    from dataclasses import replace

    items = [item for g in range(2) for item in vinoground_group(g)]
    # Published Vinoground files fix where the true video is shown: first, for both video questions.
    items = [replace(i, target_position=0) if i.role == "video" else i for i in items]
    records = answer_offline(items, "choice", Scripted())
    assert all(r["parsed"]["status"] == "ok" for r in records)
    report = score_records(records, benchmark="t", model="m", protocol="choice")
    # Text: t1 (caption one is true) right, t2 wrong -> no pair has both. Video: "A" always right.
    assert report.get("overall/text").value == 0.0
    assert report.get("overall/video").value == 100.0
    assert report.get("overall/group").value == 0.0
    assert report.get("overall/accuracy").value == 75.0 and report.get("overall/accuracy").n == 8
    assert report.get("overall/text").chance == 25.0
    assert report.get("overall/group").chance == pytest.approx(6.25)
