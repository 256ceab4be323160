"""The synthetic counterfactual suite: exact counterfactual videos with certain ground truth.

Each family renders counterfactual pairs of videos. For order, direction, change of state
and binding, the second video is the first played backwards, so both hold the same
multiset of frames and only frame order separates them. Counting and speed pairs differ
in their frames. Every main video also gets a proficiency question that needs no time
(which objects are present).
"""
from __future__ import annotations

import json
import os
import random
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from ..core.colours import COLOURS
from ..core.items import Item, VideoRef
from ..video.decode import write_video
from .render import FPS, FRAMES, SHAPES, Sprite, hop, ramp, render

NUMBERS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]
MANIFEST = "synth.jsonl"


@dataclass
class Clip:
    name: str
    frames: np.ndarray
    nouns: tuple[str, ...]  # "red square", ... the objects a proficiency caption names

    @property
    def path(self) -> str:
        return f"videos/{self.name}.mp4"

    @property
    def ref(self) -> VideoRef:
        return VideoRef.file(self.path)


@dataclass
class Pair:
    """Two counterfactual clips and the items about them."""

    family: str
    clips: tuple[Clip, Clip]
    items: list[Item]


def _sprites(rng: random.Random, count: int, colours_to_avoid: int = 0) -> tuple[list[Sprite], list[str]]:
    colours = rng.sample(sorted(COLOURS), count + colours_to_avoid)
    sprites = [Sprite(rng.choice(SHAPES), colours[i], 0, 0) for i in range(count)]
    return sprites, colours[count:]


def _item(family: str, group: str, suffix: str, videos, texts, target=0, *, subtest=None, role="main",
          options_are="texts") -> Item:
    return Item(id=f"{group}-{suffix}", group_id=group, benchmark="synth", test=family, subtest=subtest,
                role=role, videos=tuple(v.ref for v in videos), texts=tuple(texts), target=target,
                options_are=options_are, categories=(family,))


def _there_is(nouns) -> str:
    return "there is " + " and ".join(("an " if n[0] in "aeiou" else "a ") + n for n in nouns)


def _proficiency(family: str, group: str, clip: Clip, absent: str, subtest: str | None,
                 suffix: str = "proficiency") -> Item:
    """Which objects are present: answerable from any single frame."""
    shape = clip.nouns[-1].split()[1]
    true = _there_is(clip.nouns)
    foil = _there_is(list(clip.nouns[:-1]) + [f"{absent} {shape}"])
    return _item(family, group, suffix, [clip], [true, foil], subtest=subtest, role="proficiency")


def _reversal_pairs(family: str, index: int, frames: np.ndarray, nouns, captions_forward: list[str],
                    captions_backward: list[str], absent: str, subtest: str | None) -> Pair:
    """Groups for a clip and its reverse: each clip's true caption against its foils."""
    a = Clip(f"{family}-{index:03d}-a", frames, tuple(nouns))
    b = Clip(f"{family}-{index:03d}-b", frames[::-1].copy(), tuple(nouns))
    items = []
    for clip, captions in ((a, captions_forward), (b, captions_backward)):
        group = clip.name
        for m, foil in enumerate(captions[1:]):
            items.append(_item(family, group, f"main{m}", [clip], [captions[0], foil], subtest=subtest))
        items.append(_proficiency(family, group, clip, absent, subtest))
    return Pair(family, (a, b), items)


def family_order(rng: random.Random, i: int) -> Pair:
    """A jumps, then B jumps; reversed: B, then A. A Vinoground-style 2x2 group."""
    (a, b), (absent,) = _sprites(rng, 2, 1)
    a, b = a.moved(x=18, y=40), b.moved(x=46, y=40)
    scene = [[a.moved(y=a.y - hop(t, 4, 8)), b.moved(y=b.y - hop(t, 20, 8))] for t in range(FRAMES)]
    frames = render(scene)
    first = Clip(f"order-{i:03d}-a", frames, (a.noun, b.noun))
    second = Clip(f"order-{i:03d}-b", frames[::-1].copy(), (a.noun, b.noun))
    c1 = f"the {a.noun} jumps and then the {b.noun} jumps"
    c2 = f"the {b.noun} jumps and then the {a.noun} jumps"
    group = f"order-{i:03d}"
    items = [
        _item("order", group, "text-a", [first], [c1, c2], 0, role="text"),
        _item("order", group, "text-b", [second], [c1, c2], 1, role="text"),
        _item("order", group, "video-a", [first, second], [c1], 0, role="video", options_are="videos"),
        _item("order", group, "video-b", [first, second], [c2], 1, role="video", options_are="videos"),
    ]
    for clip, suffix in ((first, "proficiency-a"), (second, "proficiency-b")):
        items.append(_proficiency("order", group, clip, absent, None, suffix))
    return Pair("order", (first, second), items)


