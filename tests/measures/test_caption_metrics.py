"""Caption metrics on examples counted by hand."""
import math

import pytest

from timefoil.measures.caption_metrics import caption_metrics, cider_d, corpus_bleu, rouge_l, tokens

CANDIDATES = ["A dog runs fast.", "the cat is on the mat"]
REFERENCES = [["the dog runs quickly"], ["there is a cat on the mat"]]


def test_bleu_by_hand():
    # unigrams: 2/4 + 5/6 ("the" clipped to one) = 7/10; bigrams: 1/3 + 2/5 = 3/8;
    # candidate length 10 < closest reference lengths 4 + 7 = 11: brevity penalty exp(1 - 11/10).
    bleu = corpus_bleu([tokens(c) for c in CANDIDATES], [[tokens(r) for r in rs] for rs in REFERENCES])
    penalty = math.exp(-0.1)
    assert bleu[0] == pytest.approx(penalty * 0.7)
    assert bleu[1] == pytest.approx(penalty * math.sqrt(0.7 * 3 / 8))
    assert bleu[3] == 0.0  # no 4-gram matches at all


def test_rouge_l_by_hand():
    # LCS("a dog runs fast", "the dog runs quickly") = 2: P = R = 1/2, F = 1/2.
    assert rouge_l(tokens(CANDIDATES[0]), [tokens(REFERENCES[0][0])]) == pytest.approx(0.5)
    # LCS("the cat is on the mat", "there is a cat on the mat") = 4 ("cat on the mat"): P = 4/6, R = 4/7.
    p, r, beta = 4 / 6, 4 / 7, 1.2
    assert rouge_l(tokens(CANDIDATES[1]), [tokens(REFERENCES[1][0])]) == pytest.approx(
        (1 + beta**2) * p * r / (r + beta**2 * p))


def test_cider_is_ten_for_an_exact_caption_and_lower_when_reordered():
    refs = [[tokens("a man opens the door slowly")], [tokens("two birds fly over a lake")]]
    exact = cider_d([r[0] for r in refs], refs)
    assert exact == pytest.approx([10.0, 10.0])
    shuffled = cider_d([tokens("slowly the door opens a man"), refs[1][0]], refs)
    assert shuffled[0] < exact[0] and shuffled[1] == pytest.approx(10.0)


def test_missing_generation_counts_as_empty():
    metrics = {m.name: m for m in caption_metrics([None, "two birds fly over a lake"],
                                                  [["a man opens the door"], ["two birds fly over a lake"]])}
    assert metrics["ROUGE-L"].n == 2 and metrics["ROUGE-L"].value == pytest.approx(50.0)
    assert metrics["BLEU-1"].chance is None
