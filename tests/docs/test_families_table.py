"""docs/models.md's table of video architectures is the one tests/reference/families_table.py
writes from the installed transformers and the committed live-check results: an architecture a
new transformers adds cannot go unlisted, and no row claims more than the check found."""
import json
import os
import sys

import pytest

pytest.importorskip("transformers")

from helpers import REPO  # noqa: E402

sys.path.insert(0, os.path.join(REPO, "tests", "reference"))
import families_table  # noqa: E402


def test_the_committed_table_is_the_scripts_output():
    text = open(os.path.join(REPO, "docs", "models.md")).read()
    start = text.index(families_table.BEGIN)
    end = text.index(families_table.END) + len(families_table.END)
    assert text[start:end] == families_table.table(), "run: PYTHONPATH=src python tests/reference/families_table.py"


def test_every_architecture_with_a_video_processor_has_a_row():
    from transformers.models.auto.video_processing_auto import VIDEO_PROCESSOR_MAPPING_NAMES

    rows = families_table.table().splitlines()
    named = {line.split("`")[1] for line in rows if line.startswith("| `")}
    assert set(VIDEO_PROCESSOR_MAPPING_NAMES) <= named
    assert len(named) == len(rows) - 4  # one row each: markers, header and rule aside


def test_a_verified_row_is_one_the_live_check_passed():
    results = json.load(open(families_table.RESULTS)) if os.path.exists(families_table.RESULTS) else {}
    for line in families_table.table().splitlines():
        if "its own processor" in line:
            model_type = line.split("`")[1]
            assert ("0 errors" in line) == (results.get(model_type, {}).get("status") == "runs")
