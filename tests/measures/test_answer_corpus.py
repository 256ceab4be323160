"""Answers as models write them, each with the letter or verdict it states, or the parse
failure it is: the reader must take what the text concludes, never a letter that is only a
word of the sentence, and never guess where the text concludes nothing."""
import pytest

from helpers import generated_suite, run_records

from timefoil.models import Model
from timefoil.measures.parsing import parse_choice, parse_yes_no
from timefoil.protocols.entailment import entailment_reading
from timefoil.models.requests import Answer
from timefoil import RunConfig, run, score_run

AB = ("A", "B")
ABCD = ("A", "B", "C", "D")
OPTIONS = ("the man opens the door and then sits down", "the man sits down and then opens the door")
FAIL = {"ambiguous", "unparseable", "empty"}

# (answer, labels, expected letter or the failure status)
CHOICE = [
    # bare letters, any case, any wrapping
    ("B", AB, "B"), ("b", AB, "B"), ("(B)", AB, "B"), ("**(b)**", AB, "B"), ("B.", AB, "B"), ("a)", AB, "A"),
    ("[A]", AB, "A"), ('"B"', AB, "B"), ("D", ABCD, "D"), ("  c.  ", ABCD, "C"),
    # stated answers
    ("Answer: B", AB, "B"), ("The answer is (C)", ABCD, "C"), ("The answer is C.", ABCD, "C"),
    ("Option B", AB, "B"), ("option a", AB, "A"), ("Option (b) is correct.", AB, "B"),
    ("**Answer:** B", AB, "B"), ("The correct caption is B.", AB, "B"), ("The best option is **D**.", ABCD, "D"),
    ("B is correct", AB, "B"), ("A is correct.", AB, "A"), ("B) the man sits down and then opens the door", AB, "B"),
    ("I choose B.", AB, "B"), ("I'd go with A.", AB, "A"), ("My answer is c", ABCD, "C"),
    ("I would pick option C.", ABCD, "C"),
    # the article "a", the pronoun "I" and other words that look like letters
    ("In the video a man opens the door first, so B.", AB, "B"),
    ("A man opens the door first, so the answer is B.", AB, "B"),
    ("A woman walks in; B", AB, "B"),
    ("I think B.", AB, "B"),
    ("Based on the video, B.", AB, "B"),
    ("It's B.", AB, "B"),
    ("The answer is a man opening the door first, which is B.", AB, "B"),
    ("The video shows a dog, e.g. running; answer: A", ABCD, "A"),
    ("A-frame houses appear in the background. Answer: B", AB, "B"),
    # the conclusion wins over what came before
    ("I think it's A. Actually, B.", AB, "B"),
    ("A and B are both wrong, the answer is D", ABCD, "D"),
    ("Option A shows the man sitting first. Option B shows the door first. Final answer: B", AB, "B"),
    ("Let me think step by step.\n1. The man opens the door.\n2. He sits down.\nFinal answer:\nA", AB, "A"),
    ("So, A or B? The door opens first, which is A.", AB, "A"),
    ("The answer is B, not A.", AB, "B"),
    ("The answer is not A but B.", AB, "B"),
    ("Not A. The answer is C.", ABCD, "C"),
    ("A is wrong, so the answer is B.", AB, "B"),
    ("Wait, it's actually (a).", AB, "A"),
    ("Initially I thought C, but on reflection the answer is D.", ABCD, "D"),
    ("Therefore, the correct choice is B.", AB, "B"),
    ("Hmm, the man enters first. B", AB, "B"),
    ("Answer: A\nExplanation: the man opens the door first, while B shows the reverse.", AB, "A"),
    ("The correct answer is (B) because in (A) the order is reversed.", AB, "B"),
    ("Between A and B, I'd choose B.", AB, "B"),
    ("<answer>B</answer>", AB, "B"),
    ("so b.", AB, "B"),
    ("Answer: (A) the man sits down and then opens the door", AB, "A"),  # the stated letter over the quote
    # the option's text instead of the letter
    ("the man sits down and then opens the door", AB, "B"),
    ("The man opens the door and then sits down.", AB, "A"),
    ("The answer is: the man sits down and then opens the door.", AB, "B"),
    ("B. The man opens the door and then sits down.", AB, "ambiguous"),  # the letter and the text disagree
    # several options and no conclusion
    ("A or B", AB, "ambiguous"),
    ("A and B are both plausible", AB, "ambiguous"),
    ("Either A or B could be right.", AB, "ambiguous"),
    ("B and D", ABCD, "ambiguous"),
    ("Both A and B", AB, "ambiguous"),
    ("Caption B describes the video; caption A reverses it.", AB, "ambiguous"),
    ("Option A shows the man sitting; option B shows the door.", AB, "ambiguous"),
    # hedges and refusals that conclude nothing
    ("I cannot tell from the video.", AB, "unparseable"),
    ("I'm not sure.", AB, "unparseable"),
    ("A and B are both wrong.", AB, "unparseable"),
    ("Neither A nor B.", AB, "unparseable"),
    ("Sorry, I can't help with that.", AB, "unparseable"),
    ("The video is too dark to see a man or a door.", AB, "unparseable"),
    ("a", ("B", "C"), "unparseable"),
    ("C", AB, "unparseable"),
    ("The answer is E", ABCD, "unparseable"),
    ("", AB, "empty"), ("   \n", AB, "empty"), (None, AB, "empty"),
]

