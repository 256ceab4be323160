"""Property-based: whatever a model writes or an annotation file holds, the parser returns a
reading or a parse failure and a loader returns items or a one-line error naming file and
field; no exception escapes."""
import json
import os
import tempfile

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from timefoil.benchmarks import DataError, get_benchmark
from timefoil.measures.parsing import conclusion, parse_choice, parse_yes_no

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ODD = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True),
                st.text(max_size=30), st.just(""), st.just("x" * 100_000), st.lists(st.text(max_size=5), max_size=3),
                st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=4), st.integers(), max_size=2))


@SETTINGS
@given(st.text(max_size=400), st.lists(st.text(max_size=40), max_size=5))
def test_parsers_read_or_fail_never_raise(raw, option_texts):
    labels = [chr(65 + i) for i in range(max(2, len(option_texts)))]
    for parsed in (parse_choice(raw, labels, option_texts), parse_yes_no(raw), parse_choice(conclusion(raw), labels)):
        assert parsed.ok == (parsed.status == "ok")  # a value exactly when the parser says it read one
        assert parsed.status in ("ok", "empty", "ambiguous", "unparseable")
        if parsed.ok and parsed.value not in ("yes", "no"):
            assert parsed.value in labels


def _loads_or_names(benchmark, root, path, field, extra=(), **options):
    """``extra``: other fields of the record, which a refusal may name instead."""
    try:
        items = get_benchmark(benchmark).load(root, **options)
    except DataError as exc:
        message = str(exc)
        assert "\n" not in message and path in message, message
        # a name is shown as written, or escaped (a control character), possibly with a path after it
        named = any(name in message or repr(name)[1:-1] in message for name in (field, *extra))
        assert named or "expected" in message or "video path" in message, message
        return None
    return items


def _mutated(base: dict, field: str, value) -> dict:
    record = dict(base)
    if value is _MISSING:
        record.pop(field, None)
    else:
        record[field] = value
    return record


_MISSING = object()
VALUE = st.one_of(ODD, st.just(_MISSING))


@SETTINGS
@given(st.sampled_from(["src_dataset", "video_name", "caption", "counterfactual"]), VALUE,
       st.dictionaries(st.text(min_size=1, max_size=6), ODD, max_size=2))
def test_vitatecs_records(field, value, extra):
    base = {"src_dataset": "MSRVTT", "video_name": "video1.mp4", "caption": "a man runs",
            "counterfactual": "a man walks"}
    with tempfile.TemporaryDirectory() as root:
        for aspect in ("Direction", "Intensity", "Sequence", "Localization", "Compositionality", "Type"):
            with open(os.path.join(root, f"{aspect}.jsonl"), "w") as handle:
                handle.write(json.dumps({**extra, **_mutated(base, field, value)}) + "\n")
        items = _loads_or_names("vitatecs", root, os.path.join(root, "Direction.jsonl"), field, extra)
        if items is not None:
            assert all(isinstance(t, str) and t.strip() for i in items for t in i.texts)


@SETTINGS
@given(st.sampled_from(["test_name", "video_id", "pos", "neg"]), VALUE)
def test_velociti_records(field, value):
    base = {"test_name": "chrono", "video_id": "v_abc_seg_0_10", "pos": "a then b", "neg": "b then a"}
    with tempfile.TemporaryDirectory() as root:
        path = os.path.join(root, "velociti.jsonl")
        with open(path, "w") as handle:
            handle.write(json.dumps(_mutated(base, field, value)) + "\n")
        items = _loads_or_names("velociti", root, path, field)
        if items is not None:
            assert len(items) == 1 and all(isinstance(t, str) for t in items[0].texts)


@SETTINGS
@given(st.sampled_from(["caption", "foils", "start_time", "end_time", "video_file", "time_unit"]), VALUE)
def test_vilma_records(field, value):
    base = {"dataset": "QUVA", "video_file": "clip", "start_time": 1.0, "end_time": 3.0, "time_unit": "sec",
            "caption": "he jumps three times", "foils": ["he jumps five times"], "mturk": {"caption": 3},
            "proficiency": {"caption": "he jumps", "foils": ["he sits"], "human": {"caption": 1}}}
    with tempfile.TemporaryDirectory() as root:
        path = os.path.join(root, "relations.json")
        with open(path, "w") as handle:
            json.dump({"k1": _mutated(base, field, value)}, handle)
        items = _loads_or_names("vilma", root, path, field)
        if items is not None:
            main = [i for i in items if not i.is_proficiency]
            assert all(len(i.texts) >= 2 and all(isinstance(t, str) and t for t in i.texts) for i in main)
            start, end = main[0].videos[0].start, main[0].videos[0].end
            assert start is None or end is None or start < end


@SETTINGS
@given(st.sampled_from(["question", "GT", "video_name", "dataset", "category", "idx"]), VALUE)
def test_temporalbench_records(field, value):
    base = {"idx": "q1", "video_name": "v.mp4", "category": "order", "dataset": "COIN", "GT": "A",
            "question": "Which caption?\nA. he runs then sits\nB. he sits then runs\nAnswer with the letter."}
    with tempfile.TemporaryDirectory() as root:
        path = os.path.join(root, "temporalbench_short_qa.json")
        with open(path, "w") as handle:
            json.dump([_mutated(base, field, value)], handle)
        _loads_or_names("temporalbench", root, path, field)
