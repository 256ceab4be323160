"""The frame and response caches: budget, compression, the cache command, corruption."""
import os
from helpers import cli


def test_a_4k_clips_frames_are_compressed_and_the_cache_stays_within_its_budget(tmp_path, monkeypatch):
    import numpy as np

    from timefoil.core.items import VideoRef
    from timefoil.video import FrameStore, Sampling, write_video
    from timefoil.video.diskcache import FrameDiskCache

    height, width = 2160, 3840
    ramp = np.linspace(0, 255, width, dtype=np.float32)[None, :, None]
    frames = [np.broadcast_to((ramp + 8 * t) % 256, (height, width, 3)).astype(np.uint8) for t in range(8)]
    path = str(tmp_path / "4k.mp4")
    write_video(path, frames, fps=4)
    cache = str(tmp_path / "cache")
    one = FrameStore(cache_dir=cache).get(VideoRef.file(path), Sampling(frames=8))
    raw = one.array.nbytes
    size, count = FrameDiskCache(cache).usage()
    assert raw == 8 * height * width * 3 and count == 1 and size < raw / 20  # 199 MB raw, stored compressed
    assert np.array_equal(FrameStore(cache_dir=cache).get(VideoRef.file(path), Sampling(frames=8)).array,
                          one.array)  # lossless, read back from disk
    first = FrameDiskCache(cache).entries()[0][2]
    budget = int(size * 2.5)  # the 8-, 7-, 6- and 5-frame entries together need about 3.25 times one
    monkeypatch.setenv("TIMEFOIL_CACHE_MAX", str(budget))
    store = FrameStore(cache_dir=cache)
    for n in (7, 6, 5):
        store.get(VideoRef.file(path), Sampling(frames=n))
        assert FrameDiskCache(cache).usage()[0] <= budget
    assert not os.path.exists(first) and len(FrameDiskCache(cache).entries()) == 3  # the least recent went


def test_the_cache_command_and_a_corrupt_response_cache(tmp_path):
    from timefoil.synth import generate

    suite, cache = str(tmp_path / "suite"), tmp_path / "cache"
    generate(suite, per_family=1, seed=1)
    os.makedirs(cache)
    (cache / "responses.sqlite").write_bytes(b"this is not a database at all" * 100)
    result = cli("run", "synth", "--model", "random", "--data", suite, "--out", str(tmp_path / "r"), "--cache-dir",
                 str(cache), "--no-progress")
    assert result.returncode == 0, result.stderr
    assert f"the response cache {cache / 'responses.sqlite'} could not be read" in result.stderr
    assert any(name.startswith("responses.sqlite.corrupt-") for name in os.listdir(cache))
    shown = cli("cache", "--cache-dir", str(cache))
    assert shown.returncode == 0 and "frames" in shown.stdout and "entries" in shown.stdout
    cleared = cli("cache", "--cache-dir", str(cache), "--clear", "frames")
    assert "frames 0.0 MB in 0 entries" in cleared.stdout


def test_entries_round_trip_exactly_and_entries_of_the_format_before_are_still_read(tmp_path, capsys):
    import numpy as np

    from timefoil.video.diskcache import LEGACY, FrameDiskCache

    cache = FrameDiskCache(str(tmp_path / "cache"), budget=10**9)
    rng = np.random.default_rng(0)
    arrays = {"array": rng.integers(0, 256, (3, 5, 7, 3), dtype=np.uint8), "entries": np.array([[0, 4], [-1, -1]]),
              "times": np.array([0.25, 1.5]), "rate": 2.5, "degenerate": True}
    cache.save("ab" + "0" * 30, **arrays)
    back = cache.load("ab" + "0" * 30)
    for name, value in arrays.items():
        assert np.array_equal(back[name], value) and back[name].dtype == np.asarray(value).dtype, name
    old = cache.path("cd" + "1" * 30, LEGACY)  # written by np.savez_compressed, as before
    os.makedirs(os.path.dirname(old))
    np.savez_compressed(old, array=arrays["array"][:1], rate=4.0)
    legacy = cache.load("cd" + "1" * 30)
    assert np.array_equal(legacy["array"], arrays["array"][:1]) and float(legacy["rate"]) == 4.0
    assert cache.usage()[1] == 2  # both count against the budget, and prune and clear see both
    with open(cache.path("ab" + "0" * 30), "r+b") as handle:  # cut short: damaged
        handle.truncate(60)
    assert cache.load("ab" + "0" * 30) is None and "removed a damaged frame cache entry" in capsys.readouterr().err
    assert cache.usage()[1] == 1 and cache.clear() == 1
