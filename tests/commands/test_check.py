"""score and check on a damaged run: corrupt lines and double answers are counted and named."""
import json
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
