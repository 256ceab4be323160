"""Every model answer is checked before it is stored or read: what each check refuses and says,
that the reference models pass, and that the cache, the judge and ranks built from similarity
scores go through the same checks."""
import json
import math
import sqlite3

import numpy as np
import pytest

from timefoil import RunConfig, run
from timefoil.execution.store import RESPONSES, RunLog
from timefoil.models import MODELS, Model, ModelLoader
from timefoil.models.base import RanksBySimilarity
from timefoil.models.checks import answer_problem
from timefoil.models.reference import ConstantModel, RandomModel
from timefoil.models.requests import Answer, Request

pytestmark = pytest.mark.suite(per_family=1, seed=4, families=("order",))

SIMILARITY = Request("similarity", None, "a caption")
ENTAILMENT = Request("entailment", None, "does it?", caption="a caption")
CHOICE = Request("choice", None, "which?", labels=("A", "B"), option_texts=("one", "two"))
GENERATION = Request("generation", None, "say")
RANK = Request("rank", None, "", option_texts=("one", "two", "three"), ask=(0, 2))

CASES = [
    (Answer(score=float("nan")), SIMILARITY, "score nan, not a finite number"),
    (Answer(score=float("inf")), SIMILARITY, "score inf, not a finite number"),
    (Answer(score=True), SIMILARITY, "score True (a bool), not a finite number"),
    (Answer(score="0.5"), SIMILARITY, "score '0.5' (a str), not a finite number"),
    (Answer(), SIMILARITY, "no score (a similarity answer needs one)"),
    (Answer(score=np.float32(0.25)), SIMILARITY, None),
    (Answer(score=1.0, latency=math.nan), SIMILARITY, "latency nan, not a finite number"),
    (Answer(score=1.0, meta=None), SIMILARITY, "meta that is not a dict"),
    (0.5, SIMILARITY, "a float, not an Answer"),
    (None, SIMILARITY, "None, not an Answer"),
    (Answer(raw=3), ENTAILMENT, "raw an int, not text"),
    (Answer(probs={"yes": 1 + 5e-6, "no": 0.0}), ENTAILMENT, None),  # float32 rounding past 1
    (Answer(probs={"yes": 1.001, "no": 0.0}), ENTAILMENT, "probability 'yes' 1.001, not between 0 and 1"),
    (Answer(raw="A", probs={"A": -0.1}), CHOICE, "probability 'A' -0.1, not between 0 and 1"),
    (Answer(raw="A", probs=[0.5]), CHOICE, "probs a list, not a dict of probabilities"),
    (Answer(), CHOICE, "no raw and no probs (a choice answer needs either)"),
    (Answer(raw=""), GENERATION, None),  # an empty reply is read (a parse failure), not refused
    (Answer(), GENERATION, "no raw (a generation answer needs one)"),
    (Answer(), Request("caption", None, "a protocol's own kind"), None),
    (Answer(error="model error: out of memory", score=math.nan), SIMILARITY, None),  # an error as it is
    (Answer(error=""), SIMILARITY, "error '', not a message"),
    (Answer(meta={"ranks": [1, 3]}), RANK, None),
    (Answer(meta={"ranks": [np.int64(2), 1]}), RANK, None),
    (Answer(meta={}), RANK, "no ranks (a rank answer needs them in its meta)"),
    (Answer(meta={"ranks": [1]}), RANK, "ranks [1] (a list), not a list of 2"),
    (Answer(meta={"ranks": [0, 1]}), RANK, "rank 0, not a whole number from 1 to 3"),
    (Answer(meta={"ranks": [1, 4]}), RANK, "rank 4, not a whole number from 1 to 3"),
    (Answer(meta={"ranks": [1, 2.0]}), RANK, "rank 2.0, not a whole number from 1 to 3"),
    (Answer(meta={"ranks": [1, None]}), RANK, "rank None, not a whole number from 1 to 3"),
]


@pytest.mark.parametrize("answer, request_, expected", CASES, ids=[str(i) for i in range(len(CASES))])
def test_answer_problem_says_what_is_wrong(answer, request_, expected):
    assert answer_problem(answer, request_) == expected


