"""VELOCITI: its releases, its averages without the control test, its prompts and its chain of thought."""
import json
import os
from collections import Counter
import pytest
from timefoil.benchmarks import DataError, get_benchmark
from timefoil.execution.offline import answer_offline
from timefoil.models.requests import Answer
from timefoil.scoring import score_records
from benchmark_files import (velociti_fixture)
from timefoil.models import Model


def test_velociti_loader_subset_and_average_without_control(tmp_path):
    records = []
    for test in ("control", "agent_bind", "chrono"):
        for k in range(4):
            records.append({"test_name": test, "video_id": f"v_abcdefghijk_seg_{10 * k}_{10 * k + 10}",
                            "event": "Ev1", "pos": f"{test} true {k}", "neg": f"{test} false {k}"})
    root = velociti_fixture(tmp_path, records)
    items = get_benchmark("velociti").load(root)
    assert [i.id for i in items][:2] == ["control-00001", "control-00002"]
    assert items[0].metadata["youtube"] == {"id": "abcdefghijk", "start": 0, "end": 10}

    class Scripted(Model):  # e(pos): control always right, agent_bind 2 of 4, chrono 1 of 4 (StrictVLE)
        kinds = frozenset({"entailment"})
        right = {"control": 4, "agent_bind": 2, "chrono": 1}

        def answer(self, requests, frames):
            out = []
            for r in requests:
                test, kind, k = r.caption.split()
                ok = int(k) < self.right[test]
                yes = (kind == "true") == ok
                out.append(Answer(raw="Yes" if yes else "No", probs={"yes": 0.9 if yes else 0.1,
                                                                     "no": 0.1 if yes else 0.9}))
            return out

    bench = get_benchmark("velociti")
    report = score_records(answer_offline(items, "entailment", Scripted(), prompts=bench.prompts), benchmark=
                           "velociti", model="m", protocol="entailment", spec=bench.summary)
    assert report.get("control/StrictVLE").value == 100.0
    assert report.get("agent_bind/StrictVLE").value == 50.0 and report.get("chrono/StrictVLE").value == 25.0
    # control left out; two of the paper's seven tests, as the name says
    assert report.get("overall/average StrictVLE (2 of 7 tests)").value == pytest.approx(37.5)
    (tmp_path / "subset.txt").write_text("chrono-00002\nagent_bind-00001\n")
    subset = bench.load(root, subset=str(tmp_path / "subset.txt"))
    assert sorted(i.id for i in subset) == ["agent_bind-00001", "chrono-00002"]


def test_velociti_malformed_record_names_file_record_and_field(tmp_path):
    root = velociti_fixture(tmp_path, [{"test_name": "chrono", "video_id": "v_x_seg_0_10", "pos": "a", "neg": "b"},
                                       {"test_name": "chrono", "video_id": "v_x_seg_0_10", "pos": "a"}])
    with pytest.raises(DataError, match=r"velociti.jsonl: line 2: missing field 'neg'"):
        get_benchmark("velociti").load(root)


def test_velociti_prompt_constants():
    prompts = get_benchmark("velociti").prompts
    assert prompts.entailment.format(caption="X") == (
        "Carefully watch the video and pay attention to the sequence of events, the details and actions of "
        "persons.\nHere is a caption that describes the video: X\nBased on your observation, does the given "
        "video entail the caption?")
    assert get_benchmark("velociti").variants["closed"].entailment.endswith("\nJust answer with either Yes or No.")


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
