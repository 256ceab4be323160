"""Models are as pluggable as benchmarks: a package outside timefoil declares one under the
``timefoil.models`` entry point group, and ``timefoil list`` and ``timefoil run`` take it.
The plugin is examples/model_plugin, installed by putting its folder (package + dist-info,
what pip writes) on the path of a fresh interpreter."""
import json
import os
import sys
import tomllib

from faults import cli

from timefoil.models import MODELS, ModelLoader, check_model_spec, load_plugins
from helpers import REPO, install_package

PLUGIN = os.path.join(REPO, "examples", "model_plugin")


def installed(*folders) -> dict:
    return {"PYTHONPATH": os.pathsep.join([*map(str, folders), os.environ.get("PYTHONPATH", "")])}


def broken_site(tmp_path):
    """An installed package whose entry point names a module that does not exist."""
    return install_package(tmp_path / "site", "broken_models", None, "broken = broken_models.nowhere:MODEL")


def test_the_example_plugin_runs_through_timefoil_run(tmp_path):
    env = installed(PLUGIN, broken_site(tmp_path))
    listed = cli("list", "--json", env=env, timeout=60)
    assert listed.returncode == 0, listed.stderr
    assert "length-bias probe" in json.loads(listed.stdout)["models"]["caption-length"]
    # the broken plugin: one line on stderr naming it, and timefoil goes on
    said = [line for line in listed.stderr.splitlines() if line.strip()]
    assert len(said) == 1 and said[0].startswith("timefoil: model plugin 'broken' could not be loaded ("), said

    made = cli("generate", "synth", "--out", str(tmp_path / "suite"), "--per-family", "1", env=env, timeout=120)
    assert made.returncode == 0, made.stderr
    ran = cli("run", "synth", "--data", str(tmp_path / "suite"), "--model", "caption-length", "--model-arg",
              "prefer=shorter", "--protocol", "similarity", "--out", str(tmp_path / "run"), "--cache-dir",
              str(tmp_path / "cache"), "--no-progress", env=env, timeout=120)
    assert ran.returncode == 0, ran.stderr
    records = [json.loads(line) for line in open(tmp_path / "run" / "items.jsonl")]
    scores = {r["request"]["text"]: r["answer"]["score"] for r in records}
    # counted by hand: 4 words, and 11 words, shorter preferred so negated
    assert scores["the triangle changes colour"] == -4.0
    assert scores["the yellow square moves up while the white triangle moves down"] == -11.0
    assert records and all(r["answer"]["score"] == -len(r["request"]["text"].split()) for r in records)
    run_json = json.load(open(tmp_path / "run" / "run.json"))
    # a plugin's answers are keyed by how it was asked for too, whatever its own fingerprint says
    assert run_json["model_fingerprint"] == {"name": "caption-length", "prefer": "shorter", "loaded_as": {
        "spec": "caption-length", "options": {"prefer": "shorter"}}}
    assert run_json["origins"] == {
        "benchmark": {"name": "synth", "from": "built-in"},
        "model": {"name": "caption-length", "from": "plugin", "distribution": "timefoil-caption-length",
                  "version": "1.0", "entry_point": "caption-length = timefoil_caption_length"}}


def test_a_plugins_own_refusal_is_one_line_and_exit_1(tmp_path):
    made = cli("generate", "synth", "--out", str(tmp_path / "suite"), "--per-family", "1", timeout=120)
    assert made.returncode == 0, made.stderr
    ran = cli("run", "synth", "--data", str(tmp_path / "suite"), "--model", "caption-length", "--model-arg",
              "prefer=middling", "--out", str(tmp_path / "run"), env=installed(PLUGIN), timeout=120)
    assert ran.returncode == 1 and "Traceback" not in ran.stderr
    assert ran.stderr.strip().splitlines()[-1].endswith("prefer must be one of longer, shorter, got 'middling'")


