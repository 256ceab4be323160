"""timefoil ablate: the temporal-sensitivity runs as one table."""
import os


# -- ablations ----------------------------------------------------------------------------------
def test_ablate_an_order_blind_model_loses_nothing_to_shuffling(tmp_path):
    from click.testing import CliRunner

    from timefoil.cli import main
    from timefoil.synth import generate

    suite = str(tmp_path / "suite")
    generate(suite, per_family=2, seed=5)
    result = CliRunner().invoke(main, ["ablate", "synth", "--model", "bag-of-frames", "--data", suite, "--out",
                                       str(tmp_path / "ab"), "--cache-dir", str(tmp_path / "c"), "--frames", "2",
                                       "--html", str(tmp_path / "ab.html")])
    assert result.exit_code == 0, result.output
    rows = {line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:-1]]
            for line in result.output.splitlines() if line.count("│") > 3}
    assert {"full", "shuffled", "reversed", "single frame", "blind", "2 frames"} <= set(rows)
    for condition in ("shuffled", "reversed"):  # the same numbers, no item changed: p = 1
        assert rows[condition][:-2] == rows["full"][:-2] and rows[condition][-2:] == ["+0.0", "1"]
    assert "depends on frame order: full - shuffled = +0.0 points" in result.output
    assert sorted(os.listdir(tmp_path / "ab")) == ["2-frames", "blind", "full", "reversed", "shuffled",
                                                   "single-frame"]
    page = open(tmp_path / "ab.html", encoding="utf-8").read()
    assert "against frames" in page and "<svg" in page  # the sweep, drawn