YES_NO = [
    ("Yes", "yes"), ("no", "no"), (" No.", "no"), ("YES", "yes"), ("**Yes**", "yes"),
    ("Yes, because the man opens the door.", "yes"),
    ("No, the man sits down first.", "no"), ("The video does not show this, so No.", "no"),
    ("The answer is yes.", "yes"), ("Answer: No", "no"), ("Yes. Actually, no: the order is reversed.", "no"),
    ("There is no door in the video, so the answer is no.", "no"), ("No one opens the door; so no.", "no"),
    ("Yes, there is no doubt.", "yes"), ("Nope.", "no"),
    ("I would say yes", "yes"), ("The video shows a man, no woman. So yes.", "yes"),
    ("It could be yes or no.", "ambiguous"), ("Yes and no.", "ambiguous"), ("Yes. No.", "ambiguous"),
    ("Maybe.", "unparseable"),
    ("I cannot determine that from the video.", "unparseable"), ("There is no dog.", "unparseable"),
    ("", "empty"),
]


@pytest.mark.parametrize("raw, labels, expected", CHOICE, ids=[repr(c[0])[:50] for c in CHOICE])
def test_letter_read_as_meant(raw, labels, expected):
    parsed = parse_choice(raw, labels, OPTIONS)
    got = parsed.value if parsed.ok else parsed.status
    assert got == expected, parsed


@pytest.mark.parametrize("raw, expected", YES_NO, ids=[repr(c[0])[:50] for c in YES_NO])
def test_verdict_read_as_meant(raw, expected):
    parsed = parse_yes_no(raw)
    assert (parsed.value if parsed.ok else parsed.status) == expected, parsed


def test_corpus_is_large_and_covers_both_outcomes():
    assert len(CHOICE) >= 60
    assert sum(expected in FAIL for _, _, expected in CHOICE) >= 15


# -- entailment: probabilities only where the first token and the text agree ---------------

ENTAILMENT = [
    # (answer text, first-token probabilities, reasoning, e, verdict or failure, read from)
    ("Yes", {"yes": 0.6, "no": 0.2}, False, 0.75, "yes", "logprobs"),  # 0.6 / 0.8
    (" no", {"yes": 0.1, "no": 0.3}, False, 0.25, "no", "logprobs"),  # 0.1 / 0.4
    ("The video does not show this, so No.", {"yes": 0.73, "no": 0.27}, False, 0.0, "no", "text"),
    ("No", {"yes": 0.3, "no": 0.1}, False, 0.0, "no", "text"),  # the first token says No, its sums favour Yes
    ("Yes. Actually, no: the order is reversed.", {"yes": 0.9, "no": 0.1}, False, 0.0, "no", "text"),
    ("Yes", {"yes": 0.4, "no": 0.4}, False, 1.0, "yes", "text"),  # e = 0.5 is neither side
    ("yes", {"yes": 0.0, "no": 0.0}, False, 1.0, "yes", "text"),
    ("Yes", None, False, 1.0, "yes", "text"),
    ("Step by step: the man sits first.\nFinal answer: No", {"yes": 0.8, "no": 0.1}, True, 0.0, "no", "text"),
    ("The video is unclear.", {"yes": 0.7, "no": 0.3}, False, None, "unparseable", "text"),
    ("Yes or no, hard to say.", {"yes": 0.7, "no": 0.3}, False, None, "ambiguous", "text"),
    ("", {"yes": 0.7, "no": 0.3}, False, None, "empty", "text"),
]


@pytest.mark.parametrize("raw, probs, reasoning, e, verdict, read_from", ENTAILMENT,
                         ids=[repr(c[0])[:40] for c in ENTAILMENT])
def test_entailment_probabilities_only_where_the_text_agrees(raw, probs, reasoning, e, verdict, read_from):
    value, parsed = entailment_reading(Answer(raw=raw, probs=probs), reasoning)
    assert value == (None if e is None else pytest.approx(e))
    assert (parsed.value if parsed.ok else parsed.status) == verdict and parsed.read_from == read_from


def _served(raw, probs):
    """A served model that answers every question alike: ``raw`` and its first token's probabilities."""
    class Scripted(Model):
        name = "scripted"

        def answer_entailment(self, requests, frames):
            return [Answer(raw=raw, probs=dict(probs)) for _ in requests]

    return Scripted()


@pytest.mark.parametrize("raw, acc_pos, verdict, read_from", [
    ("The video does not show this, so No.", 0.0, "no", "text"),
    ("Yes", 100.0, "yes", "logprobs"),
])
def test_a_run_reads_each_answer_as_its_text_states(tmp_path_factory, raw, acc_pos, verdict, read_from):
    suite = generated_suite(tmp_path_factory, seed=5, per_family=1)
    out = str(tmp_path_factory.mktemp("run"))
    config = RunConfig("synth", "scripted", data_dir=suite, protocol="entailment")
    run(config, out, cache_dir=str(tmp_path_factory.mktemp("cache")), model=_served(raw, {"yes": .73, "no": .27}),
        progress=False)
    records = run_records(out)
    assert records and all(r["parsed"] == {"value": verdict, "status": "ok", "read_from": read_from} for r in records)
    metrics = {m["name"]: m for m in score_run(out).to_json()["metrics"]}
    # every positive caption is answered alike: acc(pos) is all or nothing
    assert [m["value"] for name, m in metrics.items() if name.endswith("acc(pos)")][:1] == [acc_pos]
