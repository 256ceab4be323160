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


# -- entries read defensively: cut short, not the sample asked for, not a regular file ---------
MAGIC_BYTES = len(b"timefoil-frames-3\n")


def _cached_clip(tmp_path):
    """A 16-frame 24x16 clip at 8 fps sampled at 8 frames, decoded with no cache and then once
    into a cache: (ref, sampling, the fresh sample, the cache, the entry's path, its bytes).
    The 8 mid-interval frames of 16 are 1, 3, ..., 15 (floor((k + 0.5) * 16 / 8)), shown at
    1/8, 3/8, ..., 15/8 s."""
    import numpy as np

    from timefoil.core.items import VideoRef
    from timefoil.video import FrameStore, Sampling, write_video
    from timefoil.video.diskcache import FrameDiskCache

    path = str(tmp_path / "clip.mp4")
    write_video(path, [np.full((16, 24, 3), 15 * t, np.uint8) for t in range(16)], fps=8)
    ref, sampling, cache = VideoRef.file(path), Sampling(frames=8), str(tmp_path / "cache")
    fresh = FrameStore().get(ref, sampling)
    assert fresh.entries == tuple((0, 2 * k + 1) for k in range(8)) and fresh.array.shape == (8, 16, 24, 3)
    assert fresh.times == tuple((2 * k + 1) / 8 for k in range(8))
    FrameStore(cache_dir=cache).get(ref, sampling)
    disk = FrameDiskCache(cache)
    ((_, _, entry),) = disk.entries()
    return ref, sampling, fresh, disk, entry, open(entry, "rb").read()


def _decoded_again_and_rewritten(ref, sampling, fresh, disk, entry, whole):
    """The store misses (one decode, no disk hit), hands back the fresh decode's frames, and
    leaves the entry as it was first written, byte for byte."""
    import numpy as np

    from timefoil.video import FrameStore

    store = FrameStore(cache_dir=os.path.dirname(disk.root))
    got = store.get(ref, sampling)
    assert np.array_equal(got.array, fresh.array) and got.entries == fresh.entries and got.times == fresh.times
    assert (store.stats.decodes, store.stats.disk_hits) == (1, 0)
    assert open(entry, "rb").read() == whole


def test_an_entry_cut_to_its_magic_bytes_or_into_its_header_length_is_a_miss_rewritten_whole(tmp_path, capsys):
    ref, sampling, fresh, disk, entry, whole = _cached_clip(tmp_path)
    for cut in (MAGIC_BYTES, MAGIC_BYTES + 2):
        with open(entry, "wb") as handle:
            handle.write(whole[:cut])
        _decoded_again_and_rewritten(ref, sampling, fresh, disk, entry, whole)
        assert open(entry + ".damaged", "rb").read() == whole[:cut]
        said = capsys.readouterr().err
        assert f"a damaged frame cache entry {entry} (cut short at {cut} bytes, before its header)" in said


def test_an_entry_cut_at_any_byte_or_grown_by_one_is_damaged_never_another_error(tmp_path):
    """Every length from 0 to the whole entry less one byte, and the whole entry with a byte
    after its frames: each read raises DamagedEntry (never struct.error or an IndexError)."""
    import pytest

    from timefoil.video.diskcache import DamagedEntry, read_entry

    _, _, _, disk, entry, whole = _cached_clip(tmp_path)
    key = os.path.basename(entry)[:-len(".frames")]
    for spoiled in [whole[:cut] for cut in range(len(whole))] + [whole + b"\0"]:
        with open(entry, "wb") as handle:
            handle.write(spoiled)
        with pytest.raises(DamagedEntry):
            read_entry(entry, key)
    with open(entry, "wb") as handle:
        handle.write(whole)
    assert read_entry(entry, key)[0]["array"].shape == (8, 16, 24, 3)


