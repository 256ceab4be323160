"""Any benchmark as a folder: ``benchmark.json`` + ``items.jsonl`` (+ the videos).

The format a builder writes, a converter produces or a person types by hand, read with
``timefoil run items --data DIR``. One JSON object per line of ``items.jsonl``:

    {"id": "a1", "group": "a", "test": "order", "video": "videos/a.mp4",
     "texts": ["a man jumps, then a dog barks", "a dog barks, then a man jumps"], "target": 0}

- text options (a caption and k foils): ``video`` + ``texts`` + ``target``;
- video options (one text, several videos): ``videos`` + ``text`` + ``target``;
- a 2x2 group (two videos, two texts): four items that share ``group``;
- a proficiency pair: a second item of the group with ``"role": "proficiency"``;
- free generation: ``video`` + ``references``.

Optional: ``subtest``, ``categories``, ``prompt`` (a question asked verbatim),
``target_position``, ``labels``, ``metadata``, and for any video ``{"path", "start", "end"}``
in place of the path. ``group`` defaults to the id. Paths are relative to the folder.

``benchmark.json``: ``{"name": ..., "description": ..., "tests": [...]}`` (all optional);
``name`` becomes each item's benchmark name.
"""
from __future__ import annotations

import json
import os
from typing import Any, Iterable

from ..core.items import Item, VideoRef
from ..core.output import write_whole
from ..scoring import SummarySpec
from .base import (Benchmark, DataError, distinct, make_item, need, need_index, need_object, need_text, need_texts,
                   one_of, optional, resolve_video, window)
from .reading import read_json, read_jsonl

ITEMS, META = "items.jsonl", "benchmark.json"
ROLES = ("main", "proficiency")


def read_meta(data_dir: str) -> dict[str, Any]:
    path = os.path.join(data_dir, META)
    if not os.path.exists(path):
        return {}
    meta = read_json(path)
    if not isinstance(meta, dict):
        raise DataError(f"{path}: expected an object, found {type(meta).__name__}")
    for field in ("name", "description"):
        optional(meta, field, need_text, path)
    optional(meta, "tests", need_texts, path)
    return meta


def load(data_dir: str) -> list[Item]:
    path = os.path.join(data_dir, ITEMS)
    if not os.path.exists(path):
        raise DataError(f"{path} not found: a benchmark folder holds {ITEMS} (and {META})")
    name = read_meta(data_dir).get("name") or os.path.basename(os.path.abspath(data_dir))
    return distinct([(where, item_from_json(record, data_dir, name, where)) for where, record in read_jsonl(path)],
                    path)


def _video(value, data_dir: str, where: str) -> VideoRef:
    if isinstance(value, str):
        return resolve_video(data_dir, value, where)
    if not isinstance(value, dict):
        raise DataError(f"{where}: a video is a path or an object with 'path', found {type(value).__name__}")
    path = need_text(value, "path", where)
    start, end = window(value, "start", "end", where)
    ref = resolve_video(data_dir, path, where)
    return VideoRef.file(ref.path, start, end)


def item_from_json(record: dict, data_dir: str, benchmark: str, where: str) -> Item:
    item_id = need_text(record, "id", where)
    common: dict[str, Any] = {
        "id": item_id, "group_id": optional(record, "group", need_text, where, item_id), "benchmark": benchmark,
        "test": need_text(record, "test", where), "subtest": optional(record, "subtest", need_text, where),
        "role": one_of(optional(record, "role", need_text, where, "main"), ROLES, "role", where),
        "categories": optional(record, "categories", need_texts, where, ()),
        "prompt": optional(record, "prompt", need_text, where),
        "target_position": optional(record, "target_position", need_index, where),
        "labels": optional(record, "labels", need_texts, where, ()),
        "metadata": optional(record, "metadata", need_object, where, {})}
    target = optional(record, "target", need_index, where, 0)
    if "references" in record:
        return make_item(where, **common, videos=(_video(need(record, "video", where), data_dir, where),),
                         texts=need_texts(record, "references", where), options_are="references")
    if "videos" in record:
        videos = record["videos"]
        if not isinstance(videos, list):
            raise DataError(f"{where}: field 'videos' must be a list, found {type(videos).__name__}")
        return make_item(where, **common, videos=tuple(_video(v, data_dir, where) for v in videos),
                         texts=(need_text(record, "text", where),), target=target, options_are="videos")
    return make_item(where, **common, videos=(_video(need(record, "video", where), data_dir, where),),
                     texts=need_texts(record, "texts", where), target=target)


def item_to_json(item: Item, data_dir: str) -> dict[str, Any]:
    """The inverse of ``item_from_json``: paths relative to ``data_dir``."""
    def video(ref: VideoRef):
        path = os.path.relpath(ref.path, data_dir)
        return path if ref.start is None and ref.end is None else {"path": path, "start": ref.start, "end": ref.end}

    record: dict[str, Any] = {"id": item.id, "group": item.group_id, "test": item.test}
    for key, value in (("subtest", item.subtest), ("categories", list(item.categories)), ("prompt", item.prompt),
                       ("target_position", item.target_position), ("labels", list(item.labels)),
                       ("metadata", item.metadata)):
        if value:
            record[key] = value
    if item.role != "main":
        record["role"] = item.role
    if item.options_are == "references":
        record.update(video=video(item.videos[0]), references=list(item.texts))
    elif item.options_are == "videos":
        record.update(videos=[video(v) for v in item.videos], text=item.texts[0], target=item.target)
    else:
        record.update(video=video(item.videos[0]), texts=list(item.texts), target=item.target)
    return record


def write(data_dir: str, items: Iterable[Item], meta: dict[str, Any]) -> str:
    """Write ``items`` (videos already inside ``data_dir``) as a benchmark folder."""
    os.makedirs(data_dir, exist_ok=True)
    items = list(items)
    tests = list(dict.fromkeys(item.test for item in items))
    write_whole(os.path.join(data_dir, META), json.dumps({"tests": tests, **meta}, indent=2))
    write_whole(os.path.join(data_dir, ITEMS),
                "".join(json.dumps(item_to_json(item, data_dir), ensure_ascii=False) + "\n" for item in items))
    return data_dir


BENCHMARK = Benchmark(
    name="items",
    description="any benchmark folder: benchmark.json + items.jsonl (what `timefoil build` and converters write)",
    load=load,
    shapes=frozenset({"texts", "videos", "references"}),
    summary=SummarySpec(average={"similarity": "accuracy", "entailment": "StrictVLE", "choice": "accuracy"}),
    table={"similarity": ("accuracy", "group"), "entailment": ("StrictVLE", "ClassicVLE", "group"),
           "choice": ("accuracy", "A∧B", "bias", "group")},
    reference="depends on the folder: chance rows are computed from its item structure",
    obtain="a folder written by `timefoil build run` or a converter, or by hand (README: Benchmark folders)",
)
