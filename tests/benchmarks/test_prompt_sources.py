"""Every prompt a variant says is a paper's or a released script's is that source's text, byte for
byte. The sources are kept in tests/data/prompts/: the papers' printed prompts as their text
renders them, and the released scripts' string literals as written, with the repository, commit,
file, line and the line's SHA-256."""
import ast
import hashlib
import json
import os
import re
import subprocess

import pytest
from click.testing import CliRunner

from timefoil.benchmarks import BENCHMARKS, get_benchmark
from timefoil.cli import main
from timefoil.protocols import OWN_WORDING, PlanContext, get_protocol
from timefoil.protocols.choice import JUDGE_TWO
from helpers import TESTS, cli

HERE = os.path.join(TESTS, "data", "prompts")


def source(name: str) -> str:
    with open(os.path.join(HERE, name), encoding="utf-8") as handle:
        return handle.read()


def released() -> dict[str, dict]:
    with open(os.path.join(HERE, "released.json"), encoding="utf-8") as handle:
        return {entry["prompt"]: entry for entry in json.load(handle)}


def literal(entry: dict) -> str:
    """The string a literal of the source denotes; an f-string's replacement fields stay as written."""
    text = entry["literal"]
    return ast.literal_eval(text[1:] if text.startswith("f") else text)


def from_rendering(block: str) -> str:
    """A prompt printed as a figure, as the paper's text renders it: one paragraph per line, the
    list labels the rendering doubles ("1. 1.") put back on their item, and the typeset
    placeholders as timefoil's fields."""
    text = re.sub(r"Caption\S*\{Caption\}italic_C italic_a italic_p italic_t italic_i italic_o italic_n",
                  "{caption}", block)
    text = re.sub(r"Caption\d\S*\{Caption_\{(\d)\}\}italic_C italic_a italic_p italic_t italic_i italic_o "
                  r"italic_n start_POSTSUBSCRIPT \d end_POSTSUBSCRIPT", r"{c\1}", text)
    lines = []
    for line in (line.strip() for line in text.splitlines()):
        if not line:
            continue
        if lines and re.fullmatch(r"(\d+)\. \1\.", lines[-1]):
            lines[-1] = f"{lines[-1].split()[0]} {line}"
        else:
            lines.append(line)
    return "\n".join(lines)


def figure_prompts(name: str) -> list[str]:
    """The prompts of a page of figures, in order: each starts after its "... Prompt" title."""
    blocks, current = [], None
    for line in source(name).splitlines():
        if line.strip() in ("Entailment Prompt", "MC Prompt"):
            current = []
            blocks.append(current)
        elif current is not None and not re.match(r"\\mdfsetup|middlelinewidth|Figure \d+:", line):
            current.append(line)
    return [from_rendering("\n".join(block)) for block in blocks]


# -- VELOCITI ------------------------------------------------------------------------------------
def test_velociti_default_closed_and_frames_are_the_papers_figures_15_and_16():
    bench = get_benchmark("velociti")
    entail15, choice15, entail16, choice16 = figure_prompts("velociti-paper-fig15-16.txt")
    assert bench.prompts.entailment == entail15 and bench.prompts.choice == choice15
    frames = bench.variants["frames"]
    assert frames.entailment == entail16 and frames.choice == choice16
    assert "Carefully watch the video frames and pay attention" in frames.entailment  # the word kept
    # closed models: Fig. 15 with the instruction that ends Fig. 16, on its own line
    assert bench.variants["closed"].entailment == entail15 + "\n" + entail16.splitlines()[-1]
    assert entail16.splitlines()[-1] == "Just answer with either Yes or No."


