"""Sampled frame indices, read back from videos whose frame k carries k in its pixels."""
import numpy as np
import pytest

from timefoil.core.items import VideoRef
from timefoil.video import FrameStore, Sampling, write_video
from timefoil.video.frames import frames_asked
from timefoil.video.sampling import PartInfo, plan_frames


def numbered_video(path, n=40, fps=10, offset=0):
    """Frame k is uniformly grey level 2k + offset (+1 so no frame is black)."""
    frames = [np.full((32, 48, 3), 2 * k + offset + 1, np.uint8) for k in range(n)]
    write_video(str(path), frames, fps)
    return str(path)


def read_numbers(frames, offset=0):
    return [None if int(f.max()) == 0 else (int(f[0, 0, 0]) - offset - 1) // 2 for f in frames.array]


@pytest.fixture(scope="module")
def videos(tmp_path_factory):
    root = tmp_path_factory.mktemp("numbered")
    return numbered_video(root / "a.mp4"), numbered_video(root / "b.mp4", offset=100)


@pytest.mark.parametrize("sampling, start, end, expected", [
    (Sampling(frames=4), None, None, [5, 15, 25, 35]),
    (Sampling(frames=4, strategy="endpoints"), None, None, [0, 13, 26, 39]),
    (Sampling(frames=1, strategy="endpoints"), None, None, [19]),
    (Sampling(frames=4), 1.0, 3.0, [12, 17, 22, 27]),  # window = frames 10..29
    (Sampling(frames=None, fps=2), None, None, [2, 7, 12, 17, 22, 27, 32, 37]),  # mid-interval times
    (Sampling(frames=None, fps=2, strategy="endpoints"), None, None, [0, 5, 10, 15, 20, 25, 30, 35]),
    (Sampling(frames=None, fps=2, max_frames=4), None, None, [7, 17, 27, 37]),
    (Sampling(frames=None, fps=1), 0.5, 2.5, [10, 20]),  # frames 5..24, times 0.5 s and 1.5 s in
])
def test_single_video_indices(videos, sampling, start, end, expected):
    store = FrameStore()
    frames = store.get(VideoRef.file(videos[0], start, end), sampling)
    assert read_numbers(frames) == expected
    assert [e[1] for e in frames.entries] == expected


def test_late_window_seeks_and_stays_frame_exact(tmp_path):
    """A window far into the video is reached by seeking; indices stay exact."""
    path = numbered_video(tmp_path / "long.mp4", n=100, fps=10)
    frames = FrameStore().get(VideoRef.file(path, 6.0, 9.0), Sampling(frames=4))  # frames 60..89
    assert read_numbers(frames) == [63, 71, 78, 86]  # 60 + floor((k + 0.5) * 30 / 4)


def test_concatenation_takes_n_minus_one_over_two_per_clip(videos):
    store = FrameStore()
    joined = VideoRef.concat(VideoRef.file(videos[0]), VideoRef.file(videos[1]), gap=2)
    frames = store.get(joined, Sampling(frames=5))
    assert read_numbers(frames)[:2] == [10, 30]
    assert int(frames.array[2].max()) == 0  # the black gap
    assert [(int(f[0, 0, 0]) - 101) // 2 for f in frames.array[3:]] == [10, 30]
    assert not frames.degenerate
    even = store.get(joined, Sampling(frames=8))  # 3 per clip, 2 black
    assert [e is None for e in even.entries] == [False] * 3 + [True] * 2 + [False] * 3
    tiny = store.get(joined, Sampling(frames=2))
    assert tiny.degenerate and all(e is None for e in tiny.entries)


def test_concatenation_by_fps_samples_the_joined_timeline(videos):
    joined = VideoRef.concat(VideoRef.file(videos[0]), VideoRef.file(videos[1]), gap=2)
    frames = FrameStore().get(joined, Sampling(frames=None, fps=0.5))  # t = 1, 3, 5, 7, 9 s of 4 + 2 + 4
    assert list(frames.entries) == [(0, 10), (0, 30), None, (1, 10), (1, 30)]
    assert int(frames.array[2].max()) == 0 and int(frames.array[3][0, 0, 0]) == 2 * 10 + 101


def test_plan_frames_is_pure_arithmetic():
    plan = plan_frames([PartInfo(fps=30, first=0, stop=300)], Sampling(frames=None, fps=1))
    assert [e[1] for e in plan.entries] == [15 + 30 * k for k in range(10)]  # VELOCITI mid-second frames


def test_ablations_reorder_decoded_frames(videos):
    ref = VideoRef.file(videos[0])
    store = FrameStore()
    natural = read_numbers(store.get(ref, Sampling(frames=8)))
    assert read_numbers(store.get(ref, Sampling(frames=8, order="reversed"))) == natural[::-1]
    shuffled = read_numbers(store.get(ref, Sampling(frames=8, order="shuffled", seed=1)))
    assert sorted(shuffled) == natural and shuffled != natural
    assert shuffled == read_numbers(FrameStore().get(ref, Sampling(frames=8, order="shuffled", seed=1)))
    single = read_numbers(store.get(ref, Sampling(frames=8, single_frame=True)))
    assert len(single) == 1 and single[0] in natural
    assert store.stats.decodes == 1  # ablations never decode again


def test_decode_once_memory_then_disk(videos, tmp_path):
    ref = VideoRef.file(videos[0])
    store = FrameStore(cache_dir=str(tmp_path))
    first = store.get(ref, Sampling(frames=8))
    store.get(ref, Sampling(frames=8))
    assert (store.stats.decodes, store.stats.memory_hits) == (1, 1)
    again = FrameStore(cache_dir=str(tmp_path))
    second = again.get(ref, Sampling(frames=8))
    assert (again.stats.decodes, again.stats.disk_hits) == (0, 1)
    assert np.array_equal(first.array, second.array) and first.entries == second.entries
    again.get(ref, Sampling(frames=4))  # another sampling is another decode
    assert again.stats.decodes == 1


def test_threads_asking_for_one_sample_at_once_share_a_single_decode(videos, tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    ref = VideoRef.file(videos[0])
    store = FrameStore(cache_dir=str(tmp_path))
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda _: store.get(ref, Sampling(frames=8)), range(16)))
    assert store.stats.decodes == 1 and store.stats.memory_hits + store.stats.disk_hits <= 15
    assert all(np.array_equal(r.array, results[0].array) for r in results)
    assert read_numbers(results[0]) == read_numbers(FrameStore().get(ref, Sampling(frames=8)))


def test_resize(videos):
    frames = FrameStore().get(VideoRef.file(videos[0]), Sampling(frames=2, resize=(24, 16)))
    assert frames.array.shape == (2, 16, 24, 3)


# -- a cap that changes a sampling is never silent -----------------------------------------
def test_a_rate_on_a_ten_second_clip_shows_every_frame_it_asks_for(tmp_path):
    """VELOCITI's 8 fps ablation on its 10 s clips: 80 frames, at t = (k + 0.5) / 8 s."""
    path = numbered_video(tmp_path / "ten.mp4", n=100, fps=10)
    store = FrameStore()
    frames = store.get(VideoRef.file(path), Sampling(frames=None, fps=8, max_frames=None))
    assert read_numbers(frames) == [int((k + 0.5) / 8 * 10) for k in range(80)]
    assert frames_asked(frames, Sampling(frames=None, fps=8, max_frames=None)) is None
    capped = Sampling(frames=None, fps=8)  # the default cap, 64
    shown = store.get(VideoRef.file(path), capped)
    assert len(shown.entries) == 64 and frames_asked(shown, capped) == 80
    exact = Sampling(frames=None, fps=8, max_frames=80)  # a cap the clip just fits changes nothing
    assert frames_asked(store.get(VideoRef.file(path), exact), exact) is None


def test_a_capped_fps_run_says_so_on_the_terminal_and_in_run_json(tmp_path_factory):
    import json

    from click.testing import CliRunner
    from helpers import generated_suite, run_records

    from timefoil.cli import main

    suite = generated_suite(tmp_path_factory, seed=5, per_family=1)  # 12 clips of 4 s
    cache = str(tmp_path_factory.mktemp("cache"))
    base = ["run", "synth", "--model", "random", "--data", suite, "--protocol", "entailment", "--fps", "20",
            "--cache-dir", cache, "--no-progress", "--out"]
    full, capped = str(tmp_path_factory.mktemp("full")), str(tmp_path_factory.mktemp("capped"))
    result = CliRunner().invoke(main, base + [full])
    assert result.exit_code == 0, result.output
    # no --max-frames: 20 fps on 4 s asks for t = (k + 0.5) / 20 < 4, k = 0..79, and shows all 80
    assert {r["frames"]["n"] for r in run_records(full)} == {80} and "capped" not in result.stderr
    with open(f"{full}/run.json", encoding="utf-8") as handle:
        stored = json.load(handle)
    assert "capped" not in stored and stored["config"]["sampling"]["max_frames"] is None
    result = CliRunner().invoke(main, base + [capped, "--max-frames", "64"])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stderr.splitlines() if "capped" in line]
    assert lines == [f"{capped}: max_frames 64 capped 20 fps on 12 of 12 videos: they show 64 evenly spread "
                     "frames, not the up to 80 the rate asks for (--max-frames 80 keeps the rate)"]
    with open(f"{capped}/run.json", encoding="utf-8") as handle:
        assert json.load(handle)["capped"] == {"videos": 12, "of": 12, "max_frames": 64, "most_asked": 80}
    assert {r["frames"]["n"] for r in run_records(capped)} == {64}
