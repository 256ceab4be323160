"""Shared test helpers: items built in code and answered without a run directory."""
from __future__ import annotations

from collections import defaultdict

from timefoil.items import Item, VideoRef
from timefoil.protocols import Prompts, plan_requests, target_positions
from timefoil.runner import records_for
from timefoil.video.sampling import Sampling


def answer_offline(items, protocol, model, order_policy="balanced", seed=0):
    """What a run would store, minus the disk: plan, deduplicate by content, answer, record."""
    positions = target_positions(items, order_policy, seed)
    by_key = defaultdict(list)
    for item in items:
        for planned in plan_requests(item, protocol, Prompts(), Sampling(frames=8), positions[item.id]):
            by_key[planned.request.key()].append((item, planned))
    keys = list(by_key)
    answers = model.answer([by_key[k][0][1].request for k in keys], frames=None)
    records = []
    for key, answer in zip(keys, answers):
        records += records_for(by_key[key], answer, {}, key)
    return records


def video(name: str) -> VideoRef:
    return VideoRef.file(f"/nonexistent/{name}.mp4")


def pair_item(item_id, group, texts, *, test="t", subtest=None, role="main", target=0, vid=None) -> Item:
    return Item(id=item_id, group_id=group, benchmark="test", test=test, subtest=subtest, role=role,
                videos=(video(vid or group),), texts=tuple(texts), target=target)


def vinoground_group(g: int) -> list[Item]:
    """The four questions of one 2x2 pair: two text questions, two video questions."""
    v1, v2 = video(f"{g}_pos"), video(f"{g}_neg")
    c1, c2 = f"caption one of {g}", f"caption two of {g}"
    common = dict(group_id=f"g{g}", benchmark="test", test="vino")
    return [
        Item(id=f"{g}-t1", videos=(v1,), texts=(c1, c2), target=0, role="text", **common),
        Item(id=f"{g}-t2", videos=(v2,), texts=(c1, c2), target=1, role="text", **common),
        Item(id=f"{g}-v1", videos=(v1, v2), texts=(c1,), target=0, role="video", options_are="videos", **common),
        Item(id=f"{g}-v2", videos=(v1, v2), texts=(c2,), target=1, role="video", options_are="videos", **common),
    ]
