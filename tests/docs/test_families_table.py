"""docs/models.md's table of video architectures is the one tests/reference/families_table.py
writes from the installed transformers and the committed live-check results: an architecture a
new transformers adds cannot go unlisted, no row claims more than the check found, and every
architecture refused at load says so with the reason it is refused in."""
import json
import os
import sys

import pytest

pytest.importorskip("transformers")

from helpers import REPO  # noqa: E402

sys.path.insert(0, os.path.join(REPO, "tests", "reference"))
import families_table  # noqa: E402


@pytest.fixture(scope="module")
def table():
    return families_table.table()


def rows_of(table: str) -> dict:
    return {line.split("`")[1]: line for line in table.splitlines() if line.startswith("| `")}


def test_the_committed_table_is_the_scripts_output(table):
    text = open(os.path.join(REPO, "docs", "models.md")).read()
    start = text.index(families_table.BEGIN)
    end = text.index(families_table.END) + len(families_table.END)
    assert text[start:end] == table, "run: PYTHONPATH=src python tests/reference/families_table.py"


def test_every_architecture_of_the_release_has_a_row(table):
    """Every architecture with a video processor and every one transformers loads as an
    image-text-to-text or multimodal LM (glm4v_moe and diffusion_gemma have no video processor of
    their own: they name Glm4vProcessor's and Gemma4Processor's)."""
    from transformers.models.auto.video_processing_auto import VIDEO_PROCESSOR_MAPPING_NAMES

    from timefoil.models.local.hf_loading import language_model_types

    named = rows_of(table)
    assert set(VIDEO_PROCESSOR_MAPPING_NAMES) | language_model_types() <= set(named)
    assert len(named) == len(table.splitlines()) - 4  # one row each: markers, header and rule aside
    assert {"glm4v_moe", "diffusion_gemma"} <= set(named)


def test_each_refusal_at_load_is_a_refused_row(table):
    from timefoil.models.local.hf_open import why_refused

    named = rows_of(table)
    assert named["diffusion_gemma"].startswith("| `diffusion_gemma` | refused: its generation is block diffusion")
    assert named["minimax_m3_vl"].startswith("| `minimax_m3_vl` | refused: its processor never resizes video frames")
    assert named["florence2"].startswith("| `florence2` | refused: an encoder-decoder")
    assert named["qwen2_audio"].startswith("| `qwen2_audio` | refused: its processor takes no images or video")
    for model_type, line in named.items():
        if why_refused(model_type):
            assert f"| refused: {why_refused(model_type)} |" in line


def test_a_verified_row_is_one_the_live_check_passed(table):
    results = json.load(open(families_table.RESULTS)) if os.path.exists(families_table.RESULTS) else {}
    for line in table.splitlines():
        if "its own processor" in line:
            model_type = line.split("`")[1]
            assert ("0 errors" in line) == (results.get(model_type, {}).get("status") == "runs")


def test_a_processor_whose_backend_is_missing_is_read_from_its_own_module(table):
    """Voxtral Realtime's processor needs mistral-common to run; without it transformers' top-level
    name is a placeholder whose parts cannot be read. Its own module names them: a feature
    extractor and a tokenizer, no image or video processor, so it is refused as a speech model,
    not listed as an open path that shows frames."""
    named = rows_of(table)  # the table is this transformers release's (held to it above): Voxtral Realtime is in it
    assert "voxtral_realtime" in named
    assert families_table.processor_parts("voxtral_realtime") == {"feature_extractor", "tokenizer"}
    assert named["voxtral_realtime"].startswith("| `voxtral_realtime` | refused: its processor takes no images or "
                                                "video")
