"""The released scorers' readings, worked by hand from their code (the lines each rule cites), on
answers written to tell the released reading from the meant one."""
import pytest

from helpers import Scripted, pair_item
from timefoil.benchmarks import get_benchmark
from timefoil.execution.offline import answer_offline
from timefoil.models import Model
from timefoil.models.requests import Answer
from timefoil.protocols.readings import contains_one_verdict, first_character, first_token
from timefoil.scoring import beside, score_records


# -- the rules, case by case ----------------------------------------------------------------------
@pytest.mark.parametrize("raw, read", [
    ("B", "B"), ("b", "B"), ("Answer: B", "A"),  # "A" of "Answer" in lower case equals GT a
    (" B", None),  # a leading space is the first character
    ("", None), (None, None), ("C. neither", None), ("(B)", None)])
def test_first_character_as_vinoground_and_temporalbench_read_it(raw, read):
    assert first_character(raw, ("A", "B")) == read


@pytest.mark.parametrize("raw, read", [
    ("A", "A"), ("B is right", "B"), (" B\n", "B"),  # split() drops the leading space
    ("A.", None), ("a", None), ("(A)", None), ("Answer: A", None), ("", None), (None, None)])
def test_first_token_as_velociti_multiple_choice_reads_it(raw, read):
    assert first_token(raw, ("A", "B")) == read


@pytest.mark.parametrize("raw, read", [
    ("Yes", "yes"), ("Yes, it does.", "yes"), ("Yes, no doubt", "yes"),  # "no" is not "No"
    ("No", "no"), ("Not at all", "no"),  # "Not" contains "No"
    ("yes", None), ("I cannot tell.", None), ("Yes. No.", None), ("", None), (None, None)])
def test_contains_one_verdict_as_velociti_closed_models_are_read(raw, read):
    assert contains_one_verdict(raw) == read


# -- whole runs, scored both ways -----------------------------------------------------------------
def both_ways(benchmark, items, protocol, replies, order="both"):
    declared = get_benchmark(benchmark)
    records = answer_offline(items, protocol, Scripted(replies), order_policy=order)
    common = dict(benchmark=benchmark, model="m", protocol=protocol, spec=declared.summary)
    return score_records(records, **common), score_records(records, **common, rule=declared.released)


def values(report):
    return {m.name: (None if m.value is None else round(m.value, 2), m.n) for m in report.metrics}


def test_temporalbench_first_character_against_the_parsers_letter():
    """Each question asked in both orders. q1 "{L}": right both ways. q2 "Answer: {L}": the meant
    reading right twice; released reads A both times, right only where A is true. q3 " {L}": the
    released reading reads nothing (wrong). q4 lower case: right both ways. q5 empty: wrong both."""
    replies = {"true 1": "{L}", "true 2": "Answer: {L}", "true 3": " {L}", "true 4": "{l}", "true 5": ""}
    items = [pair_item(f"q{k}", "v1" if k <= 2 else "v2", [f"true {k}", f"false {k}"]) for k in range(1, 6)]
    meant, released = both_ways("temporalbench", items, "choice", replies)
    # meant: 8 of 10 answers right; released: q1 2 + q2 1 + q4 2 = 5 of 10
    assert values(meant)["overall/BA"] == (80.0, 10) and values(released)["overall/BA"] == (50.0, 10)
    # MBA over videos: meant v1 right, v2 wrong (q5); released both wrong (q2's B order)
    assert values(meant)["overall/MBA"] == (50.0, 2) and values(released)["overall/MBA"] == (0.0, 2)
    # read otherwise: q2 shown B ("Answer: B" read as A), q3 twice (" A", " B" read as nothing)
    assert released.released["read_differently"] == 3 and released.released["dropped"] == 0
    assert released.reading == "released" and meant.reading == "meant"
    assert released.get("overall/BA").chance == 50.0


