"""The synthetic suite: exact pixels, same-frame pairs, same-word captions, ties where due."""
import os
import re
from collections import Counter

import numpy as np
import pytest

from timefoil.core.items import VideoRef
from timefoil import RunConfig, run
from timefoil.synth import FAMILIES, build_pairs, generate, same_frame_multiset
from timefoil.video import FrameStore, Sampling, decode_indices, probe


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("suite"))
    items = generate(root, per_family=4, seed=5)
    return root, items


def test_every_family_and_protocol_shape_is_present(rendered):
    _, items = rendered
    assert {i.test for i in items} == set(FAMILIES)
    roles = Counter(i.role for i in items)
    assert roles["text"] and roles["video"] and roles["proficiency"] and roles["main"]
    assert any(i.options_are == "videos" for i in items)
    groups = Counter(i.group_id for i in items if i.test == "counting" and i.role == "main")
    assert set(groups.values()) == {3}  # three binary questions per counting video
    assert {i.subtest for i in items if i.test == "change_of_state"} == {"action", "prestate", "poststate",
                                                                         "inverse"}
    assert {i.subtest for i in items if i.test == "counting"} == {"easy", "hard"}


def test_frames_decode_to_rendered_pixels(rendered):
    root, _ = rendered
    for pair in build_pairs(4, seed=5):
        for clip in pair.clips:
            path = os.path.join(root, clip.path)
            info = probe(path)
            assert info.n_frames == len(clip.frames)
            decoded = decode_indices(path, list(range(info.n_frames)))
            assert np.abs(decoded.astype(int) - clip.frames.astype(int)).max() <= 2


def test_frame_multiset_equal_exactly_for_order_direction_state(rendered):
    root, _ = rendered
    for pair in build_pairs(4, seed=5):
        a, b = (os.path.join(root, c.path) for c in pair.clips)
        same = same_frame_multiset(a, b)
        if pair.family in ("order", "direction", "change_of_state"):
            assert same, pair.family
        if pair.family in ("counting", "speed"):
            assert not same, pair.family
        assert not np.array_equal(pair.clips[0].frames, pair.clips[1].frames)  # yet they differ in order


def test_order_and_direction_captions_use_the_same_words(rendered):
    _, items = rendered
    checked = 0
    for item in items:
        if item.test in ("order", "direction") and item.role != "proficiency" and len(item.texts) == 2:
            words = [sorted(re.findall(r"\w+", t)) for t in item.texts]
            assert words[0] == words[1] and item.texts[0] != item.texts[1]
            checked += 1
    assert checked >= 8


def test_generation_is_deterministic(tmp_path):
    a = generate(str(tmp_path / "a"), per_family=1, seed=9)
    b = generate(str(tmp_path / "b"), per_family=1, seed=9)
    assert [i.texts for i in a] == [i.texts for i in b]
    c = generate(str(tmp_path / "c"), per_family=1, seed=10)
    assert [i.texts for i in a] != [i.texts for i in c]


def test_bag_of_frames_ties_on_same_frame_families_and_ties_count_wrong(rendered, tmp_path):
    root, items = rendered
    report = run(RunConfig("synth", "bag-of-frames", data_dir=root), str(tmp_path / "run"),
                 cache_dir=str(tmp_path / "cache"), progress=False)
    for section in ("order", "direction", "binding/binding"):  # same words, same frames: all ties
        metric = report.get(f"{section}/accuracy")
        assert metric.value == 0.0 and metric.extra["ties"] == metric.n, section
    assert report.get("change_of_state/inverse/accuracy").extra["ties"] == \
        report.get("change_of_state/inverse/accuracy").n
    assert report.get("order/group").value == 0.0
    assert report.get("overall/P").value == 100.0  # presence needs no time: every proficiency right
    assert report.ties >= sum(1 for i in items if i.test in ("order", "direction") and i.role != "proficiency")


def test_black_gap_and_degenerate_flag_on_video_questions(rendered, tmp_path):
    root, _ = rendered
    report = run(RunConfig("synth", "random", data_dir=root, protocol="choice", sampling=Sampling(frames=2),
                           limit=1), str(tmp_path / "run"), cache_dir=str(tmp_path / "cache"), progress=False)
    assert "fewer than 3 frames" in report.get("overall/video").extra["warning"]
    joined = VideoRef.concat(VideoRef.file(os.path.join(root, "videos/order-000-a.mp4")),
                             VideoRef.file(os.path.join(root, "videos/order-000-b.mp4")))
    frames = FrameStore().get(joined, Sampling(frames=7))
    assert [e is None for e in frames.entries] == [False] * 3 + [True] + [False] * 3
