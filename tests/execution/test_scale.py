"""Sharding by video, merging shards, and the Ray executor on a local cluster."""
import json
import os
import random

import pytest
from click.testing import CliRunner

from helpers import run_ids, run_scores
from timefoil.cli import main
from timefoil.core.items import VideoRef
from timefoil.commands.merging import MergeError, merge_shards
from timefoil.models.requests import Request
from timefoil import RunConfig, RunError
from timefoil.execution.plan import plan_run
from timefoil.execution.runner import Runner
from timefoil.execution.sharding import Shard, VideoUnits, assign, unit_costs, video_batches
from timefoil.measures.stats import upper_tail
from timefoil.video import Sampling

pytestmark = pytest.mark.suite(per_family=2, seed=5)


def _run(suite, out, cache, shard=None, **options):
    return Runner(plan_run(RunConfig("synth", "bag-of-frames", data_dir=suite), shard), str(out), cache_dir=str(cache),
                  progress=False, **options)


@pytest.fixture(scope="module")
def whole(suite, tmp_path_factory):
    out = tmp_path_factory.mktemp("whole") / "run"
    _run(suite, out, out.parent / "cache").run()
    return out


# -- the plan -------------------------------------------------------------------------------
def test_assignment_is_longest_first_to_the_least_loaded_shard_whatever_the_input_order():
    costs = {"a": 10, "b": 7, "c": 5, "d": 4, "e": 3}
    # a -> 1 (10); b -> 2 (7); c -> 2 (12); d -> 1 (14); e -> 2 (15)
    assert assign(costs, 2) == {"a": 1, "b": 2, "c": 2, "d": 1, "e": 2}
    shuffled = dict(random.Random(1).sample(sorted(costs.items()), len(costs)))
    assert list(shuffled) != list(costs)  # the same costs, met in another order
    assert assign(shuffled, 2) == {"a": 1, "b": 2, "c": 2, "d": 1, "e": 2}
    # equal costs: in key order, each to the least loaded (lowest index on ties)
    assert assign({"y": 1, "x": 1, "z": 1}, 2) == {"x": 1, "y": 2, "z": 1}
    assert Shard.parse("2/3") == Shard(2, 3)
    for bad in ("3", "0/2", "3/2", "a/b", "1/0"):
        with pytest.raises(ValueError):
            Shard.parse(bad)


def test_cost_counts_frames_of_distinct_requests_and_blind_requests_alone():
    clip = VideoRef("/nowhere/a.mp4")
    eight, sixteen, per_second = Sampling(frames=8), Sampling(frames=16), Sampling(frames=None, fps=1)
    requests = [Request("similarity", clip, "one", eight), Request("similarity", clip, "one", eight),  # asked once
                Request("similarity", clip, "two", sixteen), Request("similarity", clip, "three", per_second),
                Request("choice", None, "blind")]
    units = VideoUnits()
    costs = unit_costs(requests, units)
    assert costs[units(requests[0])] == 8 + 16 + 64  # an fps sampling counts its cap
    assert costs[units(requests[4])] == 1 and len(costs) == 2


def test_each_video_lands_in_one_shard_and_the_shards_cover_the_plan_once(suite, tmp_path):
    full = plan_run(RunConfig("synth", "bag-of-frames", data_dir=suite)).full
    units = VideoUnits()
    shard_of_unit: dict[str, set[int]] = {}
    ids: list[str] = []
    loads = []
    for index in (1, 2, 3):
        part = plan_run(RunConfig("synth", "bag-of-frames", data_dir=suite), Shard(index, 3)).part
        ids += [p.id for _, p in part]
        for _, p in part:
            shard_of_unit.setdefault(units(p.request), set()).add(index)
        loads.append(sum(unit_costs([p.request for _, p in part]).values()))
    assert sorted(ids) == sorted(p.id for _, p in full)  # every request once
    assert all(len(shards) == 1 for shards in shard_of_unit.values())  # no video split
    assert len(shard_of_unit) > 3 and len({s for shards in shard_of_unit.values() for s in shards}) == 3
    biggest = max(unit_costs([p.request for _, p in full]).values())
    assert max(loads) - min(loads) <= biggest  # greedy balance: within one unit of each other


def test_batches_pack_whole_videos_and_split_only_a_video_larger_than_a_batch():
    def req(video, n):
        return Request("similarity", VideoRef(f"/nowhere/{video}.mp4"), f"{video}{n}")

    keys = {f"{v}{n}": req(v, n) for v, count in (("p", 2), ("q", 5), ("r", 1), ("s", 2)) for n in range(count)}
    bundles = video_batches(list(keys), keys, 3)
    assert bundles == [[["p0", "p1"]], [["q0", "q1", "q2"], ["q3", "q4"]], [["r0", "s0", "s1"]]]


