"""Protocols as the papers ran them: chain of thought."""
import json
import os
import re
from collections import Counter

import numpy as np
import pytest

from benchmark_files import (AlwaysA, ByLength, VILMA_DIR, score_by_length, tb_question, velociti_fixture,
                             vilma_members, vinoground_fixture)
from timefoil.models import MODELS, Model, ModelLoader
from timefoil.measures.parsing import conclusion
from timefoil.models.requests import Answer
from timefoil import RunConfig, run
from timefoil.video import write_video

COT = "\nplease think step by step"


def vinoground_with_videos(root):
    vinoground_fixture(root, pairs=2)
    os.makedirs(os.path.join(root, "vinoground_videos"))
    for n in range(2):
        for k, s in enumerate(("pos", "neg")):
            write_video(os.path.join(root, "vinoground_videos", f"{n}_{s}.mp4"),
                        [np.full((16, 16, 3), 40 * k + 10 * t, np.uint8) for t in range(12)], 6)
    return str(root)


class Reasoner(Model):
    """Reasons at length, mentioning both letters, and concludes B."""

    name = "reasoner"

    def __init__(self):
        self.seen = []

    def answer_generation(self, requests, frames):
        self.seen += requests
        return [Answer(raw=f"A shows one thing and B another ({r.key()[:6]}).\nSo the answer is B.") for r in requests]


class SaysA(Model):
    name = "says-a"

    def __init__(self, asked):
        self.asked = asked

    def answer_generation(self, requests, frames):
        self.asked.extend(re.findall(r"====(.*?)====", r.text, re.S)[-1] for r in requests)
        return [Answer(raw="A") for _ in requests]


@pytest.fixture()
def vinoground(tmp_path):
    os.makedirs(tmp_path / "vino")
    return vinoground_with_videos(tmp_path / "vino")


def test_vinoground_cot_asks_every_question_with_the_suffix_and_judges_every_answer(vinoground, tmp_path,
                                                                                   monkeypatch):
    asked = []
    monkeypatch.setitem(MODELS, "says-a", ModelLoader("says-a", lambda arg, options, cache_dir: SaysA(asked),
                                                      "test judge"))
    model = Reasoner()
    config = RunConfig("vinoground", "reasoner", data_dir=vinoground, variant="cot", judge="says-a")
    report = run(config, str(tmp_path / "cot"), cache_dir=str(tmp_path / "c"), model=model, progress=False)
    assert len(model.seen) == 8  # the 8 questions of two pairs, each asked once (published orders)
    assert all(r.text.endswith(COT) and r.max_tokens == 1024 and r.kind == "generation" for r in model.seen)
    assert {r.text[:-len(COT)] for r in model.seen} == {f"Q {kind} {n} {s}" for kind in ("text", "video")
                                                         for n in range(2) for s in ("pos", "neg")}
    records = [json.loads(line) for line in open(tmp_path / "cot" / "items.jsonl")]
    assert all(r["judge"]["raw"] == "A" and r["parsed"]["value"] == "A" for r in records)
    assert all(r["answer"]["raw"].endswith("So the answer is B.") for r in records)  # the reasoning is kept
    assert len(asked) == 8 and all(text.endswith("So the answer is B.") for text in asked)  # parseable ones too
    # "A" is right where the published GT is A: pos text questions and neg video questions.
    assert report.get("overall/accuracy").value == 50.0 and report.parse_failures == 0


def test_cot_without_a_judge_reads_the_conclusion(vinoground, tmp_path):
    report = run(RunConfig("vinoground", "reasoner", data_dir=vinoground, variant="cot", max_tokens=300),
                 str(tmp_path / "cot"), cache_dir=str(tmp_path / "c"), model=Reasoner(), progress=False)
    records = [json.loads(line) for line in open(tmp_path / "cot" / "items.jsonl")]
    assert all(r["parsed"]["value"] == "B" and r["judge"] is None for r in records)  # not the first "A"
    assert {r["request"]["max_tokens"] for r in records} == {300}
    # "B" is right for neg text questions and pos video questions: 4 of 8
    assert report.get("overall/accuracy").value == 50.0 and report.get("overall/group").value == 0.0


