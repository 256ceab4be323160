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
