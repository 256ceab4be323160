"""Items for the sample browser: outcome, texts with the differing words marked, what the
model answered, and thumbnails of the frames exactly as the model saw them."""
from __future__ import annotations

import difflib
from collections import OrderedDict, defaultdict
from typing import Any

from ...core.imaging import png_data_url, thumbnail
from ...core.items import VideoRef
from ...protocols import Outcome, Protocol, judge_verdict
from ...models.requests import Answer
from ...video.decode import VideoError
from ...video.frames import FrameStore
from ...video.sampling import Sampling

OUTCOMES = ("right", "wrong", "tie", "parse failure", "stopped", "error")  # stopped: refused, blocked, out of tokens


def outcome_label(outcome: Outcome, tie_policy: str = "strict") -> str:
    if outcome.errors or outcome.unanswered:
        return "error"
    if outcome.parse_failures:
        return "parse failure"
    if outcome.stopped:
        return "stopped"
    if outcome.tie():
        return "tie"
    return "right" if outcome.correct(tie_policy) else "wrong"


def marked_texts(texts: list[str], target: int) -> list[dict[str, Any]]:
    """Each text as [word, differs] pairs: a foil's words that are not in the true text's
    place, and the true text's words that some foil changes."""
    words = [t.split() for t in texts]
    base = words[target] if 0 <= target < len(words) else words[0]
    base_marks = [False] * len(base)
    out = []
    for k, tokens in enumerate(words):
        marks = [False] * len(tokens)
        if k != target:
            for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, base, tokens, autojunk=False).get_opcodes():
                if tag != "equal":
                    marks[j1:j2] = [True] * (j2 - j1)
                    base_marks[i1:i2] = [True] * (i2 - i1)
        out.append({"words": [[w, m] for w, m in zip(tokens, marks)], "target": k == target})
    if 0 <= target < len(out):
        out[target]["words"] = [[w, m] for w, m in zip(base, base_marks)]
    return out


def _pick(outcomes: list[Outcome], labels: dict[str, str], limit: int) -> list[Outcome]:
    """Up to ``limit`` items, taking outcome kinds in turn so failures and ties show."""
    by_label: OrderedDict[str, list[Outcome]] = OrderedDict((k, []) for k in OUTCOMES)
    for o in outcomes:
        by_label[labels[o.item["id"]]].append(o)
    picked, queues = [], [q for q in by_label.values() if q]
    while queues and len(picked) < limit:
        for queue in list(queues):
            if len(picked) >= limit:
                break
            picked.append(queue.pop(0))
            if not queue:
                queues.remove(queue)
    return picked


class Thumbnails:
    def __init__(self, max_frames: int = 8, height: int = 56):
        self.store, self.max_frames, self.height = FrameStore(), max_frames, height
        self.cache: dict[str, tuple[list[str], str]] = {}

    def of(self, video: dict | None, sampling: Sampling | None) -> tuple[list[str], str]:
        if video is None or sampling is None:
            return [], "no video (text only)"
        ref = VideoRef.from_json(video)
        key = ref.key() + repr(sampling)
        if key not in self.cache:
            try:
                frames = self.store.get(ref, sampling).array
                step = max(1, -(-len(frames) // self.max_frames))
                self.cache[key] = ([png_data_url(thumbnail(f, self.height)) for f in frames[::step]],
                                   f"{len(frames)} frames" + (f", every {step}th shown" if step > 1 else ""))
            except VideoError as exc:
                self.cache[key] = ([], f"video not available: {exc}")
        return self.cache[key]


def browser_items(run_index: int, label: str, records: list[dict], outcomes: list[Outcome], protocol: Protocol,
                  sampling: Sampling | None, limit: int, thumbnails: Thumbnails | None) -> list[dict]:
    """``outcomes`` are those of ``records`` (built once by the caller, which needs them too)."""
    labels = {o.item["id"]: outcome_label(o) for o in outcomes}
    by_item: dict[str, list[dict]] = defaultdict(list)
    for record in records:
        by_item[record["item"]["id"]].append(record)
    items = []
    for o in _pick(outcomes, labels, limit):
        item = o.item
        answers = []
        for record in sorted(by_item[item["id"]], key=lambda r: r["id"]):
            answer = Answer.from_json(record["answer"])
            parsed = None if answer.error else protocol.read(record["request"], answer, judge_verdict(record))
            answers.append({"request": record["id"].rpartition("|")[2], "raw": answer.raw, "error": answer.error,
                            "parsed": parsed.value if parsed else None, "status": parsed.status if parsed else None,
                            "score": answer.score, "probs": answer.probs})
        video = by_item[item["id"]][0]["request"].get("video")
        frames, note = thumbnails.of(video, sampling) if thumbnails else ([], "thumbnails off")
        items.append({"run": run_index, "runLabel": label, "benchmark": item["benchmark"], "id": item["id"],
                      "test": item["test"], "subtest": item.get("subtest"), "role": item["role"],
                      "categories": item.get("categories") or [], "outcome": labels[item["id"]],
                      "optionsAre": item["options_are"],
                      "texts": marked_texts(item["texts"], item["target"] if item["options_are"] == "texts" else -1),
                      "answers": answers, "frames": frames, "framesNote": note})
    return items