@pytest.mark.parametrize("raw, said", [
    ("The man opens the door.\nSo the answer is B.", "B"),
    ("Thinking about A and B... <answer>Yes</answer>", "Yes"),
    ("Step one: A.\nFinal answer: (A)", "(A)"),
    ("B", "B"),
])
def test_conclusion_of_a_reasoned_answer(raw, said):
    assert conclusion(raw).strip(". ") == said


def test_velociti_cot_reads_the_verdict_in_the_papers_output_tags(tmp_path):
    from timefoil.benchmarks import get_benchmark
    from timefoil.execution.offline import answer_offline
    from timefoil.protocols import PlanContext, get_protocol

    bench = get_benchmark("velociti")
    cot = bench.variants["cot"]
    assert cot.reasoning and cot.answer_tokens == 1024 and "<<<output>>>" in cot.system
    items = bench.load(velociti_fixture(tmp_path, [
        {"test_name": "chrono", "video_id": "v", "pos": "he sits then runs", "neg": "he runs then sits"}]))

    class Tagged(Model):  # reasons in the paper's format, saying Yes to the true caption only
        def answer_generation(self, requests, frames):
            verdict = ["Yes" if "sits then" in r.text else "No" for r in requests]
            return [Answer(raw=f"<<<thinking>>>\nYes, maybe no.\n<<</thinking>>>\n<<<reflection>>>\nNo doubt."
                               f"\n<<</reflection>>>\n<<<output>>>\n{v}\n<<</output>>>") for v in verdict]

    records = answer_offline(items, "entailment", Tagged(), prompts=cot)
    assert Counter(r["parsed"]["value"] for r in records) == {"yes": 1, "no": 1}
    entail = get_protocol("entailment")
    outcome = entail.outcome(records)
    assert outcome.scores == [1.0, 0.0] and outcome.correct()
    assert entail.request_kinds(cot) == {"generation"} and entail.request_kinds(bench.prompts) == {"entailment"}
    planned = entail.plan(items, PlanContext(prompts=cot))
    assert all(p.request.system == cot.system and p.info["reasoning"] for _, p in planned)
    assert sorted(p.request.text for _, p in planned) == [
        "Evaluate the following caption for the accompanying movie clip: he runs then sits",
        "Evaluate the following caption for the accompanying movie clip: he sits then runs"]


# -- VELOCITI's averages ----------------------------------------------------------------------
E_VALUES = {  # (e_pos, e_neg) per item; worked out below by hand
    "agent_bind": [(.9, .1), (.9, .8), (.3, .1), (.3, .6)],
    "chrono": [(.9, .1), (.9, .2), (.6, .7), (.2, .9)],
    "control": [(.1, .9)] * 4,
}


def velociti_items(tmp_path):
    from timefoil.benchmarks import get_benchmark

    records = [{"test_name": test, "video_id": f"v{k}", "pos": f"{test} true {k}", "neg": f"{test} false {k}"}
               for test in E_VALUES for k in range(4)]
    return get_benchmark("velociti").load(velociti_fixture(tmp_path, records))


class ScriptedVelociti(Model):
    name = "scripted"

    def answer_entailment(self, requests, frames):
        out = []
        for r in requests:
            test, kind, k = r.caption.split()
            e = E_VALUES[test][int(k)][0 if kind == "true" else 1]
            out.append(Answer(raw="Yes" if e > .5 else "No", probs={"yes": e, "no": 1 - e}))
        return out

    def answer_choice(self, requests, frames):
        out = []
        for r in requests:  # agent_bind: always A; chrono: always right; control: always B
            test = r.option_texts[0].split()[0]
            true = r.labels[[" true " in t for t in r.option_texts].index(True)]
            out.append(Answer(raw={"agent_bind": "A", "chrono": true, "control": "B"}[test]))
        return out


