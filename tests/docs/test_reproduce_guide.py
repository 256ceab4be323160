"""Every command of docs/reproduce.md parses as the command line would parse it, and names a
benchmark, protocol, prompt variant, loader option and model family that exist."""
import os
import re
import shlex

import click
import pytest

from timefoil.benchmarks import BENCHMARKS
from timefoil.cli import frames_list, main
from timefoil.models import check_model_spec
from timefoil.core.options import typed_options
from helpers import REPO

GUIDE = os.path.join(REPO, "docs", "reproduce.md")
PAPERS = ("Vinoground", "TemporalBench", "VITATECS", "VELOCITI", "ViLMA")
# loader options whose values are names: the names each loader accepts
NAMED_VALUES = {("temporalbench", "subset"): {"short_qa", "long_qa", "caption"},
                ("temporalbench", "format"): {"binary", "multichoice"},
                ("velociti", "subset"): {"paper"}, ("vinoground", "concatenated"): {"built", "published"}}


def guide_commands() -> list[tuple[str, str]]:
    """(section, command line) for each `timefoil` line of the guide's bash blocks."""
    section, in_block, found = "", False, []
    with open(GUIDE, encoding="utf-8") as handle:
        for line in handle:
            if line.startswith("## "):
                section = line[3:].strip()
            elif line.startswith("```"):
                in_block = line.strip() == "```bash"
            elif in_block and line.strip():
                assert line.startswith("timefoil "), f"not a timefoil command: {line!r}"
                found.append((section, line.strip()))
    return found


COMMANDS = guide_commands()


def parse(argv: list[str]) -> click.Context:
    """The subcommand's context, exactly as `timefoil ARGV` would build it (types, choices,
    ranges, required options, paths that must exist)."""
    parent, group, rest = click.Context(main, info_name="timefoil"), main, list(argv)
    while isinstance(group, click.Group):  # `timefoil build run ...` goes one level further
        name, command, rest = group.resolve_command(parent, rest)
        if not isinstance(command, click.Group):
            return command.make_context(name, rest, parent=parent)
        parent, group = click.Context(command, info_name=name, parent=parent), command


def test_the_guide_has_commands_for_every_paper():
    sections = {section for section, _ in COMMANDS}
    assert set(PAPERS) <= sections
    for paper in PAPERS:
        verbs = {shlex.split(line)[1] for section, line in COMMANDS if section == paper}
        assert {"prepare", "run"} <= verbs, paper


@pytest.mark.parametrize("section, line", COMMANDS, ids=[f"{s}-{n}" for n, (s, _) in enumerate(COMMANDS)])
def test_each_command_parses_and_names_what_exists(section, line, tmp_path, monkeypatch):
    argv = shlex.split(line)[1:]
    monkeypatch.chdir(tmp_path)
    for token in argv:  # the run folders a later command reads, and the data folders
        if token.startswith(("runs/", "data/")):
            os.makedirs(token, exist_ok=True)
    context = parse(argv)
    params = context.params
    name = params.get("benchmark")
    if name is None:
        return  # report, score: their run folders parsed above
    assert name in BENCHMARKS
    bench = BENCHMARKS[name]
    assert name in section.lower()
    protocol = params.get("protocol") or bench.default_protocol
    assert protocol in bench.protocols
    bench.prompts_for(params.get("variant"), protocol)  # raises for a variant it lacks
    options = dict(arg.split("=", 1) for arg in params.get("bench_arg") or ())
    typed_options(bench.load, options, f"{name} option")
    for key, value in options.items():
        assert value in NAMED_VALUES.get((name, key), {value}), (key, value)
    for spec in (params.get("model_spec"), params.get("judge")):
        if spec:
            check_model_spec(spec)
    for arg in params.get("model_arg") or ():
        assert re.fullmatch(r"\w+=\S+", arg)
    frames_list(params.get("frames"))
    assert not (params.get("frames") and params.get("fps")), "--frames and --fps together are refused"


def test_the_checks_refuse_what_does_not_exist(tmp_path, monkeypatch):
    """The same checks on lines the guide must not hold: each one is refused."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(click.UsageError):
        parse(["run", "velociti", "--model", "random", "--data", "d", "--out", "o", "--fps8"])
    with pytest.raises(click.BadParameter):
        parse(["run", "velociti", "--model", "random", "--protocol", "strict", "--out", "o"])
    with pytest.raises(click.BadParameter):
        parse(["report", "runs/missing"])
    with pytest.raises(ValueError, match="no prompt variant"):
        BENCHMARKS["velociti"].prompts_for("gpt4o-frames")
    with pytest.raises(ValueError, match="unknown velociti option"):
        typed_options(BENCHMARKS["velociti"].load, {"subsets": "paper"}, "velociti option")
    with pytest.raises(ValueError, match="unknown model"):
        check_model_spec("llava:ov-7b")
