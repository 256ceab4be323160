"""GLM-4.5V / 4.6V: GLM-4.1V's layout (its text and vision configs, its template), each frame
block followed by "<seconds>.<tenths> seconds"."""
from __future__ import annotations

from .glm4v import save

MODEL_TYPE = "glm46v"
SHOWN_AS = "video"


def make(folder: str, words: list[str]) -> None:
    save(folder, words, "Glm46V")