def test_velociti_averages_every_metric_over_the_tests_without_control(tmp_path):
    from timefoil.benchmarks import get_benchmark
    from timefoil.execution.offline import answer_offline
    from timefoil.scoring import score_records

    bench, items = get_benchmark("velociti"), velociti_items(tmp_path)

    def scored(protocol):
        records = answer_offline(items, protocol, ScriptedVelociti(), prompts=bench.prompts,
                                 order_policy=bench.order_policy)
        report = score_records(records, benchmark="velociti", model="m", protocol=protocol, spec=bench.summary)
        return {m.name: m for m in report.metrics}

    entail = scored("entailment")
    # agent_bind: Strict 1/4, Classic 3/4, pos 2/4, neg|pos 1/2; chrono: 2/4, 2/4, 3/4, 2/3
    by_hand = {"StrictVLE": (25, 50), "ClassicVLE": (75, 50), "acc(pos)": (50, 75), "acc(neg|pos)": (50, 200 / 3)}
    for metric, (agent_bind, chrono) in by_hand.items():
        assert entail[f"agent_bind/{metric}"].value == pytest.approx(agent_bind, abs=1e-3)
        assert entail[f"chrono/{metric}"].value == pytest.approx(chrono, abs=1e-3)
        # two of the paper's seven tests here: the name says so
        average = entail[f"overall/average {metric} (2 of 7 tests)"]
        assert average.value == pytest.approx((agent_bind + chrono) / 2, abs=1e-3)
    assert entail["control/StrictVLE"].value == 0.0  # reported, never averaged or pooled
    assert entail["overall/StrictVLE"].value == 37.5 and entail["overall/StrictVLE"].n == 8
    assert entail["overall/StrictVLE"].extra["excludes"] == "control"
    # chrono alone here (no coref items); agent_bind alone of the agent facet's three tests
    assert entail["facet:multi-event/StrictVLE (1 of 2 tests)"].value == 50.0
    assert entail["facet:agent/StrictVLE (1 of 3 tests)"].value == 25.0

    choice = scored("choice")
    by_hand = {"acc_A": (100, 100), "acc_B": (0, 100), "bias": (-100, 0), "A∧B": (0, 100)}
    for metric, (agent_bind, chrono) in by_hand.items():
        assert choice[f"agent_bind/{metric}"].value == pytest.approx(agent_bind)
        assert choice[f"chrono/{metric}"].value == pytest.approx(chrono)
        assert choice[f"overall/average {metric} (2 of 7 tests)"].value == pytest.approx((agent_bind + chrono) / 2)
    assert choice["control/acc_B"].value == 100.0 and choice["overall/acc_B"].value == 50.0


# -- perplexity for text-only LMs ---------------------------------------------------------------
CAPTIONS = ["the man opens the door", "a door opens the man slowly", "man the the door", "opens"]


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory):
    pytest.importorskip("transformers")
    from timefoil.testing import tiny_gpt2

    return tiny_gpt2(str(tmp_path_factory.mktemp("gpt2")), CAPTIONS + ["Yes No A B"])


def test_perplexity_is_the_official_vilma_rule_and_lower_perplexity_wins(gpt2):
    import torch

    from timefoil.models import load_model
    from timefoil.protocols import get_protocol
    from timefoil.models.requests import Request

    model = load_model(f"hf:{gpt2}", {"batch_size": "3"})  # no chat template: perplexity by default
    assert model.score_mode == "perplexity" and model.fingerprint()["score"] == "perplexity"
    # answers cached under the earlier rule (start token, mean over the caption) are not reused
    assert "tokens 2..L" in model.fingerprint()["perplexity_rule"]
    answers = model.answer([Request("similarity", None, c) for c in CAPTIONS], None)
    net, by_hand = model.model, []
    for caption, answer in zip(CAPTIONS, answers):  # one caption at a time, unpadded, by hand
        ids = torch.tensor(model.tokenizer(caption)["input_ids"])  # GPT-2's tokenizer adds no start token
        assert ids[0] != model.tokenizer.bos_token_id
        with torch.inference_mode():
            logits = net(ids[None]).logits[0].float()
        # ViLMA models/text/run.py: cross-entropy of tokens 2..L, summed, divided by L
        summed = float(torch.nn.functional.cross_entropy(logits[:-1], ids[1:], reduction="sum"))
        by_hand.append(np.exp(summed / len(ids)))
        assert answer.meta["tokens"] == len(ids)
        assert answer.meta["perplexity"] == pytest.approx(by_hand[-1], rel=1e-5)
        assert answer.score == pytest.approx(-summed / len(ids), abs=1e-5)
    assert answers[3].score == 0.0 and answers[3].meta["perplexity"] == 1.0  # "opens": nothing to predict
    # the similarity protocol picks the caption of lowest perplexity by the hand-computed rule
    from timefoil.core.items import Item, VideoRef

    item = Item(id="i", group_id="i", benchmark="t", test="t", videos=(VideoRef.file("/none.mp4"),),
                texts=tuple(CAPTIONS))
    from timefoil.execution.offline import answer_offline

    outcome = get_protocol("similarity").outcome(answer_offline([item], "similarity", model))
    best = int(np.argmin(by_hand))
    assert outcome.correct() == (best == 0) and int(np.argmax(outcome.scores)) == best
    # a base LM without a chat template answers Yes/No questions from a plain-text prompt
    yes_no = model.answer([Request("entailment", None, "Is the door open?", labels=("Yes", "No"))], None)[0]
    assert yes_no.error is None and yes_no.probs["yes"] > 0 and yes_no.probs["no"] > 0
    conditional = load_model(f"hf:{gpt2}", {"score": "conditional"})
    assert conditional.score_mode == "conditional" and "score" not in conditional.fingerprint()