def test_lower_case_reads_alike_both_ways():
    items = [pair_item("q1", "v1", ["true 1", "false 1"])]
    meant, released = both_ways("temporalbench", items, "choice", {"true 1": "a"})
    # "a" is right where A is true and wrong where B is: one of two, both ways, read alike
    assert values(meant)["overall/BA"] == values(released)["overall/BA"] == (50.0, 2)
    assert released.released["read_differently"] == 0


def test_velociti_multiple_choice_drops_pairs_whose_first_token_is_not_a_letter():
    """(true shown as A, true shown as B): i1 ("A", "B"); i2 ("A.", "B."); i3 ("Answer: A", "Answer: B");
    i4 ("B", "B"); i5 ("I cannot tell", "A"). metrics.py keeps i1 and i4 (i2, i3, i5 have a first
    token that is not exactly A or B): acc_A 1/2, acc_B 2/2, A∧B 1/2."""
    replies = {"true 1": "{L}", "true 2": "{L}.", "true 3": "Answer: {L}", "true 4": "B", "true 5": "?"}
    items = [pair_item(f"i{k}", f"i{k}", [f"true {k}", f"false {k}"], test="chrono") for k in range(1, 6)]
    declared = get_benchmark("velociti")
    records = answer_offline(items, "choice", Scripted(replies), order_policy="both")
    for record in records:  # i5: unreadable when the truth is shown as A, "A" (wrong) when shown as B
        if record["item"]["id"] == "i5":
            record["answer"]["raw"] = "I cannot tell" if record["request"]["position"] == 0 else "A"
    common = dict(benchmark="velociti", model="m", protocol="choice", spec=declared.summary)
    meant = score_records(records, **common)
    released = score_records(records, **common, rule=declared.released)
    # meant: acc_A i1 i2 i3 = 3/5; acc_B i1..i4 = 4/5; A∧B 3/5, every pair counted
    assert [values(meant)[f"overall/{k}"] for k in ("acc_A", "acc_B", "A∧B")] == [(60.0, 5), (80.0, 5), (60.0, 5)]
    assert [values(released)[f"overall/{k}"] for k in ("acc_A", "acc_B", "A∧B")] == \
        [(50.0, 2), (100.0, 2), (50.0, 2)]
    assert released.released["dropped"] == 3 and released.items == 2
    # "A.", "B.", "Answer: A", "Answer: B" (i5's "I cannot tell" is read as nothing both ways)
    assert released.released["read_differently"] == 4
    # chance and p follow the released denominator: two pairs, A∧B chance 1/4, P(X >= 1) = 7/16
    ab = released.get("overall/A∧B")
    assert ab.chance == pytest.approx(25.0) and ab.p_value == pytest.approx(7 / 16)


def test_velociti_closed_model_entailment_maps_yes_by_substring_and_drops_the_rest():
    """(positive reply, negative reply): i1 (Yes, No); i2 (yes, No); i3 (Yes, it does., No.);
    i4 (Yes, no doubt, Yes); i5 (I cannot tell., No); i6 (No, Not at all). closed_model_metrics.py
    keeps i1 i3 i4 i6: StrictVLE 2/4, acc(pos) 3/4, acc(neg|pos) 2/3."""
    pairs = [("Yes", "No"), ("yes", "No"), ("Yes, it does.", "No."), ("Yes, no doubt", "Yes"),
             ("I cannot tell.", "No"), ("No", "Not at all")]
    replies = {f"{side} {k}": reply for k, pair in enumerate(pairs, 1) for side, reply in zip(("pos", "neg"), pair)}
    items = [pair_item(f"i{k}", f"i{k}", [f"pos {k}", f"neg {k}"], test="chrono") for k in range(1, 7)]
    meant, released = both_ways("velociti", items, "entailment", replies)
    # meant: right i1 i2 i3 (i4 says Yes to both, i5's positive reads as nothing, i6 says No to both)
    assert values(meant)["overall/StrictVLE"] == (50.0, 6)
    assert values(meant)["overall/acc(pos)"] == (66.67, 6)  # i1..i4
    assert values(meant)["overall/acc(neg|pos)"] == (75.0, 4)  # i1 i2 i3 of i1..i4
    assert values(released)["overall/StrictVLE"] == (50.0, 4)
    assert values(released)["overall/acc(pos)"] == (75.0, 4)
    assert values(released)["overall/acc(neg|pos)"] == (66.67, 3)
    assert released.released["dropped"] == 2  # i2, i5
    assert released.released["read_differently"] == 1  # "yes" (meant Yes); "Not at all" is No both ways
    assert released.get("overall/StrictVLE").chance == 25.0


