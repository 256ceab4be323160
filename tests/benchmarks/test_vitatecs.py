"""VITATECS: loading its six aspect files, and its average over aspects."""
import glob
import json
import os
import pytest
from timefoil.benchmarks import get_benchmark
from benchmark_files import (score_by_length, vilma_dir,
                             vitatecs_dir)
from helpers import cli


# annotation files in the published formats, with made-up records (tests/benchmark_files.py)
VITATECS, VILMA = vitatecs_dir(), vilma_dir()


# -- VITATECS ----------------------------------------------------------------------------
def test_inspect_vitatecs_counts_every_line():
    expected = {os.path.basename(p)[:-6].lower(): sum(1 for line in open(p) if line.strip())
                for p in glob.glob(os.path.join(VITATECS, "*.jsonl"))}
    data = json.loads(cli("inspect", "vitatecs", "--data", VITATECS, "--json").stdout)
    assert data["counts"] == expected and data["total"] == sum(expected.values()) == 150
    assert data["chance"]["average accuracy"] == 50.0


def test_vitatecs_average_is_the_mean_of_aspects():
    items = get_benchmark("vitatecs").load(VITATECS)
    report = score_by_length("vitatecs", items)
    per_aspect = {}
    for path in glob.glob(os.path.join(VITATECS, "*.jsonl")):
        rows = [json.loads(line) for line in open(path) if line.strip()]
        per_aspect[rows[0]["aspect"].lower()] = 100 * sum(len(r["caption"]) > len(r["counterfactual"])
                                                          for r in rows) / len(rows)
    for aspect, value in per_aspect.items():
        assert report.get(f"{aspect}/accuracy").value == pytest.approx(value)
    assert report.get("overall/average accuracy").value == pytest.approx(sum(per_aspect.values()) / 6)


def test_vitatecs_keeps_duplicate_rows(tmp_path):
    row = {"src_dataset": "MSRVTT", "video_name": "video1.mp4", "caption": "a", "counterfactual": "b",
           "aspect": "Direction"}
    for aspect in ("Direction", "Intensity", "Sequence", "Localization", "Compositionality", "Type"):
        (tmp_path / f"{aspect}.jsonl").write_text((json.dumps(row) + "\n") * 2)
    assert len(get_benchmark("vitatecs").load(str(tmp_path))) == 12
