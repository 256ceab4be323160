"""Chance, n and p-values from the distinct requests behind each metric (numbers by hand), and
the papers' own rows: VELOCITI facets as means of tests, VITATECS "All" and "Avg.", Vinoground's
stated chance beside the exact one and its fewer-than-3-frames warning."""
import json
import os

import numpy as np
import pytest
from click.testing import CliRunner

from helpers import pair_item
from benchmark_files import vinoground_with_videos
from timefoil.benchmarks import get_benchmark
from timefoil.cli import main
from timefoil.models import Model
from timefoil.models.base import RanksBySimilarity
from timefoil.execution.offline import answer_offline
from timefoil.models.requests import Answer
from timefoil.scoring import score_records
from timefoil.measures.stats import mean_of, proportion
from timefoil.video import write_video


class Says(Model):
    """e(V, C) from a table of captions (entailment) or a score (similarity)."""

    name = "says"

    def __init__(self, e):
        self.e = e

    def answer_entailment(self, requests, frames):
        return [Answer(raw="Yes" if self.e[r.caption] > .5 else "No",
                       probs={"yes": self.e[r.caption], "no": 1 - self.e[r.caption]}) for r in requests]

    def answer_similarity(self, requests, frames):
        return [Answer(score=self.e[r.text]) for r in requests]


def scored(items, protocol, e, spec=None, benchmark="t"):
    records = answer_offline(items, protocol, Says(e))
    kwargs = {"spec": spec} if spec else {}
    report = score_records(records, benchmark=benchmark, model="m", protocol=protocol, **kwargs)
    return {m.name: m for m in report.metrics}


def vilma_group(g, same_caption=True):
    """A ViLMA main item and its proficiency item on the same video; the proficiency caption is
    the main caption (as in the action-replacement, actor-swapping and spatial files)."""
    caption = f"cap {g}"
    return [pair_item(f"m{g}", f"g{g}", [caption, f"foil {g}"]),
            pair_item(f"p{g}", f"g{g}", [caption if same_caption else f"prof {g}", f"prof foil {g}"],
                      role="proficiency")]


def test_vilma_proficiency_caption_equal_to_the_main_one_is_asked_once():
    """Entailment P+T needs Yes on the caption and No on both foils: three coins, 1/8, not
    (1/4)^2 = 1/16. Similarity: the caption above both foils, 1/3, not 1/4. Two groups both
    right: p = (1/8)^2 under entailment, where independent items would claim (1/16)^2."""
    items = vilma_group(0) + vilma_group(1)
    e = {"cap 0": .9, "foil 0": .1, "prof foil 0": .2, "cap 1": .8, "foil 1": .3, "prof foil 1": .4}
    entail = scored(items, "entailment", e)
    assert entail["overall/P+T"].chance == pytest.approx(100 / 8)
    assert entail["overall/P+T"].p_value == pytest.approx(1 / 64)
    similarity = scored(items, "similarity", e)
    assert similarity["overall/P+T"].chance == pytest.approx(100 / 3)
    assert similarity["overall/P+T"].p_value == pytest.approx(1 / 9)
    # a proficiency caption of its own: the items share nothing, chance stays the product
    apart = scored(vilma_group(0, same_caption=False), "entailment", {**e, "prof 0": .9})
    assert apart["overall/P+T"].chance == pytest.approx(100 / 16)


