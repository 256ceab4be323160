"""The five papers with a served chat model (the local fake OpenAI-compatible server), and run
all as a log sees it (stderr to a file): a line as the model loads, progress lines per benchmark,
and a finished rerun that loads nothing."""
import json
import os
import re
import subprocess
import sys

import pytest
from click.testing import CliRunner

from benchmark_files import PAPER_NAMES, five_benchmarks
from timefoil.cli import main


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return five_benchmarks(tmp_path_factory.mktemp("papers"))


def test_a_chat_model_runs_all_five_with_a_protocol_it_answers_said_in_one_line_each(data, tmp_path, monkeypatch):
    pytest.importorskip("httpx")
    from provider_fakes import FakeServer

    server = FakeServer(failure_rate=0.0)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # the local server takes none
    spec = f"openai:m@{server.url}"
    try:
        done = CliRunner().invoke(main, ["run", "all", "--model", spec, "--data-root", data, "--out",
                                         str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache"),
                                         "--no-progress"])
    finally:
        server.close()
    assert done.exit_code == 0, done.output
    folders = sorted(f for f in os.listdir(tmp_path / "out") if os.path.isdir(tmp_path / "out" / f))
    assert folders == ["temporalbench-choice", "velociti-entailment", "vilma-choice", "vinoground-choice",
                       "vitatecs-choice"]
    chosen = [line for line in done.output.splitlines() if "(--bench-arg" in line]
    assert chosen == [f"timefoil: {name}: {spec} answers no similarity requests (similarity, the default): asking "
                      f"choice in both option orders (--bench-arg {name}.protocol= decides)"
                      for name in ("vitatecs", "vilma")]
    for folder in folders:
        with open(tmp_path / "out" / folder / "run.json", encoding="utf-8") as handle:
            config = json.load(handle)["config"]
        with open(tmp_path / "out" / folder / "items.jsonl", encoding="utf-8") as handle:
            records = [json.loads(line) for line in handle]
        assert records and not any(r["answer"]["error"] for r in records), folder
        if folder in ("vitatecs-choice", "vilma-choice"):  # both option orders: each item asked twice
            assert config["order_policy"] == "both"
            assert len(records) == 2 * len({r["item"]["id"] for r in records})
    assert server.calls == sum(1 for _ in open_records(tmp_path / "out"))  # one call per request, none failed


def open_records(out):
    for folder in os.listdir(out):
        path = out / folder / "items.jsonl"
        if path.exists():
            yield from path.read_text().splitlines()


def test_run_all_with_stderr_to_a_file_writes_a_load_line_and_progress_per_benchmark(data, tmp_path):
    command = [sys.executable, "-m", "timefoil.cli", "run", "all", "--model", "random", "--data-root", data, "--out",
               str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache")]
    env = {**os.environ, "TIMEFOIL_THREADS": "1"}
    with open(tmp_path / "log", "w") as log:
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=log, text=True, timeout=300, env=env)
    assert done.returncode == 0
    lines = (tmp_path / "log").read_text().splitlines()
    assert lines[0] == "loading random" and re.fullmatch(r"loaded random in \d+\.\d s", lines[1])
    ended = [line for line in lines if " (100%) · " in line and " · done in " in line]
    assert [line.split(":")[0] for line in ended] == [
        "vinoground · choice", "temporalbench · choice", "vitatecs · similarity", "velociti · entailment",
        "vilma · similarity"]
    for line in ended:
        answered, whole = re.search(r": ([\d,]+) / ([\d,]+) \(100%\)", line).groups()
        assert answered == whole and int(whole.replace(",", "")) > 0
    assert "card: " in done.stdout and "loading" not in done.stdout  # the tables alone on stdout
    with open(tmp_path / "log2", "w") as log:  # finished: nothing to ask, so no model is loaded
        again = subprocess.run(command, stdout=subprocess.PIPE, stderr=log, text=True, timeout=300, env=env)
    assert again.returncode == 0 and (tmp_path / "log2").read_text() == ""
    assert again.stdout[again.stdout.index("card: "):] == done.stdout[done.stdout.index("card: "):]
    assert sorted(PAPER_NAMES) == sorted(f.split("-")[0] for f in os.listdir(tmp_path / "out") if "-" in f)
