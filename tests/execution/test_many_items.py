"""Loading, planning and inspecting many items: what was made faster gives what the slower
way gave (the speed itself is measured by bench/scale.py, not here)."""
import gc
import json
from dataclasses import asdict

import pytest

from timefoil.benchmarks.base import DataError
from timefoil.benchmarks.reading import _StrictDecoder, parse_json
from timefoil.core.bulk import no_cycle_passes
from timefoil.models.requests import Answer
from timefoil.video import Sampling


@pytest.mark.parametrize("sampling", [Sampling(), Sampling(frames=None, fps=2.0, max_frames=None, resize=(64, 48)),
                                      Sampling(frames=4, strategy="endpoints", order="reversed", single_frame=True,
                                               seed=3)])
def test_a_sampling_s_stored_form_is_every_field_as_asdict_gives_it(sampling):
    expected = {**asdict(sampling), "resize": list(sampling.resize) if sampling.resize else None}
    assert sampling.to_json() == expected and list(sampling.to_json()) == list(expected)


def test_an_answer_s_stored_form_is_asdict_s_and_a_copy():
    answer = Answer(raw="Yes", score=0.5, probs={"yes": 0.7, "no": 0.2}, error=None, latency=0.1,
                    meta={"ranks": [1, 2], "why": {"a": [3]}})
    stored = answer.to_json()
    assert stored == asdict(answer) and list(stored) == list(asdict(answer))
    stored["probs"]["yes"], stored["meta"]["why"]["a"][0] = 0.0, 9  # a record's copy, not the answer's
    assert answer.probs["yes"] == 0.7 and answer.meta["why"]["a"] == [3]
    assert Answer().to_json() == asdict(Answer())


@pytest.mark.parametrize("text", [
    '{"id": "a", "texts": ["x", "y"], "target": 0, "metadata": {"n": 12345678901234567890, "f": 1.5e3}}',
    '[1, 2.5, "\\u00e9", null, true, {"a": [{}]}]', '  "plain"  ', "1e999", "-0", '{"a": "\\ud800"}',
    '{"": {"": []}}', "[" * 32 + "]" * 32])
def test_the_fast_parse_reads_what_the_strict_parser_reads(text):
    strict = _StrictDecoder().decode(text)
    fast = parse_json(text, "f")
    assert json.dumps(fast) == json.dumps(strict) and type(fast) is type(strict)


@pytest.mark.parametrize("text, says", [
    ('{"id": "a", "id": "b"}', "key 'id' appears twice in one object at column 1"),
    ('{"a": {"b": 1, "b": 2}}', "key 'b' appears twice in one object at column 7"),
    ("[" * 33 + "]" * 33, "nested deeper than 32 levels at column 33"),
    ('{"n": ' + "9" * 1001 + "}", "an integer of 1001 digits at column 7"),
    ('{"a": 1} x', "extra data after the value at column 10"),
    ('{"a": 1,}', "Expecting property name enclosed in double quotes at column 9")])
def test_what_the_fast_parse_refuses_is_placed_by_the_strict_one(text, says):
    with pytest.raises(DataError) as refused:
        parse_json(text, "f.jsonl", 4)
    assert str(refused.value) == f"f.jsonl: line 4: not valid JSON ({says})"


def test_cycle_passes_pause_inside_the_block_and_come_back_after_it():
    assert gc.isenabled()
    with no_cycle_passes():
        assert not gc.isenabled()
        with no_cycle_passes():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the inner block leaves the outer's pause alone
    assert gc.isenabled()
    with pytest.raises(KeyError):
        with no_cycle_passes():
            raise KeyError("x")
    assert gc.isenabled()