def test_the_committed_dist_info_declares_what_pyproject_declares():
    """The dist-info is what installing the example writes: the two must name the same entry."""
    with open(os.path.join(PLUGIN, "pyproject.toml"), "rb") as handle:
        declared = tomllib.load(handle)["project"]["entry-points"]["timefoil.models"]
    written = open(os.path.join(PLUGIN, "timefoil_caption_length-1.0.dist-info", "entry_points.txt")).read()
    assert written.splitlines() == ["[timefoil.models]"] + [f"{k} = {v}" for k, v in declared.items()]


def test_load_plugins_registers_a_loader_or_a_module_and_skips_a_broken_one(tmp_path, monkeypatch, capsys):
    site = broken_site(tmp_path)
    install_package(site, "two_models", (
        "from timefoil.models import ModelLoader\nfrom timefoil.models.reference import ConstantModel\n"
        "MODEL = ModelLoader('from-module', lambda arg, options, cache_dir: ConstantModel(), 'declared as MODEL')\n"
        "LOADER = ModelLoader('from-object', lambda arg, options, cache_dir: ConstantModel(), 'named itself')\n"
        "NOT_A_LOADER = 42\n"), "one = two_models\ntwo = two_models:LOADER\nwrong = two_models:NOT_A_LOADER")
    monkeypatch.syspath_prepend(str(site))
    for name in ("from-module", "from-object"):
        monkeypatch.delitem(MODELS, name, raising=False)  # undone after the test
    try:
        assert sorted(load_plugins()) == ["from-module", "from-object"]
        assert isinstance(MODELS["from-object"], ModelLoader) and MODELS["from-object"].description == "named itself"
        check_model_spec("from-module")  # known now: no error
        assert MODELS.origin("from-object") == {"name": "from-object", "from": "plugin", "distribution": "two-models",
                                                "version": "1.0", "entry_point": "two = two_models:LOADER"}
        err = capsys.readouterr().err
        # loaded again (as every fresh interpreter does), a plugin replaces itself: no refusal
        assert sorted(load_plugins()) == ["from-module", "from-object"]
        assert "refused" not in capsys.readouterr().err
        assert "model plugin 'broken' could not be loaded (ModuleNotFoundError" in err
        assert "model plugin 'wrong' could not be loaded (TypeError: two_models:NOT_A_LOADER is a int, " \
               "not a ModelLoader)" in err
    finally:
        for name in ("from-module", "from-object"):
            MODELS.pop(name, None)
        sys.modules.pop("two_models", None)


def plain_function_site(tmp_path):
    """An installed package whose entry point names a plain loader function, no ModelLoader."""
    return install_package(tmp_path / "plain-site", "plain_models", (
        "from timefoil.models.reference import ConstantModel\n\n\n"
        "def load(arg, options, cache_dir):\n"
        "    \"\"\"the constant model, loaded by a plain function\"\"\"\n"
        "    return ConstantModel()\n"), "plain = plain_models:load")


def test_a_plain_loader_function_is_a_plugin_named_by_its_entry_point(tmp_path):
    env = installed(plain_function_site(tmp_path))
    listed = cli("list", "--json", env=env, timeout=60)
    assert listed.returncode == 0 and not listed.stderr.strip(), listed.stderr
    assert json.loads(listed.stdout)["models"]["plain"] == "the constant model, loaded by a plain function"
    made = cli("generate", "synth", "--out", str(tmp_path / "suite"), "--per-family", "1", env=env, timeout=120)
    assert made.returncode == 0, made.stderr
    ran = cli("run", "synth", "--data", str(tmp_path / "suite"), "--model", "plain", "--protocol", "entailment",
              "--limit", "2", "--out", str(tmp_path / "run"), "--cache-dir", str(tmp_path / "cache"), "--no-progress",
              env=env, timeout=120)
    assert ran.returncode == 0, ran.stderr
    records = [json.loads(line) for line in open(tmp_path / "run" / "items.jsonl")]
    assert records and all(r["answer"]["raw"] == "Yes" for r in records)  # ConstantModel: always Yes
