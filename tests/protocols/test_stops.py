"""An answer that does not parse and ended at its token budget is counted as stopped (out of
tokens), not as a parse failure, whichever kind of model wrote it: a served model stores its
provider's finish reason, a local generative model (hf, the open path, the text LMs) stores
``"stopped": "max_tokens"``; one that ended at its end token or first line is a parse failure."""
import json

import pytest

from timefoil import RunConfig, run
from timefoil.models import Model
from timefoil.models.requests import Answer
from timefoil.models.stops import stopped
from timefoil.scoring import score_records

pytestmark = pytest.mark.suite(per_family=1, seed=3, families=("order",))

# (raw, meta) as each kind of model stores them, one per item of the suite's six
ANSWERS = [
    ("the man walks to the", {"stopped": "max_tokens", "new_tokens": 5}),  # local, out of tokens: stopped
    ("the man", {"stopped": "eos", "new_tokens": 2}),  # local, ended: a parse failure
    ("the man walks\n", {"stopped": "line", "new_tokens": 3}),  # local, first line ended: a parse failure
    ("The video first shows", {"attempts": 1, "finish_reason": "length"}),  # served, out of tokens: stopped
    ("Well, hard to say", {"attempts": 1, "finish_reason": "stop"}),  # served, ended: a parse failure
    # out of tokens, but it names B and goes on with its reason: decided, an answer
    ("B, since the man", {"stopped": "max_tokens", "new_tokens": 4}),
]


class Wordy(Model):
    name = "wordy"

    def answer_choice(self, requests, frames):
        return [Answer(raw="the man") for _ in requests]


def test_local_and_served_stops_read_alike():
    assert [stopped(meta) for _, meta in ANSWERS] == ["out of tokens", None, None, "out of tokens", None,
                                                      "out of tokens"]
    assert stopped({"stopped": "max_tokens", "finish_reason": "SAFETY"}) == "out of tokens"
    assert stopped({"finish_reason": "SAFETY"}) == "refused" and stopped(None) is None
    assert stopped({"stopped": "eos", "finish_reason": "length"}) == "out of tokens"
    # ended where a stop string sent with it matched, or may have (vLLM names the string; None: its end token)
    assert stopped({"finish_reason": "stop", "stop": ["\n"]}) == "cut at a stop"
    assert stopped({"finish_reason": "stop", "stop": ["\n"], "stop_reason": "\n"}) == "cut at a stop"
    assert stopped({"finish_reason": "stop", "stop": ["\n"], "stop_reason": None}) is None
    assert stopped({"finish_reason": "stop"}) is None and stopped({"finish_reason": "stop", "stop": []}) is None


def test_an_answer_out_of_its_budget_is_counted_as_stopped_for_every_kind_of_model(suite, tmp_path):
    """Six items, one request each, answered as in ANSWERS: items 1 and 4 ran out of tokens
    (2 stopped), items 2, 3 and 5 ended off format (3 parse failures), item 6 answered."""
    config = RunConfig("synth", "wordy", data_dir=suite, protocol="choice", blind=True)
    run(config, str(tmp_path / "run"), cache_dir=str(tmp_path / "cache"), model=Wordy(), progress=False)
    records = sorted((json.loads(line) for line in open(tmp_path / "run" / "items.jsonl")),
                     key=lambda r: r["item"]["id"])
    assert len(records) == len({r["item"]["id"] for r in records}) == len(ANSWERS)
    for record, (raw, meta) in zip(records, ANSWERS):
        record["answer"] = {**record["answer"], "raw": raw, "meta": meta}
    report = score_records(records, benchmark="synth", model="wordy", protocol="choice")
    said = report.to_json()
    assert (said["items"], said["parse_failures"], said["stopped"], said["errors"]) == (6, 3, 2, 0)
    assert (report.parse_failures, report.stopped) == (3, 2)
    accuracy = report.get("overall/accuracy")
    assert (accuracy.extra["parse_failures"], accuracy.extra["stopped"]) == (3, 2)
