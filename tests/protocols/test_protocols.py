"""The protocol layer: a judge that cannot change another run's numbers, a protocol added
from outside timefoil, declarations that hold the knowledge, model options typed by the
adapter's signature."""
import json
import os
import re
from collections import Counter
from dataclasses import dataclass, replace

import numpy as np
import pytest
from click.testing import CliRunner

from timefoil.benchmarks import BENCHMARKS, get_benchmark
from timefoil.cli import main
from timefoil.models import MODELS, Model, ModelLoader, load_model
from timefoil.core.options import typed_options
from timefoil.protocols import PROTOCOLS, Outcome, PlannedRequest, Protocol, get_protocol
from timefoil.protocols import register as register_protocol
from timefoil.protocols.choice import JUDGE_TWO
from timefoil.models.requests import Answer, Request
from timefoil import RunConfig, RunError, run, score_run
from timefoil.execution.runner import Runner
from timefoil.measures.stats import proportion
from timefoil.video import write_video

pytestmark = pytest.mark.suite(per_family=2, seed=3)


# -- the judge ----------------------------------------------------------------------------
class Mumbler(Model):
    """Choice answers: a bare letter for every third request, else free text naming no
    letter, distinct per request (so each needs the judge once)."""

    name = "mumbler"

    def answer_choice(self, requests, frames):
        out = []
        for request in requests:
            digest = int(request.key()[:8], 16)
            out.append(Answer(raw=request.labels[digest % 2]) if digest % 3 == 0
                       else Answer(raw=f"hmm, the {'earlier' if digest % 2 else 'later'} one #{digest}"))
        return out


class CountingJudge(Model):
    name = "counting-judge"

    def __init__(self, asked: Counter):
        self.asked = asked

    def answer_generation(self, requests, frames):
        out = []
        for request in requests:
            response = re.findall(r"====(.*?)====", request.text, re.S)[-1]
            self.asked[response] += 1
            out.append(Answer(raw="A" if "earlier" in response else "B"))
        return out


def _score(config, run_dir, cache):
    run(config, run_dir, cache_dir=cache, model=Mumbler(), progress=False)
    return score_run(run_dir).to_json()


def test_a_judge_never_changes_another_runs_numbers(suite, tmp_path, monkeypatch):
    asked = Counter()
    monkeypatch.setitem(MODELS, "counting-judge",
                        ModelLoader("counting-judge", lambda arg, options, cache_dir: CountingJudge(asked), "test"))
    plain = RunConfig("synth", "mumbler", data_dir=suite, protocol="choice", order_policy="both")
    judged = replace(plain, judge="counting-judge")
    fresh_plain = _score(plain, str(tmp_path / "fp"), str(tmp_path / "c-fp"))
    fresh_judged = _score(judged, str(tmp_path / "fj"), str(tmp_path / "c-fj"))
    assert fresh_judged["parse_failures"] == 0 < fresh_plain["parse_failures"]  # the judge matters here
    assert fresh_judged["metrics"] != fresh_plain["metrics"]
    free_text = set(asked)
    unparsed = {json.loads(line)["answer"]["raw"] for line in open(tmp_path / "fp" / "items.jsonl")
                if json.loads(line)["parsed"]["status"] != "ok"}
    assert free_text == unparsed and set(asked.values()) == {1}

    for order in (("judged", "plain"), ("plain", "judged")):
        asked.clear()
        cache = str(tmp_path / f"shared-{order[0]}")
        for name in order:
            config, expected = (judged, fresh_judged) if name == "judged" else (plain, fresh_plain)
            assert _score(config, str(tmp_path / f"{order[0]}-{name}"), cache) == expected, (order, name)
        assert set(asked) == free_text and set(asked.values()) == {1}  # once per distinct raw answer

    asked.clear()  # a third judged run on a shared cache asks the judge nothing
    assert _score(judged, str(tmp_path / "again"), str(tmp_path / "shared-judged")) == fresh_judged
    assert not asked


def test_the_verdict_sits_beside_the_cached_answer(suite, tmp_path, monkeypatch):
    asked = Counter()
    monkeypatch.setitem(MODELS, "counting-judge",
                        ModelLoader("counting-judge", lambda arg, options, cache_dir: CountingJudge(asked), "test"))
    config = RunConfig("synth", "mumbler", data_dir=suite, protocol="choice", judge="counting-judge", limit=3)
    run(config, str(tmp_path / "r"), cache_dir=str(tmp_path / "c"), model=Mumbler(), progress=False)
    records = [json.loads(line) for line in open(tmp_path / "r" / "items.jsonl")]
    judged = [r for r in records if r["judge"]]
    assert judged and all("judge" not in r["answer"]["meta"] for r in records)
    assert all(r["judge"]["model"] == "counting-judge" and r["parsed"]["status"] == "ok" for r in judged)
    assert all(r["judge"] is None for r in records if re.fullmatch("[AB]", r["answer"]["raw"]))


