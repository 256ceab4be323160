"""GLM's GA checkpoints: GLM-4.5V's model (transformers maps glmga to Glm46VForConditionalGeneration)
and processor class, with image and video processors of their own (a patch expand factor, their
own frame sampling, which timefoil turns off)."""
from __future__ import annotations

from .glm4v import save

MODEL_TYPE = "glmga"
SHOWN_AS = "video"


def make(folder: str, words: list[str]) -> None:
    # transformers registers no processor class for glmga: the hub's names GLM-4.5V's
    save(folder, words, "Glmga", processor="Glm46VProcessor")