def test_velociti_cot_is_the_papers_figure_5():
    cot = get_benchmark("velociti").variants["cot"]
    assert from_rendering(source("velociti-paper-fig5.txt")) == "System Prompt\n" + cot.system + "\n" + \
        cot.entailment
    for tag in ("<<<thinking>>>", "<<</thinking>>>", "<<<reflection>>>", "<<</reflection>>>", "<<<output>>>",
                "<<</output>>>"):
        assert tag in cot.system
    assert cot.entailment == "Evaluate the following caption for the accompanying movie clip: {caption}"
    assert cot.protocols == ("entailment",) and cot.reasoning


def test_velociti_released_variants_are_the_evaluation_codes_literals():
    bench, sources = get_benchmark("velociti"), released()
    open_models, gemini = bench.variants["released"], bench.variants["released-gemini"]
    assert open_models.entailment == literal(sources["velociti released entailment"])
    assert open_models.entailment.endswith("entail the caption? Just answer with either Yes or No. ")
    for variant, name in ((open_models, "velociti released choice"), (gemini, "velociti released-gemini choice")):
        assert variant.choice == literal(sources[name]).replace("{cap1}", "{c1}").replace("{cap2}", "{c2}")
    assert gemini.entailment == literal(sources["velociti released-gemini entailment"]).replace("{cap}", "{caption}")
    assert open_models != bench.variants["closed"]  # the released code is not the paper's figure


# -- Vinoground ----------------------------------------------------------------------------------
def vinoground_paper() -> list[str]:
    """The prompts as the paper's text renders them, its line numbers and hyphen breaks removed."""
    lines = source("vinoground-paper.txt").splitlines()
    return [re.sub(r" \d{3} ", " ", re.sub(r"-\d{3} ", "", line)) for line in lines]


def test_vinoground_questions_suffix_and_judge_are_the_papers():
    text, video, cot, judge = vinoground_paper()
    bench = get_benchmark("vinoground")
    assert text == '"(video) ' + bench.prompts.choice.format(c1="{Caption 1}", c2="{Caption 2}") + '".'
    assert video == r"$\langle video \rangle$ " + bench.prompts.video_choice.replace("{caption}", "{Caption}") + '"'
    assert cot == '"' + bench.variants["cot"].suffix.removeprefix("\n") + '"'
    # the judge: the words either side of the model's response as printed; the rendering turns the
    # line breaks around "====<MODEL RESPONSE>====" into "$n" and "\langle n"
    before, response, after = JUDGE_TWO.split("\n")
    assert judge == '"' + before + r" $n===\langle MODEL RESPONSE \rangle ==== \langle n" + after + '"'
    assert response == "====<MODEL RESPONSE>===="


@pytest.mark.parametrize("variant, prefix, suffix", [
    ("released-llava-onevision", None, "vinoground released-llava-onevision suffix"),
    ("released-phi", None, "vinoground released-phi suffix"),
    ("released-minicpm", None, "vinoground released-minicpm suffix"),
    ("released-videollama", None, "vinoground released-videollama suffix"),
    ("released-ma-lmm", "vinoground released-ma-lmm prefix", "vinoground released-ma-lmm suffix"),
    ("released-qwen", None, None),
])
def test_vinoground_released_variants_wrap_the_questions_as_the_scripts_do(variant, prefix, suffix):
    bench, sources = get_benchmark("vinoground"), released()
    prompts = bench.variants[variant]
    assert prompts.prefix == (literal(sources[prefix]) if prefix else "")
    assert prompts.suffix == (literal(sources[suffix]) if suffix else "")
    assert (prompts.choice, prompts.video_choice) == (bench.prompts.choice, bench.prompts.video_choice)


# -- VITATECS and TemporalBench ------------------------------------------------------------------
def test_vitatecs_prompts_are_the_papers_table_11():
    prompts = get_benchmark("vitatecs").prompts
    shown = prompts.choice.replace("{d1}", "[description 1]").replace("{d2}", "[description 2]")
    assert source("vitatecs-paper-table11.txt") == f"System: {prompts.system} User: [VideoHere] {shown}\n"