def test_temporalbench_mba_under_entailment_shares_the_positive():
    """Four questions of one video, each its positive against one negative: MBA needs Yes on the
    positive and No on four negatives, (1/2)^5 = 1/32. acc(pos) counts the positive in each
    question, its p-value from the two distinct positives."""
    items = [pair_item(f"v{v}q{q}", f"v{v}", [f"true {v}", f"neg {v} {q}"]) for v in range(2) for q in range(4)]
    e = {f"true {v}": .9 for v in range(2)} | {f"neg {v} {q}": .1 for v in range(2) for q in range(4)}
    e["true 1"] = .2  # video 1's positive said No: all four of its questions wrong
    metrics = scored(items, "entailment", e)
    mba = metrics["overall/group"]
    assert mba.chance == pytest.approx(100 / 32) and mba.value == 50.0 and mba.n == 2
    assert mba.p_value == pytest.approx(1 - (31 / 32) ** 2)  # P(at least one of two videos right)
    positives = metrics["overall/acc(pos)"]
    assert (positives.n, positives.value, positives.chance) == (8, 50.0, 50.0)
    # 4 of 8 rows right, but the rows are two coins of four: P(X >= 4) = P(at least one Yes) = 3/4,
    # where eight independent rows would give P(Binomial(8, 1/2) >= 4) = 0.637
    assert positives.p_value == pytest.approx(0.75)
    assert positives.extra["sharing"]["distinct requests"] == 2 and "counted" in positives.extra["sharing"]
    strict = metrics["overall/StrictVLE"]
    # 4 of 8 right. Per video: No on the positive (1/2) gives 0, else Binomial(4, 1/2); the two
    # videos convolved: P(X >= 4), not the independent items' P(Binomial(8, 1/4) >= 4) = 0.114
    one = np.array([.5 + .5 / 16, 4 / 32, 6 / 32, 4 / 32, 1 / 32])
    assert strict.p_value == pytest.approx(np.convolve(one, one)[4:].sum())
    assert strict.extra["sharing"] == {"units sharing requests": 8, "independent blocks": 2}


def test_velociti_positive_asked_in_two_tests_policy():
    """The same (video, positive) in agent_bind and chrono: each test counts it; overall counts it
    in both items in acc(pos) (as the paper) and enumerates the two items jointly; the averages say
    how many requests the tests share and that they take the tests as independent."""
    items = [pair_item("a0", "a0", ["shared", "neg a0"], test="agent_bind", vid="v"),
             pair_item("a1", "a1", ["pos a1", "neg a1"], test="agent_bind", vid="w"),
             pair_item("c0", "c0", ["shared", "neg c0"], test="chrono", vid="v")]
    e = {"shared": .9, "neg a0": .1, "pos a1": .9, "neg a1": .1, "neg c0": .1}
    metrics = scored(items, "entailment", e, get_benchmark("velociti").summary, "velociti")
    assert metrics["overall/acc(pos)"].n == 3 and metrics["agent_bind/acc(pos)"].n == 2
    # three rows right, two distinct positives behind them: P = (1/2)^2, not (1/2)^3
    assert metrics["overall/acc(pos)"].p_value == pytest.approx(1 / 4)
    assert metrics["chrono/acc(pos)"].n == 1
    # overall StrictVLE: 3 of 3 right. a0 and c0 share the positive (3 coins, 1/8), a1 alone (1/4):
    # P = 1/32, where independent items would claim (1/4)^3 = 1/64
    assert metrics["overall/StrictVLE"].p_value == pytest.approx(1 / 32)
    average = metrics["overall/average StrictVLE (2 of 7 tests)"]
    assert average.extra["shared_requests"] == 1 and "independent" in average.extra["shared_policy"]


def test_velociti_facets_are_unweighted_means_of_their_tests():
    """agent_random 1 of 1 right, agent_bind 0 of 3: the agent facet is (100 + 0) / 2 = 50, not
    the pooled 25."""
    items = [pair_item("r0", "r0", ["pos r0", "neg r0"], test="agent_random")]
    items += [pair_item(f"b{k}", f"b{k}", [f"pos b{k}", f"neg b{k}"], test="agent_bind") for k in range(3)]
    e = {"pos r0": .9, "neg r0": .1} | {f"pos b{k}": .1 for k in range(3)} | {f"neg b{k}": .1 for k in range(3)}
    metrics = scored(items, "entailment", e, get_benchmark("velociti").summary, "velociti")
    facet = metrics["facet:agent/StrictVLE (2 of 3 tests)"]
    assert facet.value == 50.0 and facet.chance == 25.0


