"""A served run builds each shown sample once, builds different samples side by side, never
holds a place on the wire for a request whose frames are not ready, and gives every request of
a sample that cannot be built that sample's error."""
import os
import threading
import time

import numpy as np
import pytest

pytest.importorskip("httpx")

from provider_fakes import FakeServer  # noqa: E402
from timefoil.core.items import VideoRef  # noqa: E402
from timefoil.models import load_model  # noqa: E402
from timefoil.models.requests import Request  # noqa: E402
from timefoil.video import Sampling  # noqa: E402
from timefoil.video.decode import VideoUndecodable  # noqa: E402
from timefoil.video.frames import Frames  # noqa: E402

SAMPLING = Sampling(frames=2)


def requests_for(videos: list[str], per_video: int = 2) -> list[Request]:
    """``per_video`` questions about each video (both option orders of a row, say)."""
    return [Request("entailment", VideoRef.file(f"/clips/{name}.mp4"), f"{name} question {q}", SAMPLING)
            for name in videos for q in range(per_video)]


class Frames2:
    """A frame source that records every build: which samples, how many at once, and when."""

    def __init__(self, slow: dict[str, float] | None = None, broken: tuple[str, ...] = (), meet: int = 0):
        self.lock, self.calls, self.running, self.most_running = threading.Lock(), [], 0, 0
        self.slow, self.broken = slow or {}, broken
        self.meeting = threading.Barrier(meet, timeout=10) if meet else None  # the first builds must overlap

    def __call__(self, ref: VideoRef, sampling: Sampling) -> Frames:
        name = os.path.basename(ref.path)[:-4]
        with self.lock:
            self.calls.append(name)
            self.running += 1
            self.most_running = max(self.most_running, self.running)
            first = len(self.calls) <= (self.meeting.parties if self.meeting else 0)
        try:
            if first:
                self.meeting.wait(timeout=10)  # returns only when another build runs at the same time
            time.sleep(self.slow.get(name, 0.0))
            if name in self.broken:
                raise VideoUndecodable(ref.path, "cannot decode (Invalid data found when processing input)")
            return Frames(np.full((2, 8, 8, 3), len(name), np.uint8), ((0, 0), (0, 1)))
        finally:
            with self.lock:
                self.running -= 1


def ask(requests, frames, concurrency=2):
    server = FakeServer(failure_rate=0.0)
    try:
        model = load_model(f"openai:m@{server.url}", {"concurrency": str(concurrency), "image_format": "png"})
        answers = model.answer(requests, frames)
    finally:
        server.close()
    return server, answers


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="builds run side by side on two cores or more")
def test_each_sample_is_built_once_and_different_samples_build_side_by_side():
    frames = Frames2(meet=2)  # the first two builds wait for each other: built one at a time, they would fail
    requests = requests_for(["a", "b", "c", "d"])
    server, answers = ask(requests, frames)
    assert [a.error for a in answers] == [None] * 8
    assert sorted(frames.calls) == ["a", "b", "c", "d"] and frames.most_running == 2  # once each, two at a time
    assert server.calls == 8


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="a quick sample builds beside the slow one on a second core")
def test_a_slow_build_holds_no_place_on_the_wire():
    """One place on the wire: the requests of quick samples go out while the slow one builds."""
    frames = Frames2(slow={"slow": 1.5})
    requests = requests_for(["slow", "q1", "q2"])
    server, answers = ask(requests, frames, concurrency=1)
    assert [a.error for a in answers] == [None] * 6
    first_quick, slow_ready = min(server.arrivals[:4]), max(server.arrivals)
    assert len(server.arrivals) == 6 and slow_ready - first_quick >= 1.0  # the quick four went first


def test_every_request_of_a_sample_that_cannot_be_built_gets_its_error():
    frames = Frames2(broken=("bad",))
    requests = requests_for(["good", "bad", "fine"], per_video=3)
    server, answers = ask(requests, frames)
    errors = [a.error for a in answers]
    assert errors[3:6] == ["undecodable video: /clips/bad.mp4: cannot decode (Invalid data found when processing "
                           "input)"] * 3
    assert errors[:3] + errors[6:] == [None] * 6 and frames.calls.count("bad") == 1 and server.calls == 6


def test_a_served_run_writes_no_raw_frames_and_a_local_run_does(tmp_path):
    from timefoil import RunConfig, run
    from timefoil.benchmarks import get_benchmark
    from timefoil.synth import generate
    from timefoil.video.diskcache import FrameDiskCache

    suite = str(tmp_path / "suite")
    generate(suite, per_family=1, seed=2, families=("order",))
    server = FakeServer(failure_rate=0.0)
    cache = str(tmp_path / "cache")
    try:
        served = run(RunConfig("synth", f"openai:m@{server.url}", data_dir=suite, protocol="entailment",
                               sampling=SAMPLING, model_args={"image_format": "png"}),
                     str(tmp_path / "served"), cache_dir=cache, progress=False)
    finally:
        server.close()
    assert served.errors == 0 and server.calls > 0 and FrameDiskCache(cache).usage()[1] == 0
    local = run(RunConfig("synth", "bag-of-frames", data_dir=suite, sampling=SAMPLING), str(tmp_path / "local"),
                cache_dir=cache, progress=False)
    videos = {item.videos[0].path for item in get_benchmark("synth").load(suite)}
    assert local.errors == 0 and FrameDiskCache(cache).usage()[1] == len(videos)  # one entry per sampled video
