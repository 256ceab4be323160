"""What every loader shares: videos stay inside the dataset, and bad annotations end in one line."""
import json
import os
import pytest
from timefoil.benchmarks import DataError, get_benchmark
from benchmark_files import (velociti_fixture)
from helpers import cli


# -- path safety -------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["../../etc/passwd", "/etc/passwd", "a/../../b.mp4"])
def test_video_paths_may_not_leave_the_dataset(tmp_path, name):
    root = velociti_fixture(tmp_path, [{"test_name": "chrono", "video_id": "x", "pos": "a", "neg": "b"}])
    row = {"src_dataset": "MSRVTT", "video_name": name, "caption": "a", "counterfactual": "b", "aspect": "Type"}
    for aspect in ("Direction", "Intensity", "Sequence", "Localization", "Compositionality", "Type"):
        (tmp_path / f"{aspect}.jsonl").write_text(json.dumps(row) + "\n")
    with pytest.raises(DataError, match="leaves the dataset directory"):
        get_benchmark("vitatecs").load(root)


def test_links_inside_the_dataset_folder_are_followed(tmp_path):
    """videos/ as a link to another disk is the usual layout; the annotation still may not name
    a path out of the folder (test above)."""
    elsewhere = tmp_path / "other-disk"
    elsewhere.mkdir()
    (elsewhere / "v.mp4").write_bytes(b"x")
    root = tmp_path / "data"
    root.mkdir()
    os.symlink(elsewhere, root / "videos")
    velociti_fixture(root, [{"test_name": "chrono", "video_id": "v", "pos": "a", "neg": "b"}])
    items = get_benchmark("velociti").load(str(root))
    assert os.path.realpath(items[0].videos[0].path) == str(elsewhere / "v.mp4")


VILMA_RECORD = {"dataset": "QUVA", "video_file": "clip", "start_time": 1.0, "end_time": 3.0, "time_unit": "sec",
                "caption": "he jumps three times", "foils": ["he jumps five times"], "mturk": {"caption": 3},
                "proficiency": {"caption": "he jumps", "foils": ["he sits"], "human": {"caption": 1}}}


@pytest.mark.parametrize("benchmark, field, value, says", [
    ("vilma", "foils", "a string", "field 'foils' must be a non-empty list of non-empty strings"),
    ("vilma", "start_time", "abc", "field 'start_time' must be a finite number"),
    ("vilma", "start_time", float("nan"), "field 'start_time' must be a finite number"),
    ("vilma", "end_time", float("inf"), "field 'end_time' must be a finite number"),
    ("vilma", "end_time", 0.5, "start_time (1.0) must come before end_time (0.5)"),
    ("vilma", "caption", "", "field 'caption' must be a non-empty string"),
    ("vitatecs", "caption", 42, "field 'caption' must be a non-empty string, found int 42"),
    ("velociti", "pos", ["a"], "field 'pos' must be a non-empty string"),
])
def test_bad_annotations_end_in_one_line_naming_file_record_and_field(tmp_path, benchmark, field, value, says):
    data = tmp_path / "data"  # the run goes beside the data, never into it
    data.mkdir()
    if benchmark == "vilma":
        path = data / "relations.json"
        path.write_text(json.dumps({"k1": {**VILMA_RECORD, field: value}}))
    elif benchmark == "vitatecs":
        row = {"src_dataset": "MSRVTT", "video_name": "v.mp4", "caption": "a", "counterfactual": "b"}
        for aspect in ("Direction", "Intensity", "Sequence", "Localization", "Compositionality", "Type"):
            (data / f"{aspect}.jsonl").write_text(json.dumps({**row, field: value}) + "\n")
        path = data / "Direction.jsonl"
    else:
        path = data / "velociti.jsonl"
        path.write_text(json.dumps({"test_name": "chrono", "video_id": "v", "pos": "a", "neg": "b", field: value})
                        + "\n")
    for command in (["inspect", benchmark, "--data", str(data)],
                    ["run", benchmark, "--model", "random", "--data", str(data), "--out", str(tmp_path / "r")]):
        result = cli(*command)
        lines = result.stderr.strip().splitlines()
        assert result.returncode == 1 and len(lines) == 1 and "Traceback" not in result.stderr
        assert str(path) in lines[0] and says in lines[0], lines[0]
    assert not os.path.exists(tmp_path / "r" / "items.jsonl")  # refused before any model ran
