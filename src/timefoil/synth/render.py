"""Draw coloured shapes with numpy. A scene is, per frame, a list of visible objects."""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..core.colours import COLOURS

SIZE = 64  # frame width and height in pixels
FRAMES = 32  # frames per video
FPS = 8
BACKGROUND = (25, 25, 25)
SHAPES = ("square", "circle", "triangle")


@dataclass(frozen=True)
class Sprite:
    shape: str
    colour: str
    x: float  # centre, pixels
    y: float
    size: float = 14.0
    visible: bool = True

    def moved(self, **changes) -> "Sprite":
        return replace(self, **changes)

    @property
    def noun(self) -> str:
        return f"{self.colour} {self.shape}"


_YY, _XX = np.mgrid[0:SIZE, 0:SIZE]


def _mask(sprite: Sprite) -> np.ndarray:
    half = sprite.size / 2
    dx, dy = _XX - sprite.x, _YY - sprite.y
    if sprite.shape == "square":
        return (np.abs(dx) <= half) & (np.abs(dy) <= half)
    if sprite.shape == "circle":
        return dx**2 + dy**2 <= half**2
    if sprite.shape == "triangle":  # apex up; width grows linearly downwards
        t = (dy + half) / (2 * half)
        return (t >= 0) & (t <= 1) & (np.abs(dx) <= t * half)
    raise ValueError(f"unknown shape {sprite.shape!r}")


def draw(sprites: list[Sprite]) -> np.ndarray:
    frame = np.empty((SIZE, SIZE, 3), np.uint8)
    frame[:] = BACKGROUND
    for sprite in sprites:
        if sprite.visible:
            frame[_mask(sprite)] = COLOURS[sprite.colour]
    return frame


def render(scene: list[list[Sprite]]) -> np.ndarray:
    return np.stack([draw(sprites) for sprites in scene])


def ramp(t: int, start: int, stop: int) -> float:
    """0 before ``start``, 1 from ``stop - 1`` on, linear in between."""
    if t < start:
        return 0.0
    if t >= stop - 1:
        return 1.0
    return (t - start) / (stop - 1 - start)


def hop(t: int, start: int, length: int, height: float = 12.0) -> float:
    """Upward offset of a jump: up and back down, symmetric in time, so reversing a video
    turns "A jumps, then B" into "B jumps, then A" with exactly the same frames."""
    if not start <= t < start + length:
        return 0.0
    mid = (length - 1) / 2
    return round(height * (1 - abs(t - start - mid) / (mid + 0.5)))
