"""TemporalBench: binary accuracy and MBA, multiple choice, captioning, and subsets loaded together."""
import math
import json
import pytest
from timefoil.benchmarks import DataError, get_benchmark
from timefoil.execution.offline import answer_offline
from timefoil.models.requests import Answer
from timefoil.scoring import score_records
from benchmark_files import (AlwaysA, tb_question)
from timefoil.models import Model


def test_temporalbench_mba_per_category_with_overlapping_groups(tmp_path):
    v1, v2 = "short_video/COIN/a_start_0_end_5.mp4", "short_video/COIN/b_start_0_end_5.mp4"
    records = [tb_question(f"{v1}_0", v1, "action order", "t1", "n1", "A"),
               tb_question(f"{v1}_1", v1, "action frequency", "t1", "n2", "B", source_key="source_dataset"),
               tb_question(f"{v1}_2", v1, "action order", "t1", "n3", "A"),
               tb_question(f"{v2}_0", v2, "action order", "t2", "m1", "B")]
    (tmp_path / "temporalbench_short_qa.json").write_text(json.dumps(records))
    items = get_benchmark("temporalbench").load(str(tmp_path))
    assert [i.texts for i in items][:2] == [("t1", "n1"), ("t1", "n2")]
    assert items[1].target_position == 1 and items[1].categories == ("COIN", "action frequency")

    class Scripted(Model):  # right except on the question whose negative is n3
        kinds = frozenset({"choice"})

        def answer(self, requests, frames):
            return [Answer(raw="AB"[r.option_texts.index("n3" if "n3" in r.option_texts else
                                                         next(t for t in r.option_texts if t.startswith("t")))])
                    for r in requests]

    bench = get_benchmark("temporalbench")
    records = answer_offline(items, "choice", Scripted(), prompts=bench.prompts, order_policy="balanced")
    assert records[0]["request"]["text"] == items[0].prompt  # the published question, verbatim
    report = score_records(records, benchmark="temporalbench", model="m", protocol="choice", spec=bench.summary)
    assert report.get("overall/BA").value == 75.0
    assert report.get("overall/MBA").value == 50.0  # v1 has a wrong answer, v2 is all right
    assert report.get("overall/MBA").chance == pytest.approx(100 * (0.5**3 + 0.5) / 2)
    # per category: "action order" groups = v1 (q0 right, q2 wrong) and v2 (right) -> 50;
    # "action frequency" = v1 (q1 right) -> 100
    assert report.get("category:action order/MBA").value == 50.0
    assert report.get("category:action frequency/MBA").value == 100.0
    assert report.get("category:COIN/MBA").value == 50.0


def test_temporalbench_multichoice_and_malformed_question(tmp_path):
    v1 = "short_video/COIN/a.mp4"
    records = [tb_question(f"{v1}_{k}", v1, "c", "true", f"neg{k}", "A") for k in range(3)]
    (tmp_path / "temporalbench_short_qa.json").write_text(json.dumps(records))
    mc = get_benchmark("temporalbench").load(str(tmp_path), format="multichoice")
    assert len(mc) == 1 and mc[0].texts == ("true", "neg0", "neg1", "neg2")
    records[1]["question"] = "no options here"
    (tmp_path / "temporalbench_short_qa.json").write_text(json.dumps(records))
    with pytest.raises(DataError, match=r"record 2: field 'question' has no"):
        get_benchmark("temporalbench").load(str(tmp_path))


def test_temporalbench_captioning_subset_and_scores(tmp_path):
    records = [{"idx": "a", "video_name": "short_video/COIN/a.mp4", "dataset": "COIN",
                "question": "Describe it. Example 1: ...", "GT": "the dog runs quickly"},
               {"idx": "g", "video_name": "short_video/FineGym/g.mp4", "dataset": "FineGym", "GT": "a salto"},
               {"idx": "b", "video_name": "short_video/Oops/b.mp4", "source_dataset": "Oops",
                "GT": "there is a cat on the mat"}]
    (tmp_path / "temporalbench_short_caption.json").write_text(json.dumps(records))
    items = get_benchmark("temporalbench").load(str(tmp_path), subset="caption")
    assert [i.id for i in items] == ["a", "b"]  # FineGym left out, as in the paper

    class Writer(Model):
        kinds = frozenset({"generation"})

        def answer(self, requests, frames):
            return [Answer(raw="A dog runs fast." if r.text.startswith("Describe it.") else "the cat is on the mat")
                    for r in requests]

    records = answer_offline(items, "generation", Writer())
    assert records[0]["request"]["text"] == "Describe it. Example 1: ..."  # the published prompt, verbatim
    report = score_records(records, benchmark="temporalbench", model="w", protocol="generation")
    assert report.get("overall/BLEU-1").value == pytest.approx(100 * math.exp(-0.1) * 0.7)
    assert report.get("overall/ROUGE-L").n == 2 and report.get("category:Oops/ROUGE-L").n == 1


def test_temporalbench_subsets_loaded_together_keep_ids_that_repeat_across_files_apart(tmp_path):
    video = "short_video/COIN/a_start_0_end_5.mp4"
    (tmp_path / "temporalbench_short_qa.json").write_text(json.dumps([tb_question(0, video, "order", "t", "n", "A")]))
    (tmp_path / "temporalbench_long_qa.json").write_text(json.dumps([tb_question(0, video, "order", "u", "m", "B")]))
    bench = get_benchmark("temporalbench")
    assert [i.id for i in bench.load(str(tmp_path))] == ["0"]  # one file: its own idx
    both = bench.load(str(tmp_path), subset="short_qa,long_qa")
    assert [(i.id, i.test, i.texts) for i in both] == [("short_qa/0", "short_qa", ("t", "n")),
                                                      ("long_qa/0", "long_qa", ("u", "m"))]


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