def test_judge_prompt_is_the_papers_for_two_options_and_lists_more():
    choice = get_protocol("choice")
    two = {"labels": ["A", "B"], "option_texts": ["a dog sits", "a dog runs"]}
    ask = choice.judge_request(two, Answer(raw="the running one"))
    assert ask.text == JUDGE_TWO.replace("<MODEL RESPONSE>", "the running one") and ask.video is None
    assert choice.judge_request(two, Answer(raw="(B)")) is None  # parses: no judge needed
    assert choice.judge_request(two, Answer(error="api error")) is None
    four = {"labels": ["A", "B", "C", "D"], "option_texts": ["one", "two", "three", "four"]}
    ask = choice.judge_request(four, Answer(raw="the one with three, surely"))
    assert "A. one\nB. two\nC. three\nD. four" in ask.text and "(A, B, C, D)" in ask.text
    assert "====the one with three, surely====" in ask.text and "either A or B" not in ask.text
    # the verdict is read against the request's own labels
    assert choice.read(four, Answer(raw="the one with three, surely"), {"raw": "C", "error": None}).value == "C"
    assert not choice.read(four, Answer(raw="the one with three, surely"), None).ok
    # "the third" names an option by its place: read without a judge
    assert choice.read(four, Answer(raw="the third, surely"), None).value == "C"
    assert choice.judge_request(four, Answer(raw="the third, surely")) is None


# -- a protocol from outside ----------------------------------------------------------------
@dataclass
class OddOutcome(Outcome):
    chosen: int | None = None

    def correct(self, tie_policy="strict"):
        return self.chosen is not None and self.chosen != self.target

    def chance(self):
        return (self.n_options - 1) / self.n_options


class OddOneOut(Protocol):
    """Which caption does NOT describe the video? Any foil is right."""

    name, kind = "odd-one-out", "odd_one_out"
    description = "name the caption that does not fit"
    metrics = {"odd accuracy": "a foil named as the odd one"}

    def plan_item(self, item, context):
        text = "Which caption does not fit? " + " | ".join(item.texts)
        request = Request(self.kind, context.video(item.videos[0]), text, context.shown_sampling,
                          labels=tuple("ABCDEFGH"[: item.n_options]))
        return [PlannedRequest(f"{item.id}|odd", request, {}, 1)]

    def new_outcome(self, item):
        return OddOutcome(item)

    def take(self, outcome, request, answer, verdict):
        if not answer.error and answer.raw in request["labels"]:
            outcome.chosen = request["labels"].index(answer.raw)
        elif not answer.error:
            outcome.parse_failures += 1

    def item_metrics(self, outcomes, tie_policy):
        return [proportion("odd accuracy", [o.correct() for o in outcomes], [o.chance() for o in outcomes])]


class LastLabel(Model):
    name = "last-label"

    def answer_odd_one_out(self, requests, frames):
        return [Answer(raw=r.labels[-1]) for r in requests]


def test_a_protocol_defined_outside_runs_end_to_end(suite, tmp_path, monkeypatch):
    monkeypatch.setitem(PROTOCOLS, "odd-one-out", OddOneOut())
    register_protocol(PROTOCOLS["odd-one-out"])  # the public way; the monkeypatch undoes it
    synth = get_benchmark("synth")  # offers the new protocol without being told: it accepts text options
    monkeypatch.setitem(MODELS, "last-label", ModelLoader("last-label", lambda arg, options, cache_dir: LastLabel(),
                                                          "test"))
    cli, out = CliRunner(), str(tmp_path / "odd")
    result = cli.invoke(main, ["run", "synth", "--model", "last-label", "--data", suite, "--protocol", "odd-one-out",
                               "--out", out, "--cache-dir", str(tmp_path / "c"), "--no-progress"])
    assert result.exit_code == 0, result.output
    # By hand: the last caption is a foil unless it is the target.
    items = [i for i in synth.load(suite)]
    main_items = [i for i in items if not i.is_proficiency]
    expected = 100 * sum(i.target != i.n_options - 1 for i in main_items) / len(main_items)
    scored = json.loads(cli.invoke(main, ["score", out, "--json"]).output)
    overall = next(m for m in scored["metrics"] if m["name"] == "overall/odd accuracy")
    assert overall["value"] == pytest.approx(expected, abs=1e-4) and scored["items"] == len(items)
    assert overall["chance"] == pytest.approx(100 * np.mean([(i.n_options - 1) / i.n_options for i in main_items]))
    html = str(tmp_path / "report.html")
    result = cli.invoke(main, ["report", out, "--html", html, "--csv", str(tmp_path / "t.csv"), "--no-thumbnails"])
    assert result.exit_code == 0, result.output
    assert "odd accuracy" in open(html, encoding="utf-8").read()
    assert "odd-one-out" in cli.invoke(main, ["list"]).output


