"""The five published benchmarks: loaders on real-format files, errors, aggregation."""
import math
import glob
import json
import os
from collections import Counter, defaultdict

import pytest

from timefoil.benchmarks import DataError, get_benchmark
from timefoil.models.base import Model
from timefoil.execution.offline import answer_offline
from timefoil.models.requests import Answer
from timefoil.scoring import score_records
from benchmark_files import (AlwaysA, ByLength, score_by_length, tb_question, velociti_fixture, vilma_dir,
                             vilma_members, vinoground_fixture, vitatecs_dir)
from helpers import cli

# annotation files in the published formats, with made-up records (tests/benchmark_files.py)
VITATECS, VILMA = vitatecs_dir(), vilma_dir()






# -- VITATECS ----------------------------------------------------------------------------
def test_inspect_vitatecs_counts_every_line():
    expected = {os.path.basename(p)[:-6].lower(): sum(1 for line in open(p) if line.strip())
                for p in glob.glob(os.path.join(VITATECS, "*.jsonl"))}
    data = json.loads(cli("inspect", "vitatecs", "--data", VITATECS, "--json").stdout)
    assert data["counts"] == expected and data["total"] == sum(expected.values()) == 150
    assert data["chance"]["average accuracy"] == 50.0


def test_vitatecs_average_is_the_mean_of_aspects():
    items = get_benchmark("vitatecs").load(VITATECS)
    report = score_by_length("vitatecs", items)
    per_aspect = {}
    for path in glob.glob(os.path.join(VITATECS, "*.jsonl")):
        rows = [json.loads(line) for line in open(path) if line.strip()]
        per_aspect[rows[0]["aspect"].lower()] = 100 * sum(len(r["caption"]) > len(r["counterfactual"])
                                                          for r in rows) / len(rows)
    for aspect, value in per_aspect.items():
        assert report.get(f"{aspect}/accuracy").value == pytest.approx(value)
    assert report.get("overall/average accuracy").value == pytest.approx(sum(per_aspect.values()) / 6)


def test_vitatecs_keeps_duplicate_rows(tmp_path):
    row = {"src_dataset": "MSRVTT", "video_name": "video1.mp4", "caption": "a", "counterfactual": "b",
           "aspect": "Direction"}
    for aspect in ("Direction", "Intensity", "Sequence", "Localization", "Compositionality", "Type"):
        (tmp_path / f"{aspect}.jsonl").write_text((json.dumps(row) + "\n") * 2)
    assert len(get_benchmark("vitatecs").load(str(tmp_path))) == 12




def test_inspect_vilma_counts_members_only():
    members = vilma_members()
    expected = Counter()
    for key, records in members.items():
        expected[key] += len(records)
        expected[key.split("/")[0]] += len(records)
    data = json.loads(cli("inspect", "vilma", "--data", VILMA, "--json").stdout)
    assert data["counts"] == dict(expected)
    assert data["total"] == sum(len(r) for r in members.values())
    raw = sum(len(json.load(open(os.path.join(VILMA, f)))) for f in os.listdir(VILMA)
              if f.endswith(".json") and "digits" not in f and "pts" not in f and f != "dummy.json")
    assert data["total"] < raw  # the filter removed items


def test_vilma_pools_subtests_and_averages_five_tests():
    report = score_by_length("vilma", get_benchmark("vilma").load(VILMA))
    per_test = defaultdict(lambda: [0, 0, 0, 0])  # T right, P right, both, n
    for key, records in vilma_members().items():
        for r in records:
            t = all(len(r["caption"]) > len(f) for f in r["foils"])
            p = all(len(r["proficiency"]["caption"]) > len(f) for f in r["proficiency"]["foils"])
            counts = per_test[key.split("/")[0]]
            counts[0] += t
            counts[1] += p
            counts[2] += t and p
            counts[3] += 1
    for test, (t, p, both, n) in per_test.items():
        assert report.get(f"{test}/T").value == pytest.approx(100 * t / n)  # pooled, not averaged
        assert report.get(f"{test}/P").value == pytest.approx(100 * p / n)
        assert report.get(f"{test}/P+T").value == pytest.approx(100 * both / n)
    average = sum(100 * both / n for _, _, both, n in per_test.values()) / 5
    assert report.get("overall/average P+T").value == pytest.approx(average)