def test_vitatecs_all_is_the_mean_of_caption_and_counterfactual_and_avg_spans_aspects():
    """Two aspects; in each the video ranks its own caption first. R@1 caption 100 in both,
    counterfactual 0 (the caption holds the top slot), All (100 + 0) / 2 = 50 per aspect, and
    the Avg. column the mean over the aspects."""
    items = [pair_item(f"{a}{k}", f"{a}{k}", [f"{a}{k} cap", f"{a}{k} cf"], test=a, vid=f"{a}{k}")
             for a in ("direction", "intensity") for k in range(2)]

    class Ranker(RanksBySimilarity, Model):
        def answer_similarity(self, requests, frames):
            shown = [os.path.basename(r.video.path)[:-4] for r in requests]
            return [Answer(score={f"{v} cap": 2.0, f"{v} cf": 1.0}.get(r.text, 0.0)) for r, v in zip(requests, shown)]

    records = answer_offline(items, "retrieval", Ranker())
    report = score_records(records, benchmark="vitatecs", model="m", protocol="retrieval",
                           spec=get_benchmark("vitatecs").summary)
    metrics = {m.name: m for m in report.metrics}
    for aspect in ("direction", "intensity"):
        assert metrics[f"{aspect}/R@1 caption"].value == 100.0
        assert metrics[f"{aspect}/R@1 counterfactual"].value == 0.0
        assert metrics[f"{aspect}/R@1 All"].value == 50.0  # "either" would say 100
    # 4 texts per aspect: chance 1/4 for each row at k = 1
    average = metrics["overall/average R@1 All (2 of 6 tests)"]
    assert average.value == 50.0 and average.chance == pytest.approx(25.0)
    assert metrics["overall/average R@10 caption (2 of 6 tests)"].value == 100.0


def test_an_average_below_chance_is_marked():
    parts = [proportion(f"t{i}", [False] * 40, [0.5] * 40) for i in range(3)]
    assert mean_of("average", parts).below_chance
    assert not mean_of("average", [proportion("t", [True] * 20 + [False] * 20, [0.5] * 40)]).below_chance


def test_vinoground_states_the_papers_chance_beside_the_exact_one(tmp_path):
    """Asked as four independent two-way choices, the group score's chance is (1/2)^4 = 6.25;
    the paper marks its table against 16.67. Two frames cannot show both joined clips: the video
    and group scores say so, the text score stays valid."""
    os.makedirs(tmp_path / "vino")
    data, out = vinoground_with_videos(tmp_path / "vino"), str(tmp_path / "run")
    cli = CliRunner()
    result = cli.invoke(main, ["run", "vinoground", "--model", "random", "--data", data, "--frames", "2",
                               "--out", out, "--cache-dir", str(tmp_path / "c"), "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "paper c 16.7" in result.output
    report = json.loads(cli.invoke(main, ["score", out, "--json"]).output)
    metrics = {m["name"]: m for m in report["metrics"]}
    group = metrics["overall/group"]
    assert group["chance"] == pytest.approx(6.25) and group["paper_chance"] == 16.67
    assert "paper_chance" not in metrics["overall/text"]  # 25 both ways
    assert "warning" in metrics["overall/video"] and "warning" in metrics["overall/group"]
    assert "warning" not in metrics["overall/text"]


def test_published_joined_videos_in_fewer_than_three_frames_are_flagged(tmp_path):
    root = tmp_path / "vino"
    os.makedirs(root)
    data = vinoground_with_videos(root)
    os.makedirs(root / "vinoground_videos_concated")
    for n in range(2):
        write_video(str(root / "vinoground_videos_concated" / f"{n}.mp4"),
                    [np.full((16, 16, 3), 10 * t, np.uint8) for t in range(12)], 6)
    out, cli = str(tmp_path / "run"), CliRunner()
    result = cli.invoke(main, ["run", "vinoground", "--model", "random", "--data", data, "--frames", "2",
                               "--bench-arg", "concatenated=published", "--out", out,
                               "--cache-dir", str(tmp_path / "c"), "--no-progress"])
    assert result.exit_code == 0, result.output
    metrics = {m["name"]: m for m in json.loads(cli.invoke(main, ["score", out, "--json"]).output)["metrics"]}
    assert "warning" in metrics["overall/video"] and "warning" not in metrics["overall/text"]


def test_temporalbench_long_qa_without_category(tmp_path):
    records = [{"idx": "v_0", "video_name": "long_video/a.mp4", "dataset": "COIN",
                "question": "Which caption?\nA. one then two\nB. two then one", "GT": "A"}]
    json.dump(records, open(tmp_path / "temporalbench_long_qa.json", "w"))
    items = get_benchmark("temporalbench").load(str(tmp_path), subset="long_qa")
    assert items[0].categories == ("COIN",)
    json.dump(records, open(tmp_path / "temporalbench_short_qa.json", "w"))
    with pytest.raises(Exception, match="category"):  # the short QA's scorers read it
        get_benchmark("temporalbench").load(str(tmp_path), subset="short_qa")
