"""score and check on a damaged run: corrupt lines, double answers and fields edited by hand are counted and
named."""
import json

import pytest

from helpers import cli


def test_score_and_check_report_corrupt_lines_and_double_answers(tmp_path):
    from timefoil.synth import generate

    suite = str(tmp_path / "suite")
    generate(suite, per_family=1, seed=1)
    run_dir = tmp_path / "run"
    assert cli("run", "synth", "--model", "random", "--data", suite, "--out", str(run_dir), "--cache-dir",
               str(tmp_path / "c"), "--no-progress").returncode == 0
    ok = cli("check", str(run_dir))
    assert ok.returncode == 0 and "whole" in ok.stdout and "planned" in ok.stdout
    log = run_dir / "items.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    log.write_text("".join(lines[:3] + ["garbage {\n"] + lines[3:] + [lines[5]]))  # line 4 corrupt, one answered twice
    scored = json.loads(cli("score", str(run_dir), "--json").stdout)
    assert scored["corrupt_lines"] == [4]
    assert "corrupt lines in items.jsonl skipped: 4" in cli("score", str(run_dir)).stdout
    bad = cli("check", str(run_dir))
    assert bad.returncode == 1 and "items.jsonl line 4 is not a record" in bad.stdout
    assert f"{json.loads(lines[5])['id']} answered 2 times" in bad.stdout and "Traceback" not in bad.stderr


# One record as timefoil writes it (a similarity answer of the random model), and fields edited
# by hand: each is named, with its value and the kinds it may hold.
RECORD = {"id": "a1|opt1", "item": {"id": "a1", "group_id": "a", "benchmark": "items", "test": "order", "subtest": None,
                                    "role": "main", "categories": [], "target": 0, "n_options": 2,
                                    "options_are": "texts", "texts": ["x then y", "y then x"],
                                    "videos": [{"path": "/v/a.mp4", "start": None, "end": None}], "metadata": {}},
          "expected": 2, "request": {"kind": "similarity", "video": {"path": "/v/a.mp4", "start": None, "end": None},
                                     "text": "y then x", "labels": [], "option_texts": [], "caption": None,
                                     "system": None, "max_tokens": 16, "option": 1, "key": "6c6d90a9"},
          "answer": {"raw": None, "score": 0.72, "probs": None, "error": None, "latency": 3e-05, "meta": {}},
          "judge": None, "frames": {"n": 8, "degenerate": False, "decoded": "from the start; every frame"},
          "parsed": None}
GONE = object()  # the field removed


@pytest.mark.parametrize("field, value, says", [
    ("answer.raw", 5, "answer.raw is a number (5), not a string or null"),
    ("answer.raw", ["yes"], 'answer.raw is an array (["yes"]), not a string or null'),
    ("answer.raw", {"text": "yes"}, 'answer.raw is an object ({"text": "yes"}), not a string or null'),
    ("answer.raw", True, "answer.raw is true, not a string or null"),
    ("answer.error", 3, "answer.error is a number (3), not a string or null"),
    ("answer.score", "0.72", 'answer.score is a string ("0.72"), not a number or null'),
    ("answer.score", False, "answer.score is false, not a number or null"),
    ("answer.probs", [0.5], "answer.probs is an array ([0.5]), not an object or null"),
    ("answer.probs", {"A": "0.5"}, 'answer.probs.A is a string ("0.5"), not a number or null'),
    ("answer.latency", "fast", 'answer.latency is a string ("fast"), not a number or null'),
    ("answer.meta", "x", 'answer.meta is a string ("x"), not an object or null'),
    ("answer.meta", {"ranks": [1, "2"]}, 'answer.meta.ranks[1] is a string ("2"), not a whole number or null'),
    ("answer", "yes", 'answer is a string ("yes"), not an object'),
    ("id", 7, "id is a number (7), not a string"),
    ("expected", "2", 'expected is a string ("2"), not a whole number'),
    ("expected", 2.5, "expected is a number (2.5), not a whole number"),
    ("expected", GONE, "expected is missing"),
    ("item.id", None, "item.id is null, not a string"),
    ("item.group_id", GONE, "item.group_id is missing"),
    ("item.target", "0", 'item.target is a string ("0"), not a whole number'),
    ("item.texts", ["x then y", 2], "item.texts[1] is a number (2), not a string"),
    ("item.videos", [{"path": 3}], "item.videos[0].path is a number (3), not a string or null"),
    ("item.metadata", [], "item.metadata is an array ([]), not an object or null"),
    ("request.kind", None, "request.kind is null, not a string"),
    ("request.labels", "AB", 'request.labels is a string ("AB"), not an array'),
    ("request.max_tokens", 1.5, "request.max_tokens is a number (1.5), not a whole number"),
    ("request.option", "1", 'request.option is a string ("1"), not a whole number'),
    ("frames.n", "8", 'frames.n is a string ("8"), not a whole number'),
    ("frames.capped", {"asked": 9}, "frames.capped.max_frames is missing"),
    ("judge", "yes", 'judge is a string ("yes"), not an object or null'),
    ("parsed", {"value": 1, "status": 1}, "parsed.status is a number (1), not a string"),
])
def test_every_stored_field_is_read_by_its_kind_and_named_with_its_line(tmp_path, field, value, says):
    from timefoil.core.jsonfiles import UnreadableFile
    from timefoil.execution.store import RunLog

    record = json.loads(json.dumps(RECORD))
    *outer, last = field.split(".")
    inner = record
    for key in outer:
        inner = inner[key]
    if value is GONE:
        del inner[last]
    else:
        inner[last] = value
    (tmp_path / "items.jsonl").write_text(json.dumps(RECORD) + "\n" + json.dumps(record) + "\n")
    log = RunLog(str(tmp_path))
    with pytest.raises(UnreadableFile) as refused:
        log.read()
    assert str(refused.value) == (f"{tmp_path}/items.jsonl line 2: not a record timefoil wrote ({says}); correct or "
                                  f"remove that line (timefoil check {tmp_path} lists every such line)")
    assert log.read(strict=False) == [RECORD] and log.malformed == [(2, says)] and log.corrupt == []


def test_a_record_as_timefoil_writes_it_is_read_as_it_is(tmp_path):
    from timefoil.execution.store import RunLog

    (tmp_path / "items.jsonl").write_text(json.dumps(RECORD) + "\n")
    assert RunLog(str(tmp_path)).read() == [RECORD]
