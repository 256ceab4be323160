"""Answering through transformers prints no library warning: a fresh interpreter with every
warning turned into an error (``-W error``) loads a tiny causal LM and a tiny video LLM by path
and answers entailment (prefix reuse on a shared prompt), choice (greedy generation on from the
first forward pass) and generation. A deprecation transformers announces (such as handing the
KV cache over under a keyword it is retiring) fails here before users see it."""
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from timefoil.protocols import Prompts  # noqa: E402
from timefoil.testing import tiny_llama, tiny_vlm  # noqa: E402

PROMPTS = Prompts()
CAPTIONS = ["a man opens the door", "a man closes the door"]
ANSWER_EVERY_KIND = textwrap.dedent("""
    import sys

    from timefoil.core.items import VideoRef
    from timefoil.models.local.hf_generative import HFGenerative
    from timefoil.models.local.hf_inputs import frames_of
    from timefoil.models.requests import Request
    from timefoil.testing import pattern_frames

    clip = frames_of(pattern_frames(4, 40, 50), rate=0.8)
    for path, video in ((sys.argv[1], None), (sys.argv[2], VideoRef.file("/nonexistent/clip.mp4"))):
        model = HFGenerative(path, batch_size=4)
        captions = sys.argv[3:]
        asked = [Request("entailment", video, "Does the video match: " + c + "? Answer Yes or No.", caption=c)
                 for c in captions]
        asked.append(Request("choice", video, "Which caption? A: " + captions[0] + " B: " + captions[1],
                             labels=("A", "B"), option_texts=tuple(captions), max_tokens=4))
        asked.append(Request("generation", video, "Describe the video.", max_tokens=4))
        answers = model.answer(asked, lambda ref, sampling: clip)
        assert all(a.error is None for a in answers), [a.error for a in answers]
        assert model.stats["prefix_hits"] >= 1  # the entailment pair shared its prefix
    print("answered")
""")


def test_answering_raises_no_warning_from_any_library(tmp_path):
    words = [PROMPTS.entailment, "Does the video match : ? Answer Yes or No . Which caption ? A : B : Describe",
             *CAPTIONS]
    text_model = tiny_llama(tmp_path / "llama", words)
    video_model = tiny_vlm(tmp_path / "qwen2_vl", "qwen2_vl", words)
    ran = subprocess.run([sys.executable, "-W", "error", "-c", ANSWER_EVERY_KIND, text_model, video_model, *CAPTIONS],
                         capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0 and ran.stdout.strip() == "answered", ran.stderr[-3000:]
    assert ran.stderr.strip() == "", ran.stderr[-3000:]


def test_timefoil_run_of_a_local_video_llm_raises_no_warning(tmp_path):
    """``timefoil run`` as a user types it, on a tiny local video LLM, in an interpreter that
    turns every warning into an error: the load, the decode-ahead workers (which decode the
    videos and build their pixels), the prefix reuse and the records raise none, and no answer
    is an error (a warning raised inside a batch would be recorded as one)."""
    import json

    from timefoil.video.decode import write_video
    from timefoil.testing import pattern_frames

    data = tmp_path / "data"
    (data / "videos").mkdir(parents=True)
    rows = [{"test_name": "chrono", "video_id": f"v{k % 2}", "pos": CAPTIONS[k % 2], "neg": CAPTIONS[1 - k % 2]}
            for k in range(4)]
    (data / "velociti.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    for k in range(2):
        write_video(str(data / "videos" / f"v{k}.mp4"), pattern_frames(6, 40 + 8 * k, 56), 2)
    words = ["Carefully watch the video and pay attention to the sequence of events details actions of persons",
             "Here is a caption that describes Based on your observation does given entail Just answer with either "
             "Yes or No", *CAPTIONS]
    model = tiny_vlm(tmp_path / "qwen2_vl", "qwen2_vl", words)
    out = tmp_path / "run"
    ran = subprocess.run([sys.executable, "-W", "error", "-m", "timefoil.cli", "run", "velociti", "--model",
                          f"hf:{model}", "--data", str(data), "--frames", "4", "--out", str(out), "--cache-dir",
                          str(tmp_path / "cache"), "--no-progress"], capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert "warn" not in ran.stderr.lower() and "Traceback" not in ran.stderr, ran.stderr[-3000:]
    records = [json.loads(line) for line in (out / "items.jsonl").read_text().splitlines()]
    assert len(records) == 2 * len(rows) and all(not r["answer"].get("error") for r in records), records


def test_the_official_processor_is_handed_frames_it_may_write(tmp_path):
    """The frame store's arrays are read-only; transformers' video processor turns them into
    tensors with torch.from_numpy, which warns of a read-only array ("The given NumPy array is
    not writable") at every call: the processor is handed writable frames, of equal values."""
    import types
    import warnings

    import numpy as np
    import torch

    from timefoil.models.local.hf_inputs import InputEncoder, frames_of
    from timefoil.testing import pattern_frames

    clip = frames_of(pattern_frames(4, 16, 16), rate=2.0)
    clip.array.flags.writeable = False
    seen = []

    class Processor:
        tokenizer = types.SimpleNamespace(bos_token=None)

        def __call__(self, text, videos, **kwargs):
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                seen.extend(torch.from_numpy(video) for video in videos)
            return {}

    encoder = types.SimpleNamespace(video_as="video", times_told=None, time_origin=None)
    InputEncoder._official(encoder, ["a"], [clip], Processor())
    assert len(seen) == 1 and np.array_equal(seen[0].numpy(), clip.array)
