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


def test_entries_round_trip_exactly_and_entries_of_formats_before_are_pruned_not_read(tmp_path, capsys):
    import numpy as np

    from timefoil.video.diskcache import FrameDiskCache

    cache = FrameDiskCache(str(tmp_path / "cache"), budget=10**9)
    rng = np.random.default_rng(0)
    arrays = {"array": rng.integers(0, 256, (3, 5, 7, 3), dtype=np.uint8), "entries": np.array([[0, 4], [-1, -1]]),
              "times": np.array([0.25, 1.5]), "rate": np.float64(2.5), "degenerate": np.bool_(True)}
    facts = {"decoded": ["seek; every frame"], "rate": 2.5}
    cache.save("ab" + "0" * 30, arrays, facts)
    back, back_facts = cache.load("ab" + "0" * 30)
    for name, value in arrays.items():
        assert np.array_equal(back[name], value) and back[name].dtype == np.asarray(value).dtype, name
    assert back_facts == facts
    old = os.path.join(cache.root, "cd", "cd" + "1" * 30 + ".npz")  # a deflated entry of the first format
    os.makedirs(os.path.dirname(old))
    np.savez_compressed(old, array=arrays["array"][:1], rate=4.0)
    assert cache.load("cd" + "1" * 30) is None and os.path.exists(old)  # not this format's name: never read
    assert cache.usage()[1] == 2  # both count against the budget, and prune and clear see both
    with open(cache.path("ab" + "0" * 30), "r+b") as handle:  # cut short: damaged
        handle.truncate(60)
    assert cache.load("ab" + "0" * 30) is None
    said = capsys.readouterr().err
    assert said.count("damaged frame cache entry") == 1 and ".damaged" in said
    assert cache.load("ab" + "0" * 30) is None and capsys.readouterr().err == ""  # moved aside: said once
    assert cache.usage()[1] == 2 and cache.clear() == 2  # the damaged one is pruned and cleared too


def _entry(tmp_path):
    import numpy as np

    from timefoil.video.diskcache import FrameDiskCache

    cache = FrameDiskCache(str(tmp_path / "cache"), budget=10**9)
    frames = np.random.default_rng(1).integers(0, 256, (2, 4, 6, 3), dtype=np.uint8)
    cache.save("ef" + "2" * 30, {"array": frames, "times": np.array([0.0, 0.5])}, {"rate": 2.0})
    return cache, cache.path("ef" + "2" * 30)


def test_a_flipped_bit_anywhere_in_an_entry_is_a_miss_moved_aside(tmp_path, capsys):
    """Every byte of a small entry (magic, header, checksum, compressed frames) with one bit
    flipped: each is a miss, said once, and the file moved aside; the intact entry is a hit."""
    import numpy as np

    cache, path = _entry(tmp_path)
    intact = open(path, "rb").read()
    frames = cache.load("ef" + "2" * 30)[0]["array"]
    hits = []
    for position in range(len(intact)):
        for bit in (0, 5):
            spoiled = bytearray(intact)
            spoiled[position] ^= 1 << bit
            with open(path, "wb") as handle:
                handle.write(spoiled)
            loaded = cache.load("ef" + "2" * 30)
            if loaded is not None:
                hits.append((position, bit, np.array_equal(loaded[0]["array"], frames)))
            assert os.path.exists(path + ".damaged") != (loaded is not None), (position, bit)
            if os.path.exists(path + ".damaged"):
                os.remove(path + ".damaged")
    assert hits == [] and capsys.readouterr().err.count("damaged frame cache entry") == 2 * len(intact)


def test_an_entry_copied_under_another_key_is_a_miss(tmp_path, capsys):
    import shutil

    cache, path = _entry(tmp_path)
    other = cache.path("ef" + "3" * 30)
    shutil.copy(path, other)
    assert cache.load("ef" + "3" * 30) is None and "written for another key" in capsys.readouterr().err
    assert cache.load("ef" + "2" * 30) is not None


def test_a_checksummed_entry_that_is_not_a_sample_is_never_handed_to_a_model(tmp_path, capsys):
    """Entries written whole but wrong (by a writer with a bug, under the right key): frames of
    another dtype, too few times, the wrong size for the sampling. Each is a miss, moved aside,
    and the frames are decoded again, equal to a fresh decode."""
    import numpy as np

    from timefoil.core.items import VideoRef
    from timefoil.video import FrameStore, Sampling, write_video
    from timefoil.video.diskcache import FrameDiskCache

    path = str(tmp_path / "clip.mp4")
    write_video(path, [np.full((16, 24, 3), 20 * t, np.uint8) for t in range(6)], fps=3)
    ref, sampling, cache = VideoRef.file(path), Sampling(frames=4, resize=(12, 8)), str(tmp_path / "cache")
    fresh = FrameStore().get(ref, sampling).array
    FrameStore(cache_dir=cache).get(ref, sampling)
    disk = FrameDiskCache(cache)
    ((_, _, entry),) = disk.entries()
    key = os.path.basename(entry)[:-len(".frames")]
    arrays, facts = disk.load(key)
    spoilers = {"float frames": lambda a: {**a, "array": a["array"].astype(np.float32)},
                "too few times": lambda a: {**a, "times": a["times"][:2]},
                "another size": lambda a: {**a, "array": np.zeros((4, 16, 24, 3), np.uint8)},
                "no frames": lambda a: {**a, "array": a["array"][:0]}}
    for name, spoil in spoilers.items():
        disk.save(key, spoil(dict(arrays)), facts)
        store = FrameStore(cache_dir=cache)
        assert np.array_equal(store.get(ref, sampling).array, fresh), name
        assert store.stats.decodes == 1 and store.stats.disk_hits == 0, name
        assert "damaged frame cache entry" in capsys.readouterr().err, name
    assert FrameStore(cache_dir=cache).stats.disk_hits == 0
    store = FrameStore(cache_dir=cache)
    store.get(ref, sampling)
    assert store.stats.disk_hits == 1 and store.stats.decodes == 0  # the last decode was stored whole
