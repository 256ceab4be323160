"""run.json's ``batch_fallbacks``: how many batches failed and were asked again one request at a
time (right answers at one request's cost each), summed over a run's sessions and its shards."""
from __future__ import annotations

from collections import Counter


def added_fallbacks(before: dict, now: dict) -> dict:
    """Two counts of batches asked again one request at a time, as one (of each exception's
    messages, the earlier kept)."""
    kinds = Counter(before.get("exceptions") or {})
    kinds.update(now.get("exceptions") or {})
    messages = {**(now.get("messages") or {}), **(before.get("messages") or {})}
    return {"batches": before.get("batches", 0) + now.get("batches", 0),
            "requests": before.get("requests", 0) + now.get("requests", 0), "exceptions": dict(sorted(kinds.items())),
            "messages": dict(sorted(messages.items()))}


__all__ = ["added_fallbacks"]