def test_a_protocol_the_benchmark_does_not_declare_is_refused(suite, tmp_path):
    with pytest.raises(RunError, match="synth has no 'generation' protocol"):
        Runner(RunConfig("synth", "random", data_dir=suite, protocol="generation"), str(tmp_path / "r"))


# -- declarations hold the knowledge --------------------------------------------------------
def test_velociti_without_sampling_flags_keeps_its_one_fps(tmp_path):
    root = tmp_path / "velociti"
    os.makedirs(root / "videos")
    write_video(str(root / "videos" / "v_abc_seg_0_3.mp4"), np.zeros((30, 32, 32, 3), np.uint8), fps=10)
    with open(root / "velociti.jsonl", "w") as handle:
        handle.write(json.dumps({"test_name": "chrono", "video_id": "v_abc_seg_0_3", "pos": "a", "neg": "b"}) + "\n")
    cli = CliRunner()
    args = ["run", "velociti", "--model", "random", "--data", str(root), "--cache-dir", str(tmp_path / "c"),
            "--no-progress"]
    assert cli.invoke(main, args + ["--out", str(tmp_path / "r1")]).exit_code == 0
    sampling = json.load(open(tmp_path / "r1" / "run.json"))["config"]["sampling"]
    assert sampling["fps"] == 1.0 and sampling["frames"] is None
    records = [json.loads(line) for line in open(tmp_path / "r1" / "items.jsonl")]
    assert {r["frames"]["n"] for r in records} == {3}  # 3 s at 1 fps
    # a flag given changes only itself
    assert cli.invoke(main, args + ["--out", str(tmp_path / "r2"), "--frame-order", "reversed"]).exit_code == 0
    sampling = json.load(open(tmp_path / "r2" / "run.json"))["config"]["sampling"]
    assert sampling["fps"] == 1.0 and sampling["order"] == "reversed"
    assert cli.invoke(main, args + ["--out", str(tmp_path / "r3"), "--frames", "4"]).exit_code == 0
    sampling = json.load(open(tmp_path / "r3" / "run.json"))["config"]["sampling"]
    assert sampling["frames"] == 4 and sampling["fps"] is None


def test_a_run_of_an_unknown_benchmark_is_not_scored_silently(suite, tmp_path):
    run_dir = str(tmp_path / "r")
    run(RunConfig("synth", "random", data_dir=suite, limit=1), run_dir, cache_dir=str(tmp_path / "c"),
        progress=False)
    meta = json.load(open(os.path.join(run_dir, "run.json")))
    meta["config"]["benchmark"] = "no-such-benchmark"
    json.dump(meta, open(os.path.join(run_dir, "run.json"), "w"))
    with pytest.raises(RunError, match="unknown benchmark 'no-such-benchmark'"):
        score_run(run_dir)


def test_prepare_sources_are_declared():
    assert get_benchmark("velociti").hub_dataset == "katha-ai-iiith/VELOCITI"
    assert all(b.hub_dataset or b.obtain for b in BENCHMARKS.values())


def test_model_options_are_typed_by_the_adapters_signature():
    from timefoil.models.local.hf_generative import HFGenerative
    from timefoil.models.served.openai import OpenAICompatible

    typed = typed_options(HFGenerative, {"revision": "2024", "batch_size": "4", "prefix_reuse": "false",
                                         "max_new_tokens": "none", "dtype": "bfloat16"})
    assert typed == {"revision": "2024", "batch_size": 4, "prefix_reuse": False, "max_new_tokens": None,
                     "dtype": "bfloat16"}
    assert typed_options(OpenAICompatible, {"seed": "7", "timeout": "2.5", "logprobs": "no"}) == \
        {"seed": 7, "timeout": 2.5, "logprobs": False}
    assert load_model("random", {"seed": "5"}).seed == 5
    assert load_model("bag-of-frames", {"tolerance": "9"}).tolerance == 9
    with pytest.raises(ValueError, match=r"unknown model option 'batch' \(did you mean batch_size\?\); accepted: "
                                         r".*batch_size"):
        typed_options(HFGenerative, {"batch": "3"})
    with pytest.raises(ValueError, match="batch_size: expected int, got 'many'"):
        typed_options(HFGenerative, {"batch_size": "many"})


def test_blind_lm_converts_its_weights_into_the_runs_cache(suite, tmp_path, monkeypatch):
    import timefoil.models.local.text_models as text_models
    from timefoil.core.weights import ModelUnavailable

    seen = []

    def refuse(cache_dir):
        seen.append(cache_dir)
        raise ModelUnavailable("not needed here")

    monkeypatch.setattr(text_models, "smollm2_path", refuse)
    with pytest.raises(ModelUnavailable):
        Runner(RunConfig("synth", "blind-lm", data_dir=suite), str(tmp_path / "r"), cache_dir=str(tmp_path / "mine"))
    assert seen == [str(tmp_path / "mine")]
