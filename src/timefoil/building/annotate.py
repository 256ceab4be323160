"""One self-contained HTML page on which a person answers a benchmark's items.

Frames are embedded (no network, no server). Each annotator gets their own order of items
and of options (seeded by their name), recorded in the file they save. Two tasks:
``choice`` (which text matches the video; keys 1-9, or 0 for "none of them") and
``validate`` (is the counterfactual a valid one: y / n, then the aspect it changes: 1-9).
Arrows move between items, S saves. Captions are inserted as text, never as markup.
"""
from __future__ import annotations

import hashlib
import random
import re
from html import escape
from importlib import resources
from typing import Sequence

from ..reports.html.page import _script_json
from ..core.imaging import png_data_url, thumbnail
from ..core.output import write_whole
from ..core.items import Item
from ..video.frames import FrameStore
from ..video.sampling import Sampling
from .answers import TASKS

PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")


def annotator_seed(annotator: str, seed: int = 0) -> int:
    return int(hashlib.sha256(f"{seed}:{annotator}".encode()).hexdigest()[:12], 16)


def page_data(items: Sequence[Item], annotator: str, task: str, *, benchmark: str, aspects: Sequence[str] = (),
              frames: int = 6, height: int = 120, seed: int = 0, cache_dir: str | None = None) -> dict:
    """What the page shows, in this annotator's order; videos decoded once each."""
    if task not in TASKS:
        raise ValueError(f"task must be one of {', '.join(TASKS)}, not {task!r}")
    usable = [item for item in items if item.options_are == "texts" and item.role == "main"]
    rng = random.Random(annotator_seed(annotator, seed))
    order = list(range(len(usable)))
    rng.shuffle(order)
    store, strips = FrameStore(cache_dir=cache_dir), {}
    shown = []
    for index in order:
        item = usable[index]
        ref = item.videos[0]
        if ref.key() not in strips:
            try:
                decoded = store.get(ref, Sampling(frames=frames))
                strips[ref.key()] = [png_data_url(thumbnail(f, height)) for f in decoded.array]
            except Exception as exc:  # a video that cannot be shown is said on the page
                strips[ref.key()] = f"video unavailable: {exc}"
        options = list(range(item.n_options))
        rng.shuffle(options)
        shown.append({"id": item.id, "test": item.test, "frames": strips[ref.key()],
                      "texts": [item.texts[i] for i in options], "order": options})
    return {"annotator": annotator, "benchmark": benchmark, "task": task, "seed": seed, "aspects": list(aspects),
            "items": shown}


def write_page(path: str, data: dict) -> str:
    """Fill the page's placeholders in one pass, each value escaped for where it lands: the data
    as JSON that no ``</script>`` can end, the title as HTML text. Filled text is never scanned
    again, so a caption that reads ``{{title}}`` stays a caption."""
    template = (resources.files("timefoil.building") / "data" / "annotate.html").read_text(encoding="utf-8")
    values = {"data": _script_json(data),
              "title": escape(f"{data['benchmark']}: {data['task']} ({data['annotator']})", quote=True)}
    found = set(PLACEHOLDER.findall(template))
    if found != set(values):  # a template and a writer out of step would show a broken page
        raise ValueError(f"annotate.html has placeholders {sorted(found)}, the page fills {sorted(values)}")
    return write_whole(path, PLACEHOLDER.sub(lambda match: values[match.group(1)], template))
