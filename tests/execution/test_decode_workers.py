"""Decode-ahead on several workers: videos decode side by side, answers and records keep their
order, and the worker count follows the thread policy."""
import json
import threading

import pytest

from timefoil import RunConfig
from timefoil.core.threads import MOST_DECODE_WORKERS, decode_workers
from timefoil.execution.ahead import DecodeAhead
from timefoil.execution.runner import Runner
from timefoil.execution.store import RunLog
from timefoil.models.reference import BagOfFramesModel
from timefoil.video.frames import FrameStore

pytestmark = pytest.mark.suite(per_family=1, seed=0, families=("order", "speed", "direction"))
WAIT_S = 10  # a worker waiting for another to start gives up after this: never a hang


def meeting(workers: int) -> tuple[DecodeAhead, list[bool]]:
    """Two calls on ``workers`` workers, each waiting (at most WAIT_S) for the other to start:
    both meet only if they run at once."""
    started = [threading.Event(), threading.Event()]
    met = []

    def call(mine: int) -> None:
        started[mine].set()
        met.append(started[1 - mine].wait(WAIT_S if workers > 1 else 0.2))

    ahead = DecodeAhead(workers)
    with ahead:
        done = [ahead.submit(call, 0), ahead.submit(call, 1)]
    assert all(f.done() for f in done)
    return ahead, met


def test_two_workers_run_two_calls_at_once_and_one_runs_them_in_turn():
    ahead, met = meeting(2)
    assert met == [True, True] and ahead.most_busy == 2
    ahead, met = meeting(1)
    assert met == [False, True] and ahead.most_busy == 1  # the first ended before the second began


def test_worker_count_follows_the_thread_policy(monkeypatch):
    monkeypatch.delenv("TIMEFOIL_DECODE_WORKERS", raising=False)
    monkeypatch.setenv("TIMEFOIL_THREADS", "3")
    assert decode_workers() == 3 and decode_workers(threads=1) == 1 and decode_workers(5) == 5
    assert decode_workers(threads=64) == MOST_DECODE_WORKERS
    monkeypatch.setenv("TIMEFOIL_DECODE_WORKERS", "2")
    assert decode_workers(threads=6) == 2
    with pytest.raises(ValueError, match="at least 1"):
        decode_workers(0)


class DecodingAhead(BagOfFramesModel):
    batch_size = 2  # batches of two requests: several videos queued ahead of each
    decodes_ahead = True


def test_a_run_decodes_two_videos_at_once_and_records_as_decoding_in_turn(suite, tmp_path, monkeypatch):
    """The first decode waits (at most WAIT_S) for a second to begin: with two workers two
    videos are seen decoding at once; the records, in order, equal those of one worker and of
    no decode-ahead, and every video is still decoded once."""
    decode = FrameStore._decode
    running, most, lock = [0], [0], threading.Lock()
    other = threading.Event()

    def watched(self, ref, sampling):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
            if running[0] > 1:
                other.set()
        try:
            if watch[0] and not other.is_set():  # the first decode waits for a second to begin
                other.wait(WAIT_S)
            return decode(self, ref, sampling)
        finally:
            with lock:
                running[0] -= 1

    watch = [False]
    monkeypatch.setattr(FrameStore, "_decode", watched)
    records = {}
    for name, workers, ahead in (("plain", "1", False), ("one", "1", True), ("two", "2", True)):
        monkeypatch.setenv("TIMEFOIL_DECODE_WORKERS", workers)
        model = DecodingAhead()
        model.decodes_ahead = ahead
        watch[0], most[0] = name == "two", 0
        other.clear()
        runner = Runner(RunConfig("synth", "bag-of-frames", data_dir=suite), str(tmp_path / name),
                        cache_dir=str(tmp_path / f"cache-{name}"), model=model, progress=False)
        runner.run()
        log = RunLog(str(tmp_path / name)).read()
        records[name] = [(r["id"], json.dumps(r["answer"]), r["frames"]["n"]) for r in log]
        videos = {json.dumps(r["request"]["video"], sort_keys=True) for r in log}
        assert runner.frames.stats.decodes == len(videos) > 2
        if name == "two":
            assert most[0] >= 2 and runner.executor.most_busy == 2
        if name == "one":
            assert most[0] == 1 and runner.executor.most_busy == 1
    strip = [[(i, n) for i, _, n in records[name]] for name in ("plain", "one", "two")]
    assert strip[0] == strip[1] == strip[2]  # the same records in the same order
    scores = [[json.loads(a).get("score") for _, a, _ in records[name]] for name in ("plain", "one", "two")]
    assert scores[0] == scores[1] == scores[2]


def test_a_video_over_consecutive_batches_is_one_call_and_each_batch_needs_its_own():
    from timefoil.core.items import VideoRef
    from timefoil.execution.answering import video_calls
    from timefoil.models.requests import Request

    a, b = VideoRef.file("/a.mp4"), VideoRef.file("/b.mp4")
    requests = {"a1": Request("entailment", a, "1"), "a2": Request("entailment", a, "2"),
                "a3": Request("entailment", a, "3"), "b1": Request("entailment", b, "1"),
                "blind": Request("entailment", None, "4"), "a4": Request("entailment", a, "4")}
    batches = [["a1", "a2"], ["a3", "b1"], ["blind"], ["a4"]]
    calls, needs = video_calls(batches, requests)
    # a is shown by batches 0 and 1 (one call), then again after a batch without it (a call of its own)
    assert calls == [["a1", "a2", "a3"], ["b1"], ["a4"]]
    assert needs == [[0], [0, 1], [], [2]]


def test_the_videos_files_are_hashed_side_by_side_into_the_memo_the_request_keys_read(tmp_path, monkeypatch):
    """``hash_files`` hashes each file once on several threads (two seen hashing at once), the
    memo then answers ``file_hash`` with the same digests, and a missing file is left for the
    request that names it."""
    import hashlib

    from timefoil.core import hashing

    paths = []
    for k in range(4):
        path = tmp_path / f"clip{k}.mp4"
        path.write_bytes(bytes([k]) * 5000)
        paths.append(str(path))
    digest, hashing_now, most, lock = hashing.hashlib.sha256, [0], [0], threading.Lock()
    other = threading.Event()

    class Watched:  # sha256 whose first update waits (at most WAIT_S) for a second file to be hashed
        def __init__(self):
            self.inner = digest()
            with lock:
                hashing_now[0] += 1
                most[0] = max(most[0], hashing_now[0])
                if hashing_now[0] > 1:
                    other.set()

        def update(self, chunk):
            if not other.is_set():
                other.wait(WAIT_S)
            self.inner.update(chunk)

        def hexdigest(self):
            with lock:
                hashing_now[0] -= 1
            return self.inner.hexdigest()

    monkeypatch.setattr(hashing.hashlib, "sha256", Watched)
    hashing.hash_files(paths + paths + [str(tmp_path / "missing.mp4")], workers=2)
    monkeypatch.setattr(hashing.hashlib, "sha256", digest)
    assert most[0] == 2
    for k, path in enumerate(paths):
        assert hashing.file_hash(path) == hashlib.sha256(bytes([k]) * 5000).hexdigest()[:32]
