"""What a benchmark declares: how to load its items and how its paper asks and reports."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Callable

from ..items import Item, VideoRef
from ..protocols import Prompts
from ..scoring import SummarySpec
from ..video.sampling import Sampling


class DataError(ValueError):
    """A benchmark file that cannot be used; the message names file, record and field."""


@dataclass(frozen=True)
class Benchmark:
    name: str
    description: str
    load: Callable[[str], list[Item]]  # data directory -> items
    protocols: tuple[str, ...] = ("similarity", "entailment", "choice")
    default_protocol: str = "similarity"
    default_sampling: Sampling = Sampling(frames=8)
    prompts: Prompts = Prompts()
    order_policy: str = "balanced"
    summary: SummarySpec = field(default_factory=SummarySpec)


def resolve_video(root: str, relative: str, where: str) -> VideoRef:
    """A video path inside the dataset root; one that leaves it is refused."""
    if os.path.isabs(relative) or ".." in relative.replace("\\", "/").split("/"):
        raise DataError(f"{where}: video path {relative!r} leaves the dataset directory")
    full = os.path.join(root, relative)
    real_root = os.path.realpath(root)
    if os.path.lexists(full) and not os.path.realpath(full).startswith(real_root + os.sep):
        raise DataError(f"{where}: video {relative!r} links outside the dataset directory")
    return VideoRef.file(full)


def read_jsonl(path: str) -> list[dict]:
    records = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise DataError(f"{path}: line {number} is not valid JSON ({exc.msg})") from None
    return records