def family_direction(rng: random.Random, i: int) -> Pair:
    subtest = ("horizontal", "vertical", "depth")[i % 3]
    (a,), (absent,) = _sprites(rng, 1, 1)
    words = {"horizontal": ("left", "right"), "vertical": ("top", "bottom"), "depth": ("far", "near")}[subtest]
    scene = []
    for t in range(FRAMES):
        r = ramp(t, 0, FRAMES)
        if subtest == "horizontal":
            scene.append([a.moved(x=10 + 44 * r, y=32)])
        elif subtest == "vertical":
            scene.append([a.moved(x=32, y=10 + 44 * r)])
        else:
            scene.append([a.moved(x=32, y=32, size=round(6 + 26 * r))])
    forward = f"the {a.noun} moves from {words[0]} to {words[1]}"
    backward = f"the {a.noun} moves from {words[1]} to {words[0]}"
    return _reversal_pairs("direction", i, render(scene), [a.noun], [forward, backward], [backward, forward],
                           absent, subtest)


def family_state(rng: random.Random, i: int) -> Pair:
    subtest = ("action", "prestate", "poststate", "inverse")[i % 4]
    shape = rng.choice(SHAPES)
    before, after, absent = rng.sample(sorted(COLOURS), 3)
    base = Sprite(shape, before, 32, 32, 18)
    frames = render([[base.moved(colour=before if t < FRAMES // 2 else after)] for t in range(FRAMES)])

    def captions(c0: str, c1: str) -> list[str]:
        true = f"the {shape} turns from {c0} to {c1}"
        foil = {"action": f"the {shape} changes shape",
                "prestate": f"the {shape} turns from {absent} to {c1}",
                "poststate": f"the {shape} turns from {c0} to {absent}",
                "inverse": f"the {shape} turns from {c1} to {c0}"}[subtest]
        if subtest == "action":
            true = f"the {shape} changes colour"
        return [true, foil]

    nouns = [f"{before} {shape}", f"{after} {shape}"]
    return _reversal_pairs("change_of_state", i, frames, nouns, captions(before, after), captions(after, before),
                           absent, subtest)


def _count_negatives(n: int, hard: bool) -> list[int]:
    if hard:  # hard counts are at least 2, so n - 1 is a valid count
        return [n - 1, n + 1, n + 2]
    far = sorted((m for m in range(1, 9) if abs(m - n) >= 2), key=lambda m: (abs(m - n), m))
    return far[:3]


def _times(n: int) -> str:
    return "once" if n == 1 else f"{NUMBERS[n]} times"


def family_counting(rng: random.Random, i: int) -> Pair:
    """Exactly k jumps against k' jumps; three wrong counts per video (MBA-style)."""
    hard = i % 2 == 1
    subtest = "hard" if hard else "easy"
    k = rng.choice([3, 4, 5, 6]) if hard else rng.choice([1, 2, 3])
    k2 = (k + rng.choice([-1, 1])) if hard else rng.choice([m for m in range(1, 7) if abs(m - k) >= 2])
    (a,), (absent,) = _sprites(rng, 1, 1)
    a = a.moved(x=32, y=40, size=16)
    clips, items = [], []
    for suffix, n in (("a", k), ("b", k2)):
        start = (FRAMES - 4 * n) // 2  # each jump: three frames in the air, one on the ground
        scene = [[a.moved(y=a.y - sum(hop(t, start + 4 * j, 3) for j in range(n)))] for t in range(FRAMES)]
        clip = Clip(f"counting-{i:03d}-{suffix}", render(scene), (a.noun,))
        clips.append(clip)
        true = f"the {a.noun} jumps {_times(n)}"
        for m, wrong in enumerate(_count_negatives(n, hard)):
            items.append(_item("counting", clip.name, f"main{m}", [clip],
                               [true, f"the {a.noun} jumps {_times(wrong)}"], subtest=subtest))
        items.append(_proficiency("counting", clip.name, clip, absent, subtest))
    return Pair("counting", (clips[0], clips[1]), items)


def family_speed(rng: random.Random, i: int) -> Pair:
    (a,), (absent,) = _sprites(rng, 1, 1)
    clips, items = [], []
    for suffix, (start, stop), word, other in (("a", (0, FRAMES), "slowly", "quickly"),
                                               ("b", (11, 21), "quickly", "slowly")):
        frames = render([[a.moved(x=10 + 44 * ramp(t, start, stop), y=32)] for t in range(FRAMES)])
        clip = Clip(f"speed-{i:03d}-{suffix}", frames, (a.noun,))
        clips.append(clip)
        items.append(_item("speed", clip.name, "main0", [clip],
                           [f"the {a.noun} moves {word} from left to right",
                            f"the {a.noun} moves {other} from left to right"]))
        items.append(_proficiency("speed", clip.name, clip, absent, None))
    return Pair("speed", (clips[0], clips[1]), items)


def family_binding(rng: random.Random, i: int) -> Pair:
    subtest = ("binding", "coreference")[i % 2]
    (a, b), (absent,) = _sprites(rng, 2, 1)
    if subtest == "binding":
        a, b = a.moved(x=20), b.moved(x=44)
        frames = render([[a.moved(y=52 - 40 * ramp(t, 0, FRAMES)), b.moved(y=12 + 40 * ramp(t, 0, FRAMES))]
                         for t in range(FRAMES)])
        up = f"the {a.noun} moves up while the {b.noun} moves down"
        down = f"the {a.noun} moves down while the {b.noun} moves up"
        forward, backward = [up, down], [down, up]
    else:
        a, b = a.moved(x=20, y=40), b.moved(x=46, y=40)
        hidden = {20, 21, 24, 25}
        frames = render([[a.moved(y=a.y - hop(t, 4, 8), visible=t not in hidden), b] for t in range(FRAMES)])
        forward = [f"the {a.noun} jumps and then it blinks", f"the {a.noun} jumps and then the {b.noun} blinks"]
        backward = [f"the {a.noun} blinks and then it jumps", f"the {a.noun} blinks and then the {b.noun} jumps"]
    return _reversal_pairs("binding", i, frames, [a.noun, b.noun], forward, backward, absent, subtest)


FAMILIES: dict[str, Callable[[random.Random, int], Pair]] = {
    "order": family_order, "direction": family_direction, "change_of_state": family_state,
    "counting": family_counting, "speed": family_speed, "binding": family_binding,
}
SAME_FRAMES = ("order", "direction", "change_of_state", "binding")  # pairs are exact reversals


def build_pairs(per_family: int, seed: int = 0, families=tuple(FAMILIES)) -> list[Pair]:
    pairs = []
    for family in families:
        for i in range(per_family):
            pairs.append(FAMILIES[family](random.Random(f"{seed}:{family}:{i}"), i))
    return pairs


def generate(out_dir: str, per_family: int = 8, seed: int = 0, families=tuple(FAMILIES)) -> list[Item]:
    """Render the suite into ``out_dir``: videos/*.mp4 and the item manifest. Returns the
    items as the ``synth`` benchmark loads them (paths inside ``out_dir``)."""
    os.makedirs(os.path.join(out_dir, "videos"), exist_ok=True)
    items = []
    with open(os.path.join(out_dir, MANIFEST + ".tmp"), "w") as manifest:
        for pair in build_pairs(per_family, seed, families):
            for clip in pair.clips:
                write_video(os.path.join(out_dir, clip.path), clip.frames, FPS)
            for item in pair.items:
                record = item.describe()
                record["metadata"] = {"family": pair.family, "pair": [c.path for c in pair.clips],
                                      "same_frames": pair.family in SAME_FRAMES}
                manifest.write(json.dumps(record) + "\n")
                located = tuple(VideoRef.file(os.path.join(out_dir, v.path)) for v in item.videos)
                items.append(replace(item, videos=located, metadata=record["metadata"]))
    os.replace(os.path.join(out_dir, MANIFEST + ".tmp"), os.path.join(out_dir, MANIFEST))
    return items