# -- VELOCITI's released data ---------------------------------------------------------------
HUB_ROWS = [{"test_name": "chrono", "video_id": "v_abc_seg_0_10", "event": "Ev1", "pos": "first p", "neg": "first n",
             "in_subset": True},
            {"test_name": "agent_bind", "video_id": "v_def_seg_5_15", "event": "Ev2", "pos": "second p",
             "neg": "second n", "in_subset": False}]


@pytest.mark.parametrize("layout", ["parquet", "arrow", "jsonl"])
def test_velociti_loads_the_hub_release(tmp_path, layout):
    from timefoil.benchmarks import get_benchmark

    pa = pytest.importorskip("pyarrow")
    table = pa.Table.from_pylist(HUB_ROWS)
    if layout == "parquet":  # as the hub repository holds it
        os.makedirs(tmp_path / "data")
        parquet = pytest.importorskip("pyarrow.parquet")
        parquet.write_table(table, str(tmp_path / "data" / "test-00000-of-00001.parquet"))
    elif layout == "arrow":  # as datasets' save_to_disk writes a split
        os.makedirs(tmp_path / "test")
        with pa.OSFile(str(tmp_path / "test" / "data-00000-of-00001.arrow"), "wb") as sink:
            with pa.ipc.new_stream(sink, table.schema) as writer:
                writer.write_table(table)
        (tmp_path / "test" / "state.json").write_text("{}")
    else:
        (tmp_path / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in HUB_ROWS))
    bench = get_benchmark("velociti")
    items = bench.load(str(tmp_path))
    assert [(i.test, i.texts) for i in items] == [("chrono", ("first p", "first n")),
                                                   ("agent_bind", ("second p", "second n"))]
    assert items[0].videos[0].path == os.path.join(str(tmp_path), "videos", "v_abc_seg_0_10.mp4")
    assert [i.test for i in bench.load(str(tmp_path), subset="paper")] == ["chrono"]


