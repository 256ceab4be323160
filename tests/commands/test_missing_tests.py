"""Partial data is said: inspect and run name the tests that are missing."""
import json
from benchmark_files import (velociti_fixture)


def test_partial_data_is_loud(tmp_path):
    from click.testing import CliRunner

    from timefoil.cli import main

    records = [{"test_name": "chrono", "video_id": "v", "pos": "a", "neg": "b"}]
    result = CliRunner().invoke(main, ["inspect", "velociti", "--data", velociti_fixture(tmp_path, records),
                                       "--json"])
    missing = json.loads(result.output)["missing_tests"]
    assert missing == ["control", "agent_random", "agent_bind", "coref", "action_adv", "action_manner",
                       "action_bind"]


def test_a_run_names_the_missing_tests(tmp_path):
    from click.testing import CliRunner

    from timefoil.cli import main

    records = [{"test_name": t, "video_id": "v", "pos": "a", "neg": "b"} for t in ("chrono", "agent_bind")]
    root = velociti_fixture(tmp_path / "data", records)
    result = CliRunner().invoke(main, ["run", "velociti", "--model", "random", "--data", root, "--out",
                                       str(tmp_path / "r"), "--cache-dir", str(tmp_path / "c"), "--no-progress"])
    assert result.exit_code == 3, result.output  # no videos: every item failed, and the exit code says so
    assert ("missing or empty tests: control, agent_random, coref, action_adv, action_manner, action_bind"
            in result.output)
