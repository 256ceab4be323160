"""Planning is its own step: a plan needs no model, and checking a stored run builds none."""
import pytest

import timefoil.execution.runner as runner_module
import timefoil.models as models
from timefoil import RunConfig, run
from timefoil.commands.checking import check_run
from timefoil.execution.plan import by_content, plan_run

pytestmark = pytest.mark.suite(per_family=2, seed=4)


def _no_model(*args, **kwargs):
    raise AssertionError("a model was loaded")


def test_a_plan_loads_no_model_and_asks_each_option_of_each_item_once(suite, monkeypatch):
    monkeypatch.setattr(models, "load_model", _no_model)
    plan = plan_run(RunConfig("synth", "hf:/nowhere/not-a-model", data_dir=suite, protocol="similarity"))
    # similarity scores every (video, option) pair of every item: by hand, the sum of the option counts
    assert len(plan.full) == sum(item.n_options for item in plan.items) and plan.part == plan.full
    users, requests = by_content(plan.full)
    texts = {(item.videos[0].key(), text) for item in plan.items for text in item.texts}
    assert len(requests) == len(texts)  # a pair two items share is asked once
    assert sum(len(u) for u in users.values()) == len(plan.full)


def test_check_compares_a_run_with_its_plan_without_a_runner_or_a_model(suite, tmp_path, monkeypatch):
    out = str(tmp_path / "run")
    config = RunConfig("synth", "bag-of-frames", data_dir=suite)
    run(config, out, cache_dir=str(tmp_path / "c"), progress=False)
    planned = len(plan_run(config).full)
    monkeypatch.setattr(models, "load_model", _no_model)
    monkeypatch.setattr(runner_module, "Runner", _no_model)
    problems, counts = check_run(out)
    assert problems == [] and counts["planned"] == counts["records"] == planned