def test_a_checksummed_entry_of_4_frames_where_8_were_sampled_is_a_miss_rewritten_whole(tmp_path, capsys):
    """Frames 1, 5, 9 and 13 with their plan entries and times, stored whole with their checksum:
    a sample consistent in itself, read back as written, yet not the 8 frames asked for."""
    from timefoil.video.diskcache import read_entry

    ref, sampling, fresh, disk, entry, whole = _cached_clip(tmp_path)
    key = os.path.basename(entry)[:-len(".frames")]
    arrays, facts = disk.load(key)
    disk.save(key, {name: value[::2] for name, value in arrays.items()}, facts)
    four = read_entry(entry, key)[0]  # checksum and key hold: only the request tells it apart
    assert [tuple(e) for e in four["entries"]] == [(0, 1), (0, 5), (0, 9), (0, 13)]
    _decoded_again_and_rewritten(ref, sampling, fresh, disk, entry, whole)
    assert "(not the sample asked for: 4 frames where the sampling shows 8)" in capsys.readouterr().err


def test_checksummed_entries_that_no_decode_makes_are_misses_rewritten_whole(tmp_path, capsys):
    """Each stored whole with its checksum under the right key, each a sample no decode of the
    clip makes: a miss, the fresh decode's frames, the entry rewritten as first written."""
    import numpy as np

    ref, sampling, fresh, disk, entry, whole = _cached_clip(tmp_path)
    key = os.path.basename(entry)[:-len(".frames")]
    arrays, facts = disk.load(key)
    spoilers = {
        "frames out of order": (lambda a: {**a, "entries": a["entries"][::-1].copy()}, facts),
        "a black frame in one video": (lambda a: {**a, "entries": np.array([[-1, -1]] + a["entries"][1:].tolist())},
                                       facts),
        "a frame of a second video": (lambda a: {**a, "entries": np.array(a["entries"][:7].tolist() + [[1, 0]])},
                                      facts),
        "a time before the start": (lambda a: {**a, "times": a["times"] - 1.0}, facts),
        "plan entries as floats": (lambda a: {**a, "entries": a["entries"].astype(np.float64)}, facts),
        "an extra array": (lambda a: {**a, "extra": np.zeros(3)}, facts),
        "frames of 4 channels": (lambda a: {**a, "array": np.zeros((8, 16, 24, 4), np.uint8)}, facts),
        "times as 32-bit floats": (lambda a: {**a, "times": a["times"].astype(np.float32)}, facts),
        "a rate of 0": (dict, {**facts, "rate": 0.0}),
        "a rotation of 45 degrees": (dict, {**facts, "rotations": [45]}),
        "two rotations of one video": (dict, {**facts, "rotations": [0, 0]}),
        "a decode of three videos": (dict, {**facts, "decoded": ["seek"] * 3}),
        "degenerate as a number": (dict, {**facts, "degenerate": 0}),
    }
    for name, (spoil, spoiled_facts) in spoilers.items():
        disk.save(key, spoil(dict(arrays)), spoiled_facts)
        _decoded_again_and_rewritten(ref, sampling, fresh, disk, entry, whole)
        assert "damaged frame cache entry" in capsys.readouterr().err, name


def test_a_fifo_folder_or_device_in_an_entrys_place_is_a_miss_never_opened(tmp_path, capsys):
    """Each takes the entry's place: the store answers (in a thread given 20 s: a FIFO read
    would block for ever) with the fresh decode's frames, the entry is stored whole again, and
    what was there is moved aside as it was."""
    import stat
    import threading

    ref, sampling, fresh, disk, entry, whole = _cached_clip(tmp_path)
    makers = {"a FIFO": (os.mkfifo, stat.S_ISFIFO), "a directory": (os.mkdir, stat.S_ISDIR),
              "a character device": (lambda path: os.symlink("/dev/zero", path), stat.S_ISLNK)}
    for what, (make, kind) in makers.items():
        os.remove(entry)
        make(entry)
        done = []
        worker = threading.Thread(target=lambda: done.append(
            _decoded_again_and_rewritten(ref, sampling, fresh, disk, entry, whole)), daemon=True)
        worker.start()
        worker.join(20)
        assert done == [None], f"{what}: no answer in 20 s"
        assert kind(os.lstat(entry + ".damaged").st_mode), what
        assert f"({what}, not a regular file)" in capsys.readouterr().err
        os.rmdir(entry + ".damaged") if what == "a directory" else os.remove(entry + ".damaged")


