"""A run whose answers could not be read never looks like a score: a served model that answers a
letter to every Yes/No question (the fake OpenAI-compatible server, no log-probabilities) gets
"— (N / N unread)" in the tables and the card, "unread" on its progress line and in the HTML
verdict, its numbers kept beside the count in the JSON, and a last line naming the parse failures."""
import io
import json
import os

import pytest
from click.testing import CliRunner
from rich.console import Console

from benchmark_files import five_benchmarks
from timefoil.cli import main
from timefoil.measures.stats import MetricValue, unread_of, unread_words
from timefoil.reports.card import print_card
from timefoil.reports.report import load_scored


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return five_benchmarks(tmp_path_factory.mktemp("unread"))


def letters_to_yes_no(server):
    """Every question answered "A", without log-probabilities: a Yes/No question goes unread."""
    def script(handler, body, call):
        reply = server.reply(body)
        reply["choices"][0]["message"]["content"] = "A"
        reply["choices"][0].pop("logprobs", None)
        handler.send(200, json.dumps(reply).encode())
    return script


def test_a_served_run_whose_yes_no_answers_are_letters_is_shown_unread_everywhere(data, tmp_path, monkeypatch):
    pytest.importorskip("httpx")
    from provider_fakes import FakeServer

    server = FakeServer(failure_rate=0.0, logprobs=False)
    server.script = letters_to_yes_no(server)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    out = tmp_path / "run"
    try:  # progress on, stderr not a terminal: progress lines, as a log gets them
        done = CliRunner().invoke(main, ["run", "velociti", "--model", f"openai:m@{server.url}", "--data",
                                         os.path.join(data, "velociti"), "--out", str(out), "--cache-dir",
                                         str(tmp_path / "cache")])
    finally:
        server.close()
    assert done.exit_code == 0, done.output
    answers = len(open(out / "items.jsonl").read().splitlines())
    assert answers == server.calls and answers > 0  # one reply per request, every one a letter
    unread = f"— ({answers} / {answers} unread)"
    # the progress line's last: the count, and the word
    ended = [line for line in done.stderr.splitlines() if " · done in " in line]
    assert len(ended) == 1 and ended[0].endswith(f" · {answers} / {answers} answers unread"), ended
    # the tables: no number in the headline's place; the headline table's row carries the count
    assert unread in done.stdout
    headline = done.stdout[done.stdout.index("headline figures"):]
    assert unread in headline and "StrictVLE" in headline
    # the run's last line names the parse failures
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"answers that could not be read: velociti · entailment: {answers} of {answers} "
                           f"({answers} parse failures, 0 stopped)"), last

    card = io.StringIO()  # the card run all and report print: the count in the value's place, no ± nor chance
    print_card([load_scored(str(out))], Console(file=card, width=100, color_system=None), title="card")
    row = next(line for line in card.getvalue().splitlines() if "velociti · entailment" in line)
    assert row.rstrip().endswith(f"{unread}                        –"), card.getvalue()  # ±, chance: blank

    scored = json.loads(CliRunner().invoke(main, ["score", str(out), "--json"]).output)
    assert scored["parse_failures"] == scored["answers"] == answers
    strict = next(m for m in scored["metrics"] if m["name"] == scored["headline"][0])
    assert strict["value"] == 0.0 and strict["unread"] == {"answers_unread": answers, "answers": answers}
    assert not strict.get("mark")  # never marked below chance

    html = tmp_path / "report.html"
    shown = CliRunner().invoke(main, ["report", str(out), "--html", str(html), "--no-thumbnails"])
    assert shown.exit_code == 0, shown.output
    page = html.read_text()
    assert f"unread: {answers} of {answers} answers could not be read; no score" in page
    assert "below chance" not in page.split('<td class="verdict">', 1)[1].split("</tr>", 1)[0]


def test_the_threshold_is_more_than_half_of_the_answers():
    def metric(failures, stopped, answers):
        return MetricValue("overall/x", 25.0, 10, 50.0, (10.0, 40.0), 0.9,
                           {"parse_failures": failures, "stopped": stopped, "answers": answers})

    assert unread_of(metric(5, 0, 10)) is None  # half: still a number
    assert unread_of(metric(5, 1, 10)) == (6, 10)  # a stopped reply is unread too
    assert unread_of(metric(0, 0, 0)) is None  # no counts kept (an older report): a number
    assert unread_words((1234, 2000)) == "— (1,234 / 2,000 unread)"
    assert metric(6, 0, 10).to_json()["unread"] == {"answers_unread": 6, "answers": 10}
    assert metric(6, 0, 10).to_json()["value"] == 25.0  # the number kept beside the count