def test_temporalbench_gpt4o_variant_is_the_scripts_system_and_lead_in():
    bench, sources = get_benchmark("temporalbench"), released()
    gpt = bench.variants["released-gpt-4o"]
    assert gpt.system == literal(sources["temporalbench released-gpt-4o system"])
    assert gpt.prefix + "{question}" == literal(sources["temporalbench released-gpt-4o prefix"])
    assert bench.variants["released-llava-onevision"].prefix == "" and gpt.protocols == ("choice", "generation")


def test_released_literals_are_the_lines_of_the_repositories():
    """With local clones (TIMEFOIL_PROMPT_SOURCES: a folder of <owner>+<name>/repo git folders),
    each kept literal is checked against its line at the recorded commit."""
    mirrors = os.environ.get("TIMEFOIL_PROMPT_SOURCES")
    if not mirrors:
        pytest.skip("set TIMEFOIL_PROMPT_SOURCES to check the kept lines against the repositories")
    for entry in released().values():
        git_dir = os.path.join(mirrors, entry["repo"].replace("/", "+"), "repo")
        text = subprocess.run(["git", "--git-dir", git_dir, "show", f"{entry['commit']}:{entry['path']}"],
                              capture_output=True, text=True, timeout=30, check=True).stdout
        line = text.splitlines()[entry["line"] - 1]
        assert hashlib.sha256(line.encode()).hexdigest() == entry["line_sha256"]
        assert entry["literal"] in line


# -- variants chosen, asked, listed and reported -------------------------------------------------
def velociti_folder(tmp_path):
    (tmp_path / "data").mkdir()  # apart from the run directory, which may not lie inside its data
    with open(tmp_path / "data" / "velociti.jsonl", "w") as handle:
        handle.write(json.dumps({"test_name": "chrono", "video_id": "v1", "pos": "he sits then runs",
                                 "neg": "he runs then sits"}) + "\n")
    return str(tmp_path / "data")


@pytest.mark.parametrize("variant, protocol, expected", [
    ("released", "entailment", "Carefully watch the video and pay attention to the sequence of events, the details and "
     "actions of persons.\nHere is a caption that describes the video: he sits then runs\nBased on your observation, "
     "does the given video entail the caption? Just answer with either Yes or No. "),
    ("frames", "choice", "You are given frames sampled sequentially from a video. Carefully watch the video frames "
     "and pay attention to the sequence of events, the details and actions of persons.\nHere are two captions that "
     "describe the video.\nA) he sits then runs\nB) he runs then sits\nBased on your observation, select the caption "
     "that best describes the video.\nJust print either A or B."),
])
def test_the_variant_chosen_on_the_command_line_is_what_the_model_is_asked(tmp_path, variant, protocol, expected):
    data = velociti_folder(tmp_path)
    done = cli("run", "velociti", "--model", "random", "--data", data, "--blind", "--protocol", protocol,
                   "--variant", variant, "--out", str(tmp_path / "run"), "--cache-dir", str(tmp_path / "cache"),
                   "--no-progress")
    assert done.returncode == 0, done.stderr
    with open(tmp_path / "run" / "items.jsonl", encoding="utf-8") as handle:
        asked = [json.loads(line)["request"]["text"] for line in handle]
    assert expected in asked
    with open(tmp_path / "run" / "run.json", encoding="utf-8") as handle:
        assert json.load(handle)["prompts"] == get_benchmark("velociti").variants[variant].source
    assert f"random · blind · {variant}" in done.stdout and OWN_WORDING not in done.stdout


def test_a_variant_for_another_protocol_is_refused_before_anything_runs(tmp_path):
    done = cli("run", "velociti", "--model", "random", "--data", velociti_folder(tmp_path), "--blind",
                   "--protocol", "choice", "--variant", "cot", "--out", str(tmp_path / "run"))
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1] == \
        "Error: velociti's prompt variant 'cot' is written for the entailment protocol, not choice"
    assert not os.path.exists(tmp_path / "run")