def test_vilma_ties_policy_follows_the_paper_by_default(tmp_path):
    items = get_benchmark("vilma").load(os.path.join(VILMA, "relations.json"))
    records = answer_offline(items, "similarity", ByLength())
    strict = score_records(records, benchmark="vilma", model="m", protocol="similarity",
                           spec=get_benchmark("vilma").summary)
    lenient = score_records(records, benchmark="vilma", model="m", protocol="similarity",
                            spec=get_benchmark("vilma").summary, tie_policy="ties-correct")
    ties = strict.get("overall/T").extra["ties"]
    assert ties > 0  # equal-length caption and foil
    n = strict.get("overall/T").n
    assert lenient.get("overall/T").value == pytest.approx(strict.get("overall/T").value + 100 * ties / n)


def test_vilma_rejects_invalid_json_and_files_without_validation():
    result = cli("inspect", "vilma", "--data", os.path.join(VILMA, "dummy.json"))
    assert result.returncode != 0 and "dummy.json: line 17: not valid JSON" in result.stderr
    assert "Traceback" not in result.stderr
    with pytest.raises(DataError, match=r"counting-easy-digits-sec.json: record .*missing field 'mturk'"):
        get_benchmark("vilma").load(os.path.join(VILMA, "counting-easy-digits-sec.json"))
    assert get_benchmark("vilma").load(VILMA)  # the folder holds both, and loads without them


def test_vilma_video_windows():
    items = {i.id: i for i in get_benchmark("vilma").load(VILMA)}
    quva = next(i for i in items.values() if i.videos[0].path.endswith("000_rope_beach.mp4"))
    assert (quva.videos[0].start, quva.videos[0].end) == (1.8667, 3.2)
    vidsitu = next(i for i in items.values() if i.test == "situation_awareness")
    assert vidsitu.videos[0].start is None  # the file is already the cut clip
    coin = next(i for i in items.values() if i.subtest == "inverse")
    assert coin.metadata["youtube"] == {"id": os.path.basename(coin.videos[0].path)[:-4]}




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




def test_vinoground_loader_groups_categories_and_published_orders(tmp_path):
    items = get_benchmark("vinoground").load(vinoground_fixture(tmp_path))
    assert len(items) == 8 and Counter(i.role for i in items) == {"text": 4, "video": 4}
    first = [i for i in items if i.group_id == "0"]
    assert all(i.categories == ("action", "cyclical", "spatial") for i in first)
    video_pos = next(i for i in first if i.id == "0_pos:video")
    assert video_pos.texts == ("a dog runs then 0 sits",) and video_pos.target_position == 1
    records = answer_offline(items, "choice", AlwaysA(), prompts=get_benchmark("vinoground").prompts)
    by_id = {r["item"]["id"]: r for r in records}
    assert by_id["0_pos:video"]["request"]["text"] == "Q video 0 pos"
    # the true (pos) video is shown second, as the published GT "B" says
    assert by_id["0_pos:video"]["request"]["video"]["parts"][1]["path"].endswith("0_pos.mp4")
    report = score_records(records, benchmark="vinoground", model="a", protocol="choice")
    # "A" is right for pos text questions (GT A) and neg video questions (GT A) only
    assert report.get("overall/text").value == 0.0 and report.get("overall/video").value == 0.0
    assert report.get("overall/accuracy").value == 50.0
    assert report.get("category:cyclical/accuracy").n == 4




def test_vinoground_without_published_orders_is_balanced(tmp_path):
    items = get_benchmark("vinoground").load(vinoground_fixture(tmp_path, pairs=50, orders=False))
    records = answer_offline(items, "choice", AlwaysA())
    first = Counter(r["request"]["position"] for r in records)
    assert first[0] == first[1] == 100


def test_vinoground_missing_column_is_named(tmp_path):
    (tmp_path / "vinoground.csv").write_text("index,major,minor,pos_cap\n0,action,,a dog runs\n")
    with pytest.raises(DataError, match=r"vinoground.csv: row 2: missing field 'neg_cap'"):
        get_benchmark("vinoground").load(str(tmp_path))


