"""A batch that fails is asked again one request at a time: never silently. Each fallback is one
line on stderr naming the exception and the batch, and counted in run.json; the failed batch's
memory is given back (its traceback gone, gc run, torch's cache emptied) before the first retry;
an out-of-memory names device=, device_map=, dtype= and batch_size=. The GPU is faked: torch
sees one, and emptying its cache is counted."""
import json
import re
import weakref

import pytest

from timefoil import RunConfig, run
from timefoil.execution.answering import Answerer
from timefoil.execution.fallbacks import added_fallbacks
from timefoil.models.base import Model
from timefoil.models.requests import Answer, Request
from timefoil.video.frames import FrameStore

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.suite(per_family=1, seed=4, families=("order",))
YES = Answer(raw="Yes", probs={"yes": 0.75, "no": 0.25})
ON_GPU = {"device": "cuda:0", "device_map": "cuda:0", "dtype": "bfloat16", "attention": "sdpa"}


class Activations:
    """What a forward holds while it runs: alive as long as its frame is."""


class FailsInBatches(Model):
    """Answers one request at a time; a batch of more fails with ``error``, its activations in
    the failing frame. Each call says what it saw: the batch's size, whether the last failed
    batch's activations were still alive, and how often the GPU's cache had been emptied."""
    name = "fails-in-batches"

    def __init__(self, error, batch_size=4, notes=None):
        # a new exception each time: one kept here would keep its traceback, and the frame with it
        self.error, self.batch_size, self.calls, self.last = error, batch_size, [], None
        self.emptied, self.said = [], notes or {}

    @property
    def notes(self):
        return self.said

    def answer_entailment(self, requests, frames):
        alive = self.last is not None and self.last() is not None
        self.calls.append((len(requests), alive, len(self.emptied)))
        if len(requests) > 1:
            held = Activations()
            self.last = weakref.ref(held)
            raise self.error()
        return [YES for _ in requests]


def fake_gpu(monkeypatch, model):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: model.emptied.append(1))


def requests(n):
    return [Request("entailment", None, f"is it {i}?", caption=f"caption {i}") for i in range(n)]


def test_a_failed_batch_is_let_go_before_its_requests_are_asked_again(monkeypatch, capsys):
    model = FailsInBatches(lambda: torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 3.00 GiB"),
                           batch_size=8, notes={"ran_on": ON_GPU})
    fake_gpu(monkeypatch, model)
    answerer = Answerer(model, FrameStore())
    answers = answerer.ask(requests(8))
    assert answers == [YES] * 8
    # the batch of 8 failed; then each request alone, the batch's activations already freed and
    # the cache emptied once before the first of them
    assert model.calls == [(8, False, 0)] + [(1, False, 1)] * 8
    said = capsys.readouterr().err.splitlines()
    assert said == ["timefoil: fails-in-batches: out of memory in a batch of 8 (device=cuda:0, device_map=cuda:0, "
                    "dtype=bfloat16, batch_size=8); try a smaller batch_size, device_map=auto (the layers spread "
                    "over every GPU torch sees) or a GPU with more free memory; asking its 8 requests one at a time "
                    "(fallback 1, counted in run.json)"]
    assert answerer.fallback_counts == {
        "batches": 1, "requests": 8, "exceptions": {"OutOfMemoryError": 1},
        "messages": {"OutOfMemoryError": "CUDA out of memory. Tried to allocate 3.00 GiB"}}


def test_a_request_out_of_memory_alone_is_its_error_and_its_memory_is_given_back(monkeypatch):
    model = FailsInBatches(None)
    fake_gpu(monkeypatch, model)

    def always(requests, frames):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 9.00 GiB")

    model.answer_entailment = always
    answers = Answerer(model, FrameStore()).ask(requests(3))
    assert [a.error for a in answers] == ["model error: OutOfMemoryError: CUDA out of memory. Tried to allocate "
                                          "9.00 GiB"] * 3
    assert len(model.emptied) == 1 + 3  # after the batch, and after each request that ran out alone


def test_any_failed_batch_is_named_and_counted_and_a_batch_of_one_is_no_fallback(monkeypatch, capsys):
    model = FailsInBatches(lambda: RuntimeError("an illegal memory\naccess was encountered"), batch_size=4)
    answerer = Answerer(model, FrameStore())
    assert answerer.ask(requests(3)) == [YES] * 3 and answerer.ask(requests(1)) == [YES]
    assert answerer.ask(requests(2)) == [YES] * 2
    assert capsys.readouterr().err.splitlines() == [
        f"timefoil: fails-in-batches: a batch of {n} failed (RuntimeError: an illegal memory access was "
        f"encountered); asking its {n} requests one at a time (fallback {k}, counted in run.json)"
        for k, n in ((1, 3), (2, 2))]
    assert answerer.fallback_counts == {"batches": 2, "requests": 5, "exceptions": {"RuntimeError": 2},
                                        "messages": {"RuntimeError": "an illegal memory access was encountered"}}


def test_run_json_counts_the_fallbacks_of_a_run(suite, tmp_path, capsys):
    """Counted from the batches the model itself saw fail, not from timefoil's own count."""
    model = FailsInBatches(lambda: RuntimeError("cuDNN error: CUDNN_STATUS_INTERNAL_ERROR"), batch_size=2)
    config = RunConfig("synth", "fails-in-batches", data_dir=suite, protocol="entailment", blind=True)
    run(config, str(tmp_path / "run"), cache_dir=str(tmp_path / "cache"), model=model, progress=False)
    failed = [n for n, _, _ in model.calls if n > 1]
    records = [json.loads(line) for line in open(tmp_path / "run" / "items.jsonl")]
    # the suite's 4 distinct requests in two batches of 2, each failed and its requests asked alone
    assert failed == [2, 2] and sum(n for n, _, _ in model.calls if n == 1) == 4
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["batch_fallbacks"] == {"batches": len(failed), "requests": sum(failed),
                                       "exceptions": {"RuntimeError": len(failed)},
                                       "messages": {"RuntimeError": "cuDNN error: CUDNN_STATUS_INTERNAL_ERROR"}}
    lines = [line for line in capsys.readouterr().err.splitlines() if "one at a time" in line]
    assert [int(re.search(r"a batch of (\d+) failed", line).group(1)) for line in lines] == failed
    assert all(r["answer"]["probs"] == {"yes": 0.75, "no": 0.25} for r in records)


def test_sessions_and_shards_add_their_fallbacks():
    first = {"batches": 2, "requests": 7, "exceptions": {"RuntimeError": 2}, "messages": {"RuntimeError": "first"}}
    assert added_fallbacks({}, first) == first
    later = {"batches": 3, "requests": 24, "exceptions": {"OutOfMemoryError": 2, "RuntimeError": 1},
             "messages": {"OutOfMemoryError": "CUDA out of memory", "RuntimeError": "later"}}
    assert added_fallbacks(first, later) == {
        "batches": 5, "requests": 31, "exceptions": {"OutOfMemoryError": 2, "RuntimeError": 3},
        "messages": {"OutOfMemoryError": "CUDA out of memory", "RuntimeError": "first"}}
