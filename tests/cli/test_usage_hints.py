"""Usage errors name what to give: a benchmark run without its files names --data DIR and
--data-root DIR, and an option value that is neither one of its words nor an existing file names
the words it takes (exit 2, one line, nothing loaded)."""
from click.testing import CliRunner

from timefoil.cli import main


def run(*args):
    return CliRunner().invoke(main, ["run", *args, "--model", "random", "--no-progress"])


def last(done) -> str:
    return done.output.strip().splitlines()[-1]


def test_a_run_without_its_data_names_both_options(tmp_path):
    done = run("vinoground", "--out", str(tmp_path / "out"))
    assert done.exit_code == 2
    assert last(done) == ("Error: vinoground needs its files: --data DIR (the folder holding them) or --data-root DIR "
                          "(its folder DIR/vinoground, as timefoil prepare writes it)")
    missing = run("vinoground", "--data-root", str(tmp_path), "--out", str(tmp_path / "out"))
    assert missing.exit_code == 2
    assert last(missing) == (f"Error: --data-root {tmp_path} holds no vinoground folder; get it with: timefoil prepare "
                             f"vinoground --dest {tmp_path / 'vinoground'}, or give its files with --data DIR")
    assert not (tmp_path / "out").exists()


def test_an_option_value_that_is_neither_a_word_nor_a_file_names_the_words(tmp_path):
    done = run("velociti", "--data", str(tmp_path), "--bench-arg", "velociti.subset=papr", "--out", str(tmp_path / "o"))
    assert done.exit_code == 2
    assert last(done) == ("Error: --bench-arg velociti.subset=papr: velociti's subset takes paper, or a file of item "
                          "ids (a JSON list, or one per line); 'papr' is neither paper nor an existing file (did you "
                          "mean paper?)")
    words = run("vinoground", "--data", str(tmp_path), "--bench-arg", "concatenated=joined", "--out",
                str(tmp_path / "o"))
    assert words.exit_code == 2
    assert last(words) == ("Error: --bench-arg concatenated=joined: vinoground's concatenated takes built or "
                           "published; 'joined' is not built or published")
    # an existing file is taken as the file it may be: past the check, the loader reads it
    ids = tmp_path / "ids.txt"
    ids.write_text("x\n")
    taken = run("velociti", "--data", str(tmp_path), "--bench-arg", f"velociti.subset={ids}", "--out",
                str(tmp_path / "o"))
    assert taken.exit_code == 1 and "takes paper" not in taken.output
