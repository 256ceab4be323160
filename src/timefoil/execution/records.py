"""What a run stores for each answered request, and the facts read back from those records."""
from __future__ import annotations

import json
from typing import Any, Sequence

from ..core.items import Item
from ..measures.parsing import Parsed
from ..models.requests import Answer
from ..protocols import PlannedRequest, Protocol
from ..video.sampling import Sampling


def stored_request(planned: PlannedRequest, key: str) -> dict[str, Any]:
    return {**planned.request.to_json(), **planned.info, "key": key}


def records_for(users: Sequence[tuple[Item, PlannedRequest]], answer: Answer, frames: dict, key: str,
                protocol: Protocol, verdict: dict | None = None) -> list[dict]:
    """The stored form of one answer, once per request id that asked it. Each record carries
    its item's description, so a run directory rescores with no benchmark files at hand; a
    judge's verdict sits beside the answer ("judge"), never inside it."""
    records = []
    for item, p in users:
        request = stored_request(p, key)
        parsed = None if answer.error else protocol.read(request, answer, verdict)
        records.append({"id": p.id, "item": item.describe(), "expected": p.expected, "request": request,
                        "answer": answer.to_json(), "judge": verdict, "frames": frames,
                        "parsed": parsed_json(parsed)})
    return records


def parsed_json(parsed: Parsed | None) -> dict | None:
    """The stored reading; where it could come from the text or the probabilities, which."""
    if parsed is None:
        return None
    return {"value": parsed.value, "status": parsed.status, **({"read_from": parsed.read_from}
                                                                if parsed.read_from else {})}


def capped_videos(records: Sequence[dict]) -> dict | None:
    """How many of the run's videos an fps sampling's ``max_frames`` cap changed (fewer frames
    than the rate asks for, unevenly spaced), from the records' frame facts; None if none."""
    videos: set[str] = set()
    capped: dict[str, dict] = {}
    for record in records:
        video = record["request"].get("video")
        if video:
            key = json.dumps(video, sort_keys=True)
            videos.add(key)
            if (record.get("frames") or {}).get("capped"):
                capped[key] = record["frames"]["capped"]
    if not capped:
        return None
    return {"videos": len(capped), "of": len(videos), "max_frames": max(c["max_frames"] for c in capped.values()),
            "most_asked": max(c["asked"] for c in capped.values())}


def capped_line(capped: dict, sampling: Sampling) -> str:
    return (f"max_frames {capped['max_frames']} capped {sampling.fps:g} fps on {capped['videos']} of {capped['of']} "
            f"videos: they show {capped['max_frames']} evenly spread frames, not the up to {capped['most_asked']} "
            f"the rate asks for (--max-frames {capped['most_asked']} keeps the rate)")