def test_p_values_do_not_depend_on_the_order_of_the_units():
    chances = [0.5] * 7 + [1 / 3] * 11 + [0.25] * 5 + [0.125] * 3
    reference = upper_tail(14, chances)
    for seed in range(10):
        shuffled = random.Random(seed).sample(chances, len(chances))
        assert upper_tail(14, shuffled) == reference  # bit for bit, not approximately


def test_a_run_scores_the_same_whatever_the_order_of_its_log(whole, tmp_path):
    lines = open(os.path.join(whole, "items.jsonl"), encoding="utf-8").readlines()
    for seed in range(3):
        copy = tmp_path / f"shuffled{seed}"
        copy.mkdir()
        (copy / "run.json").write_text((whole / "run.json").read_text())
        (copy / "items.jsonl").write_text("".join(random.Random(seed).sample(lines, len(lines))))
        assert run_scores(copy) == run_scores(whole)


# -- shards and merge ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def shards(suite, tmp_path_factory):
    root = tmp_path_factory.mktemp("shards")
    dirs = []
    for index in (1, 2, 3):
        _run(suite, root / f"s{index}", root / "cache", shard=Shard(index, 3)).run()
        dirs.append(str(root / f"s{index}"))
    return dirs


def test_three_shards_merge_into_the_whole_run(suite, whole, shards, tmp_path):
    sizes = [len(run_ids(d)) for d in shards]
    assert all(sizes) and sum(sizes) == len(run_ids(whole))
    result = CliRunner().invoke(main, ["merge", *shards, "--out", str(tmp_path / "merged")])
    assert result.exit_code == 0, result.output
    assert run_ids(tmp_path / "merged") == run_ids(whole)
    assert run_scores(tmp_path / "merged") == run_scores(whole)
    checked = CliRunner().invoke(main, ["check", str(tmp_path / "merged")])
    assert checked.exit_code == 0 and "whole" in checked.output, checked.output
    for shard in shards:  # each shard is whole against its own part of the plan
        assert CliRunner().invoke(main, ["check", shard]).exit_code == 0
    # the merged directory is an ordinary run: the unsharded command resumes it and asks nothing
    _run(suite, tmp_path / "merged", tmp_path / "cache").run()
    assert run_ids(tmp_path / "merged") == run_ids(whole)


def test_a_shard_directory_refuses_another_shard(suite, shards):
    with pytest.raises(RunError, match="holds shard 1/3 of this configuration, not shard 2/3"):
        _run(suite, shards[0], os.path.dirname(shards[0]) + "/cache", shard=Shard(2, 3)).run()


def _copy(directory, to):
    os.makedirs(to)
    for name in ("run.json", "shard.json", "items.jsonl"):
        with open(os.path.join(directory, name), encoding="utf-8") as src, open(os.path.join(to, name), "w") as dst:
            dst.write(src.read())
    return str(to)


def test_a_merge_counts_the_batch_fallbacks_of_every_shard(shards, tmp_path):
    copies = [_copy(d, tmp_path / f"s{n}") for n, d in enumerate(shards, 1)]
    counts = [{"batches": 2, "requests": 16, "exceptions": {"OutOfMemoryError": 2},
               "messages": {"OutOfMemoryError": "CUDA out of memory"}}, None,
              {"batches": 1, "requests": 5, "exceptions": {"RuntimeError": 1}, "messages": {"RuntimeError": "cuDNN"}}]
    for copy, count in zip(copies, counts):
        meta = json.loads(open(os.path.join(copy, "run.json")).read())
        meta.pop("batch_fallbacks", None)
        if count:
            meta["batch_fallbacks"] = count
        with open(os.path.join(copy, "run.json"), "w") as f:
            json.dump(meta, f)
    merge_shards(copies, str(tmp_path / "merged"))
    merged = json.loads((tmp_path / "merged" / "run.json").read_text())
    assert merged["batch_fallbacks"] == {
        "batches": 3, "requests": 21, "exceptions": {"OutOfMemoryError": 2, "RuntimeError": 1},
        "messages": {"OutOfMemoryError": "CUDA out of memory", "RuntimeError": "cuDNN"}}