@pytest.mark.parametrize("model", [RandomModel(seed=3), ConstantModel()], ids=["random", "constant"])
def test_the_reference_models_answers_pass(model):
    requests = [SIMILARITY, ENTAILMENT, CHOICE, GENERATION, RANK]
    answers = model.answer(requests, None)
    assert [answer_problem(a, r) for a, r in zip(answers, requests)] == [None] * 5


class NanForTwo(RanksBySimilarity, Model):
    """A similarity of nan for the text "two": compared with nan, nothing is higher, so its
    rank would read 1 (the best) were the score not checked."""
    name = "nan-for-two"

    def answer_similarity(self, requests, frames):
        return [Answer(score=math.nan if r.text == "two" else 0.5) for r in requests]


def test_ranks_built_from_a_nan_similarity_are_an_error():
    good, bad = (Request("rank", None, "", option_texts=texts, ask=(0,)) for texts in (("one", "three"),
                                                                                       ("one", "two")))
    answers = NanForTwo().answer_rank([good, bad], None)
    assert answers[0].meta["ranks"] == [2] and answers[0].error is None  # 0.5 ties 0.5 and ties lose: rank 2
    assert answers[1].error == "model error: nan-for-two.answer_similarity returned score nan, not a finite number"


class Counting(Model):
    name = "counting"

    def __init__(self):
        self.asked = 0

    def answer_similarity(self, requests, frames):
        self.asked += len(requests)
        return [Answer(score=float(len(r.text))) for r in requests]


def test_a_cached_answer_the_checks_refuse_is_asked_again(suite, tmp_path):
    """A cache written before answers were checked may hold a NaN stored as null: it is asked
    again, while a good cached answer is not."""
    config, cache = RunConfig("synth", "counting", data_dir=suite, protocol="similarity"), str(tmp_path / "cache")
    model = Counting()
    run(config, str(tmp_path / "first"), cache_dir=cache, model=model, progress=False)
    asked = model.asked
    assert asked > 0
    run(config, str(tmp_path / "cached"), cache_dir=cache, model=model, progress=False)
    assert model.asked == asked  # every answer came from the cache
    with sqlite3.connect(f"{cache}/{RESPONSES}") as db:
        rows = db.execute("SELECT key, value FROM responses").fetchall()
        for key, value in rows:
            stored = json.loads(value)
            stored["answer"]["score"] = None
            db.execute("UPDATE responses SET value = ? WHERE key = ?", (json.dumps(stored), key))
    assert len(rows) == asked
    run(config, str(tmp_path / "again"), cache_dir=cache, model=model, progress=False)
    assert model.asked == 2 * asked
    records = RunLog(str(tmp_path / "again")).read()
    assert records and all(r["answer"]["score"] == len(r["request"]["text"]) for r in records)
    origins = json.load(open(tmp_path / "again" / "run.json"))["origins"]
    assert origins == {"benchmark": {"name": "synth", "from": "built-in"},
                       "model": {"name": "counting", "from": "given", "class": f"{__name__}.Counting"}}


class Rambling(Model):
    name = "rambling"

    def answer_choice(self, requests, frames):
        return [Answer(raw="hard to say") for _ in requests]


class FloatJudge(Model):
    name = "float-judge"

    def answer_generation(self, requests, frames):
        return [0.0 for _ in requests]


def test_a_judge_answering_floats_leaves_the_answers_unparsed(suite, tmp_path, monkeypatch):
    monkeypatch.setitem(MODELS, "float-judge", ModelLoader("float-judge", lambda *given: FloatJudge(), "floats"))
    config = RunConfig("synth", "rambling", data_dir=suite, protocol="choice", judge="float-judge", limit=2)
    report = run(config, str(tmp_path / "run"), cache_dir=str(tmp_path / "cache"), model=Rambling(), progress=False)
    records = RunLog(str(tmp_path / "run")).read()
    assert records and report.parse_failures == len(records)
    assert {r["judge"]["error"] for r in records} == {
        "judge error: float-judge.answer_generation returned a float, not an Answer"}
    origins = json.load(open(tmp_path / "run" / "run.json"))["origins"]
    assert origins["judge"] == {"name": "float-judge", "from": "registered"}
