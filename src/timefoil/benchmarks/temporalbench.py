"""TemporalBench: binary questions (true caption vs one negative) about dense video captions."""
from __future__ import annotations

import os
import re
from collections import OrderedDict

from ..items import Item
from ..scoring import SummarySpec
from .base import Benchmark, DataError, find_file, need, need_text, paper_rows, read_json, read_jsonl, resolve_video

SUBSETS = {"short_qa": "temporalbench_short_qa.json", "long_qa": "temporalbench_long_qa.json",
           "caption": "temporalbench_short_caption.json"}
EXCLUDED_FROM_CAPTIONING = {"FineGym"}  # its captions have another structure (the paper leaves it out)
_OPTION = re.compile(r"^\s*\(?([A-Z])[.):]\s*(.+?)\s*$")


def options_of(question: str, where: str) -> dict[str, str]:
    found = {m.group(1): m.group(2) for m in map(_OPTION.match, question.splitlines()) if m}
    if len(found) < 2:
        raise DataError(f"{where}: field 'question' has no 'A. ...' and 'B. ...' option lines")
    return found


def _records(path: str) -> list[dict]:
    records = read_jsonl(path) if path.endswith(".jsonl") else read_json(path)
    if not isinstance(records, list):
        raise DataError(f"{path}: expected a list of records")
    return records


def _caption_items(path: str, root: str) -> list[Item]:
    """Captioning: the model writes a detailed caption, scored against the reference. The
    record's own prompt (with its in-context examples) is used verbatim when present."""
    items = []
    for n, record in enumerate(_records(path), 1):
        where = f"{path}: record {n}"
        source = need_text(record, ("dataset", "source_dataset"), where)
        if source in EXCLUDED_FROM_CAPTIONING:
            continue
        video = need_text(record, "video_name", where)
        prompt = record.get("question") or record.get("prompt")
        if prompt is not None and not isinstance(prompt, str):
            raise DataError(f"{where}: field 'question' must be a string, found {type(prompt).__name__}")
        items.append(Item(id=str(record.get("idx") or video), group_id=video, benchmark="temporalbench",
                          test="caption", videos=(resolve_video(root, video, where),),
                          texts=(need_text(record, ("GT", "caption", "answer"), where),), options_are="references",
                          categories=(source,), prompt=prompt or None))
    return items


def _binary_items(path: str, root: str, subset: str) -> list[Item]:
    records = _records(path)
    items = []
    for n, record in enumerate(records, 1):
        where = f"{path}: record {n}"
        question, gt = need_text(record, "question", where), need_text(record, "GT", where)
        options = options_of(question, where)
        if gt not in options or len(options) != 2:
            raise DataError(f"{where}: GT {gt!r} must name one of two options, found {sorted(options)}")
        video = need_text(record, "video_name", where)
        negative = next(text for letter, text in options.items() if letter != gt)
        # long QA records may carry no category (the official scorers read it only where present)
        category = (need_text(record, "category", where),) if subset != "long_qa" or record.get("category") \
            is not None else ()
        items.append(Item(
            id=str(need(record, "idx", where)), group_id=video, benchmark="temporalbench", test=subset,
            videos=(resolve_video(root, video, where),), texts=(options[gt], negative),
            categories=(need_text(record, ("dataset", "source_dataset"), where), *category),
            prompt=question, target_position=sorted(options).index(gt)))
    return items


def _multi_choice(items: list[Item]) -> list[Item]:
    """One question per video: its true caption against all of its negatives at once."""
    by_video: OrderedDict[str, list[Item]] = OrderedDict()
    for item in items:
        by_video.setdefault(item.group_id, []).append(item)
    out = []
    for video, questions in by_video.items():
        negatives = list(OrderedDict.fromkeys(q.texts[1] for q in questions))
        categories = tuple(OrderedDict.fromkeys(c for q in questions for c in q.categories))  # source, then each
        out.append(Item(id=video, group_id=video, benchmark="temporalbench", test=f"{questions[0].test}_mc",
                        videos=questions[0].videos, texts=(questions[0].texts[0], *negatives),
                        categories=categories))
    return out


def load(data_dir: str, subset: str = "short_qa", format: str = "binary") -> list[Item]:
    """``subset``: short_qa, long_qa, caption, or several comma-separated; ``format``: binary
    (BA/MBA) or multichoice (M+1 options at once)."""
    items = []
    for name in subset.split(","):
        if name not in SUBSETS:
            raise DataError(f"unknown TemporalBench subset {name!r}; choose from {', '.join(SUBSETS)}")
        path = find_file(data_dir, (SUBSETS[name], SUBSETS[name] + "l"), f"TemporalBench {name} file")
        if name == "caption":
            items += _caption_items(path, os.path.dirname(path))
        else:
            items += _binary_items(path, os.path.dirname(path), name)
    if format not in ("binary", "multichoice"):
        raise DataError(f"format must be binary or multichoice, not {format!r}")
    if format == "multichoice":
        return _multi_choice([i for i in items if i.options_are != "references"])
    return items


BENCHMARK = Benchmark(
    name="temporalbench",
    description="TemporalBench: binary accuracy and multiple binary accuracy (MBA) on fine-grained captions",
    load=load,
    protocols=("choice", "similarity", "entailment", "generation"),
    default_protocol="choice",
    # binary accuracy is the paper's BA; asked with all M + 1 options at once it is another number
    summary=SummarySpec(group_metric="MBA", rename={"accuracy": "BA"},
                        multichoice_rename={"accuracy": "MC accuracy"}),
    table={"choice": ("BA", "MBA", "MC accuracy", "central picks", "central is true"), "similarity": ("BA", "MBA"),
           "entailment": ("StrictVLE", "MBA"), "generation": ("BLEU-4", "ROUGE-L", "CIDEr", "embedding similarity")},
    unit="items",
    quoted=paper_rows("choice", "paper", ("overall/MBA",), {"GPT-4o": (38.5,), "human": (67.9,)})
    + paper_rows("choice", "paper", ("overall/MC accuracy",), {"GPT-4o": (75.7,)})
    + paper_rows("choice", "paper", ("overall/BA", "overall/MBA"), {"LLaVA-OneVision-7B, 1 frame": (53.30, 13.31)}),
    hub_dataset="microsoft/TemporalBench",
)