def test_own_wording_is_labelled_in_the_report(tmp_path):
    from timefoil.reports.report import load_scored

    data = velociti_folder(tmp_path)
    for variant in ("cot-timefoil", "released"):
        done = cli("run", "velociti", "--model", "random", "--data", data, "--blind", "--variant", variant,
                       "--out", str(tmp_path / variant), "--cache-dir", str(tmp_path / "cache"), "--no-progress",
                       "--max-tokens", "8")
        assert done.returncode == 0, done.stderr
    assert load_scored(str(tmp_path / "cot-timefoil")).label == f"random · blind · cot-timefoil ({OWN_WORDING})"
    assert load_scored(str(tmp_path / "released")).label == "random · blind · released"


def test_plan_asks_with_the_prefix_and_suffix_around_a_published_question():
    from timefoil.core.items import Item, VideoRef

    prompts = get_benchmark("vinoground").variants["released-ma-lmm"]
    item = Item(id="0_pos:text", group_id="0", benchmark="vinoground", test="vinoground", role="text",
                videos=(VideoRef.file("a.mp4"),), texts=("x then y", "y then x"), target=0, target_position=0,
                prompt="Which caption best describes this video? A. x then y, B. y then x")
    planned = get_protocol("choice").plan([item], PlanContext(prompts=prompts))
    assert [p.request.text for _, p in planned] == [
        "Question: Which caption best describes this video? A. x then y, B. y then x"
        "Please only output 1 English character. Answer: "]


def test_list_names_every_variant_with_its_source_and_marks_timefoils_wording():
    done = CliRunner().invoke(main, ["list", "--json"])
    assert done.exit_code == 0
    listed = json.loads(done.output)["prompt variants"]
    expected = {f"{name} {variant}" for name, bench in BENCHMARKS.items() for variant in
                ["(default)"] + [f"--variant {v}" for v in bench.variants]}
    assert set(listed) == expected
    own = {key for key, said in listed.items() if OWN_WORDING in said}
    assert {"velociti --variant cot-timefoil", "vilma (default)", "synth (default)"} <= own
    assert not own & {"velociti (default)", "velociti --variant released", "velociti --variant cot",
                      "velociti --variant frames", "vinoground (default)", "vinoground --variant cot"}
    assert "vidllm_eval.py:15" in listed["velociti --variant released"]
    assert "Fig. 5" in listed["velociti --variant cot"]
    text = CliRunner().invoke(main, ["list"]).output
    assert f"velociti --variant cot-timefoil {OWN_WORDING}" in " ".join(text.split())


def test_published_questions_asked_verbatim_are_labelled_so(tmp_path):
    """TemporalBench's source names its own wording for entailment; a choice run that asked every
    published question as published says so, and the multi-choice format, which has none, does not."""
    from benchmark_files import tb_question
    from timefoil.reports.report import load_scored

    (tmp_path / "data").mkdir()
    records = [tb_question(f"v1_{k}", "v1.mp4", "Action Order", "true one", f"neg{k}", "AB"[k]) for k in range(2)]
    (tmp_path / "data" / "temporalbench_short_qa.json").write_text(json.dumps(records))
    common = ("--model", "random", "--data", str(tmp_path / "data"), "--blind", "--cache-dir", str(tmp_path / "c"),
              "--no-progress")
    runs = {"default": (), "released-llava-onevision": ("--variant", "released-llava-onevision"),
            "multichoice": ("--bench-arg", "format=multichoice")}
    for name, extra in runs.items():
        done = cli("run", "temporalbench", *common, *extra, "--out", str(tmp_path / name))
        assert done.returncode == 0, done.stderr
    assert load_scored(str(tmp_path / "default")).label == "random · blind · published questions"
    assert load_scored(str(tmp_path / "released-llava-onevision")).label == \
        "random · blind · released-llava-onevision (published questions)"
    assert load_scored(str(tmp_path / "multichoice")).label == f"random · blind · default prompts ({OWN_WORDING})"