def test_vilma_ties_count_right_as_its_argmax_does():
    items = [pair_item(f"g{k}", f"g{k}", [f"cap {k}", f"foil {k}"], test="counting") for k in range(4)]
    scores = {"cap 0": .9, "foil 0": .1, "cap 1": .5, "foil 1": .5, "cap 2": .5, "foil 2": .5,
              "cap 3": .1, "foil 3": .9}
    meant, released = both_ways("vilma", items, "similarity", scores, order="balanced")
    assert values(meant)["overall/T"] == (25.0, 4) and values(released)["overall/T"] == (75.0, 4)
    assert released.released["read_differently"] == 2 and released.ties == 2


def test_vitatecs_released_rule_is_the_meant_one():
    items = [pair_item(f"t{k}", f"t{k}", [f"cap {k}", f"cf {k}"], test="direction") for k in range(3)]
    scores = {"cap 0": .9, "cf 0": .1, "cap 1": .5, "cf 1": .5, "cap 2": .1, "cf 2": .9}
    meant, released = both_ways("vitatecs", items, "similarity", scores, order="balanced")
    assert values(meant) == values(released) and values(meant)["overall/accuracy"] == (33.33, 3)
    assert released.released == {"source": get_benchmark("vitatecs").released.source, "read_differently": 0,
                                  "dropped": 0}


def test_beside_keeps_the_other_number_only_where_it_differs():
    items = [pair_item(f"q{k}", "v1", [f"true {k}", f"false {k}"]) for k in range(1, 3)]
    meant, released = both_ways("temporalbench", items, "choice", {"true 1": "Answer: {L}", "true 2": "{L}"})
    shown = beside(meant, released)
    ba = shown.get("overall/BA")
    assert (ba.value, ba.extra["released"]["value"], ba.extra["released"]["n"]) == (100.0, 75.0, 4)
    assert "released" not in shown.get("overall/acc_A").extra  # "Answer: A" is A both ways
    assert shown.get("overall/acc_B").extra["released"]["value"] == 50.0  # "Answer: B" read as A
    assert shown.released["read_differently"] == 1


class WithProbabilities(Model):
    """A model whose first token's probabilities give e (a local model, or a served one that
    returns log-probabilities); the text is lower case, which the closed-model rule cannot read."""

    name = "probabilities"

    def answer_entailment(self, requests, frames):
        e = [.8 if r.caption.startswith("pos") else .3 for r in requests]
        return [Answer(raw="yes" if x > .5 else "no", probs={"yes": x, "no": 1 - x}) for x in e]


def velociti_entailment_both_ways(model):
    """Three chrono pairs answered by ``model``, scored by the meant and the released reading."""
    items = [pair_item(f"i{k}", f"i{k}", [f"pos {k}", f"neg {k}"], test="chrono") for k in range(3)]
    declared = get_benchmark("velociti")
    records = answer_offline(items, "entailment", model)
    common = dict(benchmark="velociti", model="m", protocol="entailment", spec=declared.summary)
    return score_records(records, **common), score_records(records, **common, rule=declared.released)


def test_velociti_entailment_read_from_probabilities_is_the_same_under_both_rules():
    meant, released = velociti_entailment_both_ways(WithProbabilities())
    assert values(meant) == values(released) and values(meant)["overall/StrictVLE"] == (100.0, 3)
    assert released.released["read_differently"] == 0 and released.released["dropped"] == 0


