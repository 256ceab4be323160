"""Progress as a log and a terminal see it: everything on stderr (stdout keeps the tables), a
line per interval with the count, share, rate and time left, and one as the benchmark ends."""
import re

from timefoil.execution.progress import _duration, progress


def test_lines_say_count_share_rate_and_eta_then_a_last_line(capsys, monkeypatch):
    monkeypatch.setenv("TIMEFOIL_PROGRESS_SECONDS", "0")
    with progress("lines", 1200, 800, "velociti · entailment") as advance:
        for _ in range(3):
            advance(400)
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert out == "" and lines[0] == "velociti · entailment: resuming, 800 answers kept, 1,200 to ask"
    assert [re.sub(r" · [\d,.]+ req/s", "", line).split(" · eta")[0] for line in lines[1:4]] == [
        "velociti · entailment: 1,200 / 2,000 (60%)", "velociti · entailment: 1,600 / 2,000 (80%)",
        "velociti · entailment: 2,000 / 2,000 (100%)"]
    assert " · eta " in lines[1] and " · eta " not in lines[3]  # nothing left: no time left to say
    assert re.fullmatch(r"velociti · entailment: 2,000 / 2,000 \(100%\) · [\d,.]+ req/s · done in \d+ s", lines[4])


def test_the_bar_is_drawn_on_stderr_and_leaves_a_last_line(capsys):
    with progress("bar", 3, 0, "vilma · choice") as advance:
        advance(3)
    out, err = capsys.readouterr()
    assert out == ""
    assert re.fullmatch(r"vilma · choice: 3 / 3 \(100%\) · [\d,.]+ req/s · done in \d+ s", err.splitlines()[-1])


def test_a_benchmark_with_nothing_left_still_says_it_ended(capsys):
    with progress("lines", 0, 5, "vinoground · choice"):
        pass
    assert capsys.readouterr().err.splitlines()[-1].startswith("vinoground · choice: 5 / 5 (100%) · done in ")


def test_durations_read_at_a_glance():
    assert [_duration(s) for s in (0.4, 45, 89, 90, 480, 3570, 7100, 7500)] == [
        "0 s", "45 s", "89 s", "2 min", "8 min", "1 h 00 min", "1 h 58 min", "2 h 05 min"]