def test_velociti_loads_the_released_subset_csv_with_v1_test_names(tmp_path):
    import csv

    from timefoil.benchmarks import DataError, get_benchmark

    for name, rows in {"agent_iden": [("he runs", "she runs", "cap1", "v1")],
                       "sequence": [("a then b", "b then a", "cap2", "v2")],
                       "action_mod": [("x", "y", "y", "v3")]}.items():
        with open(tmp_path / f"{name}.csv", "w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["cap1", "cap2", "ev", "gt", "video_id"])
            writer.writerows([(c1, c2, "Ev1", gt, v) for c1, c2, gt, v in rows])
    items = {i.test: i for i in get_benchmark("velociti").load(str(tmp_path), subset="paper")}
    assert set(items) == {"agent_random", "chrono", "action_manner"}
    assert items["agent_random"].texts == ("he runs", "she runs")  # gt cap1: the first is true
    assert items["chrono"].texts == ("b then a", "a then b")  # gt cap2
    assert items["action_manner"].texts == ("y", "x")  # gt given as the caption's text
    with open(tmp_path / "agent_bind.csv", "w") as handle:
        handle.write("cap1,cap2,ev,gt,video_id\na,b,Ev1,neither,v9\n")
    # rows are counted as a spreadsheet shows them: the header is row 1
    with pytest.raises(DataError, match=r"agent_bind.csv: row 2: gt 'neither' names neither caption"):
        get_benchmark("velociti").load(str(tmp_path))


# -- breakdowns -------------------------------------------------------------------------------
def test_temporalbench_multichoice_has_its_own_name_chance_and_categories(tmp_path):
    from timefoil.benchmarks import get_benchmark
    from timefoil.execution.offline import answer_offline
    from timefoil.scoring import score_records

    v1, v2 = "short_video/COIN/a.mp4", "short_video/COIN/b.mp4"
    records = [tb_question(f"{v1}_{k}", v1, ("order", "count", "order")[k], "true", f"neg{k}", "A")
               for k in range(3)]
    records += [tb_question(f"{v2}_{k}", v2, "speed", "real", f"other{k}", "B") for k in range(2)]
    (tmp_path / "temporalbench_short_qa.json").write_text(json.dumps(records))
    bench = get_benchmark("temporalbench")
    items = bench.load(str(tmp_path), format="multichoice")
    assert [i.n_options for i in items] == [4, 3]
    assert items[0].categories == ("COIN", "order", "count") and items[1].categories == ("COIN", "speed")
    answered = answer_offline(items, "choice", AlwaysA(), order_policy="balanced")
    report = score_records(answered, benchmark="temporalbench", model="a", protocol="choice", spec=bench.summary)
    right = [r["request"]["position"] == 0 for r in answered]  # "A" is right where the truth is shown first
    mc = report.get("overall/MC accuracy")
    assert mc.value == pytest.approx(100 * sum(right) / 2) and mc.chance == pytest.approx(100 * (1 / 4 + 1 / 3) / 2)
    assert "overall/BA" not in {m.name for m in report.metrics}
    assert report.get("category:count/MC accuracy").n == 1


def test_vilma_breaks_down_by_count_class_and_source():
    from timefoil.benchmarks import get_benchmark

    report = score_by_length("vilma", get_benchmark("vilma").load(VILMA_DIR))
    counts, sources = Counter(), Counter()
    for key, records in vilma_members().items():
        for r in records:
            sources[r["dataset"]] += 1
            if key.startswith("counting"):
                counts[r["class"]] += 1
    assert counts and len(sources) > 1
    for count, n in counts.items():
        assert report.get(f"category:count={count}/T").n == n
    for source, n in sources.items():
        assert report.get(f"category:source={source}/T").n == n


def test_partial_data_is_loud(tmp_path):
    from click.testing import CliRunner

    from timefoil.cli import main

    records = [{"test_name": "chrono", "video_id": "v", "pos": "a", "neg": "b"}]
    result = CliRunner().invoke(main, ["inspect", "velociti", "--data", velociti_fixture(tmp_path, records),
                                       "--json"])
    missing = json.loads(result.output)["missing_tests"]
    assert missing == ["control", "agent_random", "agent_bind", "coref", "action_adv", "action_manner",
                       "action_bind"]


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


# -- reference rows -----------------------------------------------------------------------------
def test_the_papers_rows_are_quoted_under_a_runs_tables(vinoground, tmp_path):
    import csv

    from click.testing import CliRunner

    from timefoil.cli import main

    cli, out = CliRunner(), str(tmp_path / "run")
    result = cli.invoke(main, ["run", "vinoground", "--model", "random", "--data", vinoground, "--frames", "5",
                               "--out", out, "--cache-dir", str(tmp_path / "c"), "--no-progress"])
    assert result.exit_code == 0, result.output
    quoted = next(line for line in result.output.splitlines() if "paper · GPT-4o (32 frames)" in line)
    assert ["54.0", "38.2", "24.6"] == [c for c in re.findall(r"\d+\.\d", quoted)]
    assert "VideoCLIP" not in result.output  # a similarity row, and this run asked choice questions
    paths = {k: str(tmp_path / f"t.{k}") for k in ("csv", "tex", "html", "json")}
    result = cli.invoke(main, ["report", out, "--csv", paths["csv"], "--latex", paths["tex"], "--html",
                               paths["html"], "--json", paths["json"], "--no-thumbnails"])
    assert result.exit_code == 0, result.output
    rows = list(csv.reader(open(paths["csv"])))
    header = next(r for r in rows if r and r[0] == "run")
    human = next(r for r in rows if r and r[0] == "human (quoted from the paper, Table 2)")
    assert human[header.index("overall/group")] == "90.0" and human[header.index("overall/text")] == "93.4"
    assert r"\textit{human (paper, Table 2)}" in open(paths["tex"]).read()
    assert 'class="quoted"' in open(paths["html"]).read()
    tables = json.load(open(paths["json"]))
    assert {"label": "human", "source": "Table 2", "values": {"overall/text": 93.4, "overall/video": 94.0,
                                                              "overall/group": 90.0}} in tables[0]["quoted_from_paper"]


# -- sampling over tests ------------------------------------------------------------------------
def test_sample_is_stratified_over_tests_and_seeded():
    from helpers import pair_item

    from timefoil.execution.config import sampled_groups

    items = [pair_item(f"{t}{k}", f"{t}{k}", ["c", "f"], test=t) for t, n in (("a", 60), ("b", 30), ("c", 10))
             for k in range(n)]
    drawn = sampled_groups(items, 10, seed=1)
    assert Counter(i.test for i in drawn) == {"a": 6, "b": 3, "c": 1}  # 10 in proportion to 60:30:10
    assert [i.id for i in drawn] == [i.id for i in sampled_groups(items, 10, seed=1)]
    assert {i.id for i in drawn} != {i.id for i in sampled_groups(items, 10, seed=2)}
    assert Counter(i.test for i in sampled_groups(items, 3, seed=0)) == {"a": 1, "b": 1, "c": 1}  # each test once
    assert len(sampled_groups(items, 500, seed=0)) == 100


def test_centralized_option_analysis():
    """Options: the truth and three one-word edits of it; the truth shares most words with the
    others, so it is the centre. A model that always answers the centre is always right."""
    from timefoil.core.items import Item, VideoRef
    from timefoil.execution.offline import answer_offline
    from timefoil.protocols.choice import central_option
    from timefoil.scoring import score_records

    truth = "the man opens the red door slowly"
    foils = ["the man closes the red door slowly", "the woman opens the red door slowly",
             "the man opens the blue door slowly"]
    assert central_option([foils[0], truth, foils[1], foils[2]]) == 1
    items = [Item(id=f"i{k}", group_id=f"i{k}", benchmark="t", test="t", videos=(VideoRef.file("/v.mp4"),),
                  texts=(truth, *foils)) for k in range(4)]

    class Centre(Model):
        def answer_choice(self, requests, frames):
            return [Answer(raw=r.labels[central_option(r.option_texts)]) for r in requests]

    class First(Model):
        def answer_choice(self, requests, frames):
            return [Answer(raw="A") for _ in requests]

    for model, picks in ((Centre(), 100.0), (First(), None)):
        answered = answer_offline(items, "choice", model)
        report = score_records(answered, benchmark="t", model="m", protocol="choice")
        assert report.get("overall/central is true").value == 100.0
        assert report.get("overall/central is true").chance == 25.0
        central = report.get("overall/central picks")
        if picks is not None:
            assert central.value == picks and report.get("overall/accuracy").value == 100.0
        else:  # "A" is the centre only where the truth is shown first
            shown_first = sum(r["request"]["position"] == 0 for r in answered)
            assert central.value == 100 * shown_first / 4


# -- retrieval -------------------------------------------------------------------------------------
MATRIX = {"v0": [0.9, 0.8, 0.1, 0.2], "v1": [0.7, 0.3, 0.9, 0.1], "v2": [0.2, 0.1, 0.3, 0.4],
          "v3": [0.5, 0.6, 0.7, 0.8]}  # rows: videos; columns: texts c0..c3


def test_retrieval_recall_on_a_four_by_four_matrix():
    """Item i: video v_i, caption c_i, counterfactual c_(i+1). Ranks by hand (row order):
    v0: caption 1, counterfactual 2; v1: 3, 1; v2: 2, 1; v3: 1, 4 (ties would lose).
    R@1 caption 2/4, counterfactual 2/4, and "All" (VITATECS Table 7's third row) their mean,
    2/4, not "either" (4/4); chance 1/4 each. At k = 1 an item's caption and counterfactual
    cannot both hit, so each item gives one hit (chance 1/2) or none: 4 hits of 8 units has
    P(X >= 4) = 1/16 for X ~ Binomial(4, 1/2), not the 0.114 of eight independent quarters."""
    from timefoil.core.items import Item, VideoRef
    from timefoil.models.base import RanksBySimilarity
    from timefoil.execution.offline import answer_offline
    from timefoil.scoring import score_records

    texts = [f"c{j}" for j in range(4)]
    items = [Item(id=f"i{i}", group_id=f"i{i}", benchmark="t", test="t", videos=(VideoRef.file(f"/v{i}.mp4"),),
                  texts=(texts[i], texts[(i + 1) % 4])) for i in range(4)]

    class Matrix(RanksBySimilarity, Model):
        def answer_similarity(self, requests, frames):
            return [Answer(score=MATRIX[os.path.basename(r.video.path)[:-4]][int(r.text[1])]) for r in requests]

    records = answer_offline(items, "retrieval", Matrix())
    assert [r["answer"]["meta"]["ranks"] for r in records] == [[1, 2], [3, 1], [2, 1], [1, 4]]
    report = score_records(records, benchmark="t", model="m", protocol="retrieval")
    expected = {"caption": (50.0, 25.0), "counterfactual": (50.0, 25.0), "All": (50.0, 25.0)}
    for role, (value, chance) in expected.items():
        metric = report.get(f"overall/R@1 {role}")
        assert metric.value == value and metric.chance == pytest.approx(chance)
    assert report.get("overall/R@1 All").p_value == pytest.approx(1 / 16)
    assert not any(m.name.endswith("either") for m in report.metrics)
    assert report.get("overall/R@5 caption").value == 100.0 and report.get("overall/R@5 caption").chance == 100.0


def test_terminal_table_shows_each_numbers_own_chance():
    """ViLMA-like: T has chance 1/3 in one test and 1/2 in the other; the overall row's chance
    must not stand above every test."""
    from rich.console import Console

    from helpers import pair_item

    from timefoil.reports.report import ScoredRun, run_table
    from timefoil.scoring import score_records

    items = [pair_item(f"a{k}", f"a{k}", ["c", "f", "g"], test="a") for k in range(3)]
    items += [pair_item(f"b{k}", f"b{k}", ["c", "f"], test="b") for k in range(3)]
    from timefoil.execution.offline import answer_offline

    report = score_records(answer_offline(items, "similarity", ByLength()), benchmark="t", model="m",
                           protocol="similarity")
    console = Console(width=200, record=True)
    console.print(run_table(ScoredRun("d", "m", "8f", report)))
    lines = console.export_text().splitlines()
    chance_under = {row.split("│")[1].strip(): lines[i + 1] for i, row in enumerate(lines)
                    if row.startswith("│ ") and row.split("│")[1].strip() in ("a", "b", "overall")}
    assert "c 33.3" in chance_under["a"] and "c 50.0" in chance_under["b"] and "c 41.7" in chance_under["overall"]


def test_inspect_vilma_says_what_the_filter_removed_and_what_it_ignored():
    from click.testing import CliRunner

    from timefoil.cli import main

    data = json.loads(CliRunner().invoke(main, ["inspect", "vilma", "--data", VILMA_DIR, "--json"]).output)
    members = vilma_members()
    relations = data["files"]["relations.json"]
    raw = json.load(open(os.path.join(VILMA_DIR, "relations.json")))
    assert relations["records"] == len(raw)
    assert relations["removed by the validation filter"] == len(raw) - len(members["spatial_relations/relations"])
    assert "counting-easy-digits-sec.json" in data["ignored"] and "counting-easy-spelled-pts.json" in data["ignored"]
    assert data["missing_tests"] == []


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