def test_an_outcome_read_by_vilmas_rule_counts_its_tie_right_wherever_it_is_asked():
    """The pairings of `ablate` and the report ask each outcome whether it is right."""
    from timefoil.scoring import outcomes_from_records

    items = [pair_item("g0", "g0", ["cap", "foil"], test="counting")]
    records = answer_offline(items, "similarity", Scripted({"cap": .5, "foil": .5}))
    meant, = outcomes_from_records(records, "similarity")
    released, = outcomes_from_records(records, "similarity", get_benchmark("vilma").released)
    assert (meant.correct(), released.correct()) == (False, True)


class Tied(Model):
    """A served model's replies with log-probabilities: a positive caption's Yes and No exactly
    as likely (written "Yes."), a foil's clearly No."""

    name = "tied"

    def answer_entailment(self, requests, frames):
        return [Answer(raw="Yes.", probs={"yes": .4, "no": .4}) if r.caption.startswith("pos")
                else Answer(raw="No.", probs={"yes": .1, "no": .9}) for r in requests]


def test_a_tie_of_yes_and_no_is_what_the_released_scorer_makes_of_it_and_the_text_under_the_meant_reading():
    """metrics.py computes e from the probabilities alone: 0.5 is neither Yes (> 0.5) nor No
    (< 0.5), so no positive counts right; the meant reading takes what the reply wrote (e = 1)."""
    meant, released = velociti_entailment_both_ways(Tied())
    # meant: e(pos) = 1 from "Yes.", e(neg) = 0.1: StrictVLE, ClassicVLE and acc(pos) 3 of 3
    assert [values(meant)[f"overall/{m}"] for m in ("StrictVLE", "ClassicVLE", "acc(pos)")] == [(100.0, 3)] * 3
    # released: e(pos) = 0.5: StrictVLE and acc(pos) 0 of 3, ClassicVLE 0.5 > 0.1 still 3 of 3
    assert [values(released)[f"overall/{m}"] for m in ("StrictVLE", "ClassicVLE", "acc(pos)")] == \
        [(0.0, 3), (100.0, 3), (0.0, 3)]
    assert values(released)["overall/acc(neg|pos)"] == (None, 0)  # no positive right to condition on
    assert released.released["read_differently"] == 3 and released.parse_failures == 0


def test_a_test_only_one_reading_scores_is_reported_under_both():
    """Every answer of the chrono test unread by the released rule ("A." is no first token A):
    the released report still names chrono, with no value and the meant number beside, and the
    meant report carries the released reading's empty one."""
    items = [pair_item(f"c{k}", f"c{k}", [f"true {k}", f"false {k}"], test="chrono") for k in range(2)] + \
        [pair_item(f"r{k}", f"r{k}", [f"true r{k}", f"false r{k}"], test="coref") for k in range(2)]
    declared = get_benchmark("velociti")
    template = {"true 0": "{L}.", "true 1": "{L}.", "true r0": "{L}", "true r1": "{L}"}
    meant, released = both_ways("velociti", items, "choice", template)
    shown = beside(released, meant)
    chrono = shown.get("chrono/A∧B")
    assert (chrono.value, chrono.n, chrono.extra["meant"]["value"], chrono.extra["meant"]["n"]) == (None, 0, 100.0, 2)
    assert (shown.get("coref/A∧B").value, shown.get("coref/A∧B").n) == (100.0, 2)  # named though one test is left
    average = next(m for m in shown.metrics if m.name.startswith("overall/average A∧B"))
    assert average.name == "overall/average A∧B (1 of 7 tests)" and average.extra["meant"]["value"] == 100.0
    other = beside(meant, released).get("chrono/A∧B")
    assert (other.value, other.extra["released"]["value"], other.extra["released"]["n"]) == (100.0, None, 0)
    assert declared.released.drops