def test_a_header_that_does_not_describe_an_entry_is_damaged_before_its_frames_are_read(tmp_path):
    """Headers rewritten around the entry's own frames: a length past any header's, JSON that
    is not an object, fields of other types, arrays listed wrong (Python objects, a negative or
    boolean dimension, a name twice, a terabyte of frames), and frames of another size. Each
    raises DamagedEntry, none allocates what the header claims."""
    import json
    import struct

    from timefoil.video.diskcache import MAGIC, DamagedEntry, read_entry

    _, _, _, disk, entry, whole = _cached_clip(tmp_path)
    key = os.path.basename(entry)[:-len(".frames")]
    (length,) = struct.unpack_from("<I", whole, len(MAGIC))
    header = json.loads(whole[len(MAGIC) + 4:len(MAGIC) + 4 + length])
    described, frames = json.loads(header["described"]), whole[len(MAGIC) + 4 + length:]

    def entry_of(header_bytes: bytes, length: int | None = None) -> bytes:
        return MAGIC + struct.pack("<I", len(header_bytes) if length is None else length) + header_bytes + frames

    def listing(arrays) -> bytes:
        return json.dumps({**header, "described": json.dumps({**described, "arrays": arrays})}).encode()

    array, entries, times = described["arrays"]
    spoiled = {
        "a header of 4 GiB": entry_of(b"{}", 2**32 - 1),
        "a header that is a list": entry_of(b"[1, 2]"),
        "a header that is not JSON": entry_of(b"\xff\xfe{"),
        "described as a number": entry_of(json.dumps({**header, "described": 7}).encode()),
        "no checksum": entry_of(json.dumps({"described": header["described"]}).encode()),
        "facts as a list": entry_of(json.dumps({**header, "described": json.dumps({**described, "facts": []})})
                                    .encode()),
        "frames of Python objects": entry_of(listing([[array[0], "|O", array[2]], entries, times])),
        "a negative dimension": entry_of(listing([[array[0], array[1], [-8, 16, 24, 3]], entries, times])),
        "a boolean dimension": entry_of(listing([[array[0], array[1], [True, 16, 24, 3]], entries, times])),
        "a name twice": entry_of(listing([array, entries, ["entries", *times[1:]]])),
        "a terabyte of frames": entry_of(listing([[array[0], array[1], [2**40, 16, 24, 3]], entries, times])),
        "frames one row short": entry_of(listing([[array[0], array[1], [8, 15, 24, 3]], entries, times])),
    }
    for name, data in spoiled.items():
        with open(entry, "wb") as handle:
            handle.write(data)
        try:
            read_entry(entry, key)
        except DamagedEntry:
            continue
        raise AssertionError(f"{name}: read as an entry")


def test_samples_of_every_plan_are_read_back_as_hits(tmp_path):
    """The checks pass what a decode makes: two videos joined with black frames between them
    (5 frames: 2 of each and 1 black), a rate capped by max_frames, a window and a resize.
    Each second store reads the disk (no decode) and hands back the first's frames."""
    import numpy as np

    from timefoil.core.items import VideoRef
    from timefoil.video import FrameStore, Sampling, write_video

    path = str(tmp_path / "clip.mp4")
    write_video(path, [np.full((16, 24, 3), 15 * t, np.uint8) for t in range(16)], fps=8)
    clip = VideoRef.file(path)
    asked = [(VideoRef.concat(clip, clip, gap=1.0), Sampling(frames=5)),
             (VideoRef.concat(clip, clip, gap=1.0), Sampling(frames=None, fps=2.0, max_frames=4)),
             (VideoRef.file(path, start=0.5, end=1.5), Sampling(frames=3, strategy="endpoints", resize=(12, 8)))]
    for ref, sampling in asked:
        first = FrameStore(cache_dir=str(tmp_path / "cache")).get(ref, sampling)
        store = FrameStore(cache_dir=str(tmp_path / "cache"))
        again = store.get(ref, sampling)
        assert (store.stats.decodes, store.stats.disk_hits) == (0, 1), (ref, sampling)
        assert np.array_equal(again.array, first.array) and again.entries == first.entries
    assert first.entries == ((0, 4), (0, 8), (0, 11))  # frames 4 to 11 in the window, ends and middle
    joined = FrameStore(cache_dir=str(tmp_path / "cache")).get(*asked[0])
    assert joined.entries == ((0, 4), (0, 12), None, (1, 4), (1, 12))  # 2 each at 0.25 and 0.75 of 16
