"""hf: and clip: names checked before anything heavy loads: a folder, or a hub id cached or
reachable; anything else one line naming both readings, at once (no retries)."""
import time

import pytest

pytest.importorskip("huggingface_hub")

from timefoil.models import SpecError, hub, load_model  # noqa: E402


@pytest.fixture
def no_network(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    for name in hub.PROXIES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(hub, "_reachable", lambda host, timeout=3.0: False)


def test_a_folder_is_taken_and_a_file_is_refused(tmp_path):
    hub.check_source("hf", str(tmp_path))
    (tmp_path / "weights.bin").write_bytes(b"")
    with pytest.raises(SpecError, match=r"is a file; give the folder that holds the model's config.json$"):
        hub.check_source("hf", str(tmp_path / "weights.bin"))


@pytest.mark.parametrize("name", ["/nonexistent", "./models/qwen", "~/weights", "a/b/c"])
def test_a_missing_path_names_both_readings(name, no_network):
    with pytest.raises(SpecError, match=rf"^hf:{name}: no folder {name} here, and '{name}' is no hub id "
                                        r"\(owner/name, e\.g\. Qwen/Qwen2-VL-7B-Instruct\): is the path right\?$"):
        hub.check_source("hf", name)


def test_a_hub_id_offline_is_one_line_at_once(no_network, monkeypatch):
    start = time.perf_counter()
    with pytest.raises(SpecError, match=r"^clip:acme/video-clip: no folder acme/video-clip here, and the hub id "
                                        r"acme/video-clip is not in the local Hugging Face cache, and huggingface\.co "
                                        r"cannot be reached \(no network\?\)"):
        hub.check_source("clip", "acme/video-clip")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(SpecError, match=r"not in the local Hugging Face cache while HF_HUB_OFFLINE is set"):
        load_model("hf:acme/video-llm")  # through the loader, before torch is imported for the model
    assert time.perf_counter() - start < 5


def test_a_cached_hub_id_or_one_that_can_be_fetched_goes_on(monkeypatch, no_network):
    asked = []
    monkeypatch.setattr(hub, "_cached", lambda name, revision: name == "acme/cached")
    monkeypatch.setattr(hub, "_reachable", lambda host, timeout=3.0: asked.append(host) or host == "hub.example")
    hub.check_source("hf", "acme/cached")
    assert asked == []  # cached: the network is not asked
    with pytest.raises(SpecError, match=r"huggingface\.co cannot be reached"):
        hub.check_source("hf", "acme/not-cached")
    monkeypatch.setenv("HF_ENDPOINT", "https://hub.example/mirror")
    hub.check_source("hf", "acme/not-cached")  # no error: transformers downloads it from there
    assert asked == ["huggingface.co", "hub.example"]


def test_missing_packages_are_named_in_one_sentence(monkeypatch):
    from timefoil import models

    monkeypatch.setattr(models, "_importable", lambda module: module == "torch")
    with pytest.raises(models.MissingExtra, match=r"^this model needs transformers and PIL, which are not installed; "
                                                  r"install them with: pip install 'timefoil\[hf\]'$"):
        models.require("hf", "torch", "transformers", "PIL")
    with pytest.raises(models.MissingExtra, match=r"^this model needs PIL, which is not installed"):
        models.require("hf", "PIL")