def test_merge_refuses_other_configurations_and_names_what_differs(suite, shards, tmp_path):
    other = tmp_path / "seed1"
    Runner(plan_run(RunConfig("synth", "bag-of-frames", data_dir=suite, seed=1), Shard(3, 3)), str(other),
           cache_dir=str(tmp_path / "c"), progress=False).run()
    with pytest.raises(MergeError, match="seed: 0 vs 1"):
        merge_shards([shards[0], shards[1], str(other)], str(tmp_path / "out"))
    with pytest.raises(MergeError, match="whole run, not a shard"):
        merge_shards([shards[0], _whole_copy(shards, tmp_path)], str(tmp_path / "out"))
    assert not os.path.exists(tmp_path / "out")


def test_shards_record_one_plan_and_a_shard_asked_in_other_words_is_refused(suite, shards, tmp_path, monkeypatch):
    """Same configuration and request ids, but the second shard asks its Yes/No question in other
    words: only the prompts (and so the requests) differ, and merge names the prompts."""
    from dataclasses import replace
    from timefoil.benchmarks.base import Benchmark

    plans = [json.load(open(os.path.join(d, "run.json")))["plan"] for d in shards]
    assert plans[0] == plans[1] == plans[2] and set(plans[0]) == {"digest", "items", "prompts", "videos", "requests"}

    def shard(index, out):
        config = RunConfig("synth", "random", data_dir=suite, protocol="entailment")
        Runner(plan_run(config, Shard(index, 2)), str(out), cache_dir=str(tmp_path / "c"), progress=False).run()
        return str(out), json.load(open(out / "run.json"))["plan"]

    first, asked = shard(1, tmp_path / "s1")
    prompts_for = Benchmark.prompts_for
    monkeypatch.setattr(Benchmark, "prompts_for", lambda self, *a, **k: replace(
        prompts_for(self, *a, **k), entailment="Caption: {caption}\nIs it what the video shows?"))
    second, reworded = shard(2, tmp_path / "s2")
    assert {k for k in asked if asked[k] != reworded[k]} == {"digest", "prompts", "requests"}
    assert json.loads(open(tmp_path / "s2" / "items.jsonl").readline())["request"]["text"].startswith("Caption: ")
    with pytest.raises(MergeError, match=rf"^{second} is a shard of another run than {first} "
                                         r"\(the prompts asked differ\); only shards of one configuration merge$"):
        merge_shards([first, second], str(tmp_path / "out"))
    assert not os.path.exists(tmp_path / "out")


def _whole_copy(shards, tmp_path):
    path = _copy(shards[0], tmp_path / "unsharded")
    meta = json.load(open(os.path.join(path, "run.json")))
    meta["shard"] = None
    json.dump(meta, open(os.path.join(path, "run.json"), "w"))
    return path


def test_merge_reports_missing_and_duplicated_requests(shards, tmp_path):
    with pytest.raises(MergeError) as missing_shard:
        merge_shards(shards[:2], str(tmp_path / "out"))
    assert missing_shard.value.problems == ["shard 3/3 not given (run it with --shard 3/3)"]

    short = _copy(shards[1], tmp_path / "short")
    lines = open(os.path.join(short, "items.jsonl")).readlines()
    open(os.path.join(short, "items.jsonl"), "w").writelines(lines[:-3])
    lost = sorted(json.loads(line)["id"] for line in lines[-3:])
    with pytest.raises(MergeError) as incomplete:
        merge_shards([shards[0], short, shards[2]], str(tmp_path / "out"))
    [problem] = incomplete.value.problems
    assert problem.startswith(f"shard 2/3 ({short}): 3 of {len(lines)} requests unanswered ({', '.join(lost)})")

    doubled = _copy(shards[2], tmp_path / "doubled")
    borrowed = open(os.path.join(shards[0], "items.jsonl")).readline()
    with open(os.path.join(doubled, "items.jsonl"), "a") as handle:
        handle.write(borrowed)
    with pytest.raises(MergeError) as duplicated:
        merge_shards([shards[0], shards[1], doubled], str(tmp_path / "out"))
    said = " | ".join(duplicated.value.problems)
    borrowed_id = json.loads(borrowed)["id"]
    assert f"1 requests recorded that its shard did not plan ({borrowed_id})" in said
    assert f"1 requests recorded by more than one shard ({borrowed_id})" in said
    assert not os.path.exists(tmp_path / "out")

    result = CliRunner().invoke(main, ["merge", shards[0], short, shards[2], "--out", str(tmp_path / "out")])
    assert result.exit_code == 1 and "3 of" in result.output and "Traceback" not in result.output
