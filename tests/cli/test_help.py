"""Help that points the way: whole command summaries at any width, and run --help naming the
benchmarks, the model forms and where the rest is listed."""
import pytest
from click.testing import CliRunner

from timefoil.benchmarks import BENCHMARKS
from timefoil.cli import main
from timefoil.cli.app import first_sentence


@pytest.mark.parametrize("width", [80, 120])
def test_every_command_summary_is_whole(width):
    shown = CliRunner().invoke(main, ["--help"], terminal_width=width).output
    commands = shown[shown.index("Commands:"):]
    assert "..." not in commands and "…" not in commands
    flat = " ".join(shown.split())
    for name, command in main.commands.items():
        assert f"{name} {first_sentence(command.help)}" in flat, name


def test_first_sentence_stops_at_a_sentence_not_an_abbreviation():
    assert first_sentence("Show it (e.g. the cache). Then more.\n\nDetails.") == "Show it (e.g. the cache)."
    assert first_sentence("No full stop at all") == "No full stop at all"


def test_run_help_names_benchmarks_model_forms_and_timefoil_list():
    flat = " ".join(CliRunner().invoke(main, ["run", "--help"], terminal_width=100).output.split())
    built_in = [name for name in BENCHMARKS if BENCHMARKS.origin(name)["from"] == "built-in"]  # tests add others
    assert len(built_in) >= 7 and all(name in flat for name in built_in)
    for form in ("hf:<hub id or folder>", "clip:<hub id or folder>", "openai:<model>@<url>", "gemini:<model>",
                 "anthropic:<model>", "blind-lm", "bag-of-frames", "timefoil list", "--data-root"):
        assert form in flat, form
