"""A local folder's weights are hashed on a thread of their own while the model loads: the
fingerprint asked for after the load is that hash, equal to one computed afresh, and a weight
file written again since is hashed again."""
import os
import threading

from timefoil.models.local import hf_loading
from timefoil.models.local.hf_loading import hash_weights_meanwhile, weights_fingerprint


def test_the_hash_made_during_the_load_is_the_fingerprint_unless_a_file_was_written_since(tmp_path, monkeypatch):
    monkeypatch.setenv("TIMEFOIL_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "llama"}')
    (folder / "model.safetensors").write_bytes(os.urandom(1 << 16))
    fresh = hf_loading._weights_fingerprint(str(folder))
    threads = []
    start = threading.Thread.start
    monkeypatch.setattr(threading.Thread, "start", lambda self: threads.append(self.name) or start(self))
    hash_weights_meanwhile(str(folder))
    assert threads == ["timefoil-weights-hash"]
    assert weights_fingerprint(str(folder)) == fresh
    hash_weights_meanwhile(str(folder))
    hf_loading._HASHING[str(folder), None].result(timeout=30)  # hashed, then the weights written again
    (folder / "model.safetensors").write_bytes(os.urandom(1 << 16))
    again = weights_fingerprint(str(folder))
    assert again != fresh and again == hf_loading._weights_fingerprint(str(folder))


def test_the_hash_made_during_the_load_keeps_its_memo_in_the_runs_cache_only(tmp_path, monkeypatch):
    """The loader names the run's cache folder before the load starts: the weights' hashes are
    kept there, and the default cache folder is never made."""
    monkeypatch.setenv("TIMEFOIL_CACHE", str(tmp_path / "default"))
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "llama"}')
    (folder / "model.safetensors").write_bytes(os.urandom(1 << 16))
    run_cache = tmp_path / "run-cache"
    hash_weights_meanwhile(str(folder), str(run_cache))
    fresh = hf_loading._weights_fingerprint(str(folder), str(tmp_path / "afresh"))
    assert weights_fingerprint(str(folder), str(run_cache)) == fresh
    assert os.listdir(run_cache) and not (tmp_path / "default").exists()