# -- path safety -------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["../../etc/passwd", "/etc/passwd", "a/../../b.mp4"])
def test_video_paths_may_not_leave_the_dataset(tmp_path, name):
    root = velociti_fixture(tmp_path, [{"test_name": "chrono", "video_id": "x", "pos": "a", "neg": "b"}])
    row = {"src_dataset": "MSRVTT", "video_name": name, "caption": "a", "counterfactual": "b", "aspect": "Type"}
    for aspect in ("Direction", "Intensity", "Sequence", "Localization", "Compositionality", "Type"):
        (tmp_path / f"{aspect}.jsonl").write_text(json.dumps(row) + "\n")
    with pytest.raises(DataError, match="leaves the dataset directory"):
        get_benchmark("vitatecs").load(root)


def test_links_inside_the_dataset_folder_are_followed(tmp_path):
    """videos/ as a link to another disk is the usual layout; the annotation still may not name
    a path out of the folder (test above)."""
    elsewhere = tmp_path / "other-disk"
    elsewhere.mkdir()
    (elsewhere / "v.mp4").write_bytes(b"x")
    root = tmp_path / "data"
    root.mkdir()
    os.symlink(elsewhere, root / "videos")
    velociti_fixture(root, [{"test_name": "chrono", "video_id": "v", "pos": "a", "neg": "b"}])
    items = get_benchmark("velociti").load(str(root))
    assert os.path.realpath(items[0].videos[0].path) == str(elsewhere / "v.mp4")


def test_vinoground_end_to_end_and_prepare_reports_missing(tmp_path):
    import numpy as np

    from timefoil.video import write_video

    root = vinoground_fixture(tmp_path / "data", pairs=2)  # the run goes beside the data, never into it
    os.makedirs(os.path.join(root, "vinoground_videos"))
    for n in range(2):
        for k, s in enumerate(("pos", "neg")):
            frames = [np.full((16, 16, 3), 40 * k + 10 * t, np.uint8) for t in range(12)]
            write_video(os.path.join(root, "vinoground_videos", f"{n}_{s}.mp4"), frames, 6)
    result = cli("run", "vinoground", "--model", "random", "--data", root, "--frames", "5", "--out",
                 str(tmp_path / "run"), "--cache-dir", str(tmp_path / "cache"))
    assert result.returncode == 0, result.stderr
    scored = json.loads(cli("score", str(tmp_path / "run"), "--json").stdout)
    names = {m["name"] for m in scored["metrics"]}
    assert {"overall/text", "overall/video", "overall/group", "category:spatial/group"} <= names
    assert scored["errors"] == 0 and scored["items"] == 8
    video = next(m for m in scored["metrics"] if m["name"] == "overall/video")
    assert "warning" not in video and video["chance"] == 25.0
    prepared = cli("prepare", "vinoground", "--dest", root, "--no-download")
    assert "4 videos referenced, 0 missing" in prepared.stdout
    os.remove(os.path.join(root, "vinoground_videos", "1_neg.mp4"))
    prepared = cli("prepare", "vinoground", "--dest", root, "--no-download")
    assert "1 missing" in prepared.stdout and "1_neg.mp4" in prepared.stdout


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


def test_vinoground_published_concatenations_are_accepted(tmp_path):
    root = vinoground_fixture(tmp_path, pairs=1)
    built = get_benchmark("vinoground").load(root)
    published = get_benchmark("vinoground").load(root, concatenated="published")
    records = {r["item"]["id"]: r for r in answer_offline(published, "choice", AlwaysA())}
    assert records["0_pos:video"]["request"]["video"]["path"].endswith("vinoground_videos_concated/0.mp4")
    assert "parts" in answer_offline(built, "choice", AlwaysA())[1]["request"]["video"]
    with pytest.raises(DataError, match="concatenated must be"):
        get_benchmark("vinoground").load(root, concatenated="yes")


def test_temporalbench_subsets_loaded_together_keep_ids_that_repeat_across_files_apart(tmp_path):
    video = "short_video/COIN/a_start_0_end_5.mp4"
    (tmp_path / "temporalbench_short_qa.json").write_text(json.dumps([tb_question(0, video, "order", "t", "n", "A")]))
    (tmp_path / "temporalbench_long_qa.json").write_text(json.dumps([tb_question(0, video, "order", "u", "m", "B")]))
    bench = get_benchmark("temporalbench")
    assert [i.id for i in bench.load(str(tmp_path))] == ["0"]  # one file: its own idx
    both = bench.load(str(tmp_path), subset="short_qa,long_qa")
    assert [(i.id, i.test, i.texts) for i in both] == [("short_qa/0", "short_qa", ("t", "n")),
                                                      ("long_qa/0", "long_qa", ("u", "m"))]
