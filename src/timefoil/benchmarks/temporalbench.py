"""TemporalBench: binary questions (true caption vs one negative) about dense video captions."""
from __future__ import annotations

import os
import re
from collections import OrderedDict
from dataclasses import replace

from ..core.items import Item
from ..protocols import OWN_WORDING, Prompts
from ..protocols.readings import ReadingRule, first_character
from ..scoring import SummarySpec
from .base import (Benchmark, DataError, PaperShape, distinct, find_file, make_item, need_key, need_text, optional,
                   paper_rows, resolve_video)
from .reading import json_records, read_json, read_jsonl

SUBSETS = {"short_qa": "temporalbench_short_qa.json", "long_qa": "temporalbench_long_qa.json",
           "caption": "temporalbench_short_caption.json"}
EXCLUDED_FROM_CAPTIONING = {"FineGym"}  # its captions have another structure (the paper leaves it out)

# -- prompts ------------------------------------------------------------------------------------
# The questions are the published files' own (each record's "question", in-context examples
# included for captioning); the paper prints no other prompt. Released code,
# github.com/mu-cai/TemporalBench at 62f88ab9a93699cb45f89c6e9ac034e2b83fcb39, byte for byte (checked
# by tests/benchmarks/test_prompt_sources.py): eval/gpt-4o.py line 100 (system) and line 87 (the sentence
# before the question; with frames, line 91 sends it as its own text part before the images, and
# lines 94 and 123 pass the whole record where timefoil passes its question). eval/llava-onevision.py
# line 77 asks the question alone, which is the default.
GPT4O_SYSTEM = "You are an expert in video understanding."
GPT4O_LEAD = "These are the frames from the video. "
RELEASED = "github.com/mu-cai/TemporalBench@62f88ab"
PROMPTS = Prompts(source=f"the published questions; entailment, and choice without a published question: {OWN_WORDING}")
ASKED = ("choice", "generation")  # the released scripts ask the published questions; none asks entailment
PROMPT_VARIANTS = {
    "released-gpt-4o": replace(PROMPTS, system=GPT4O_SYSTEM, prefix=GPT4O_LEAD, protocols=ASKED,
                               source=f"released code {RELEASED} eval/gpt-4o.py:100 and :87 around the published "
                                      "questions"),
    "released-llava-onevision": replace(PROMPTS, protocols=ASKED, source=f"released code {RELEASED} "
                                        "eval/llava-onevision.py:77 (the published questions alone)"),
}
# -- end of prompts -----------------------------------------------------------------------------

_OPTION = re.compile(r"^\s*\(?([A-Z])[.):]\s*(.+?)\s*$")


def options_of(question: str, where: str) -> dict[str, str]:
    found = {m.group(1): m.group(2) for m in map(_OPTION.match, question.splitlines()) if m}
    if len(found) < 2:
        raise DataError(f"{where}: field 'question' has no 'A. ...' and 'B. ...' option lines")
    return found


def _records(path: str) -> list[tuple[str, dict]]:
    return read_jsonl(path) if path.endswith(".jsonl") else json_records(read_json(path), path)


def _caption_items(path: str, root: str) -> list[tuple[str, Item]]:
    """Captioning: the model writes a detailed caption, scored against the reference. The
    record's own prompt (with its in-context examples) is used verbatim when present."""
    items = []
    for where, record in _records(path):
        source = need_text(record, ("dataset", "source_dataset"), where)
        if source in EXCLUDED_FROM_CAPTIONING:
            continue
        video = need_text(record, "video_name", where)
        items.append((where, make_item(
            where, id=optional(record, "idx", need_key, where, video), group_id=video, benchmark="temporalbench",
            test="caption", videos=(resolve_video(root, video, where),),
            texts=(need_text(record, ("GT", "caption", "answer"), where),), options_are="references",
            categories=(source,), prompt=optional(record, ("question", "prompt"), need_text, where))))
    return items


def _blank(value) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _binary_items(path: str, root: str, subset: str) -> list[tuple[str, Item]]:
    items = []
    for where, record in _records(path):
        question, gt = need_text(record, "question", where), need_text(record, "GT", where)
        options = options_of(question, where)
        if gt not in options or len(options) != 2:
            raise DataError(f"{where}: field 'GT' ({gt[:40]!r}) must name one of two options, found {sorted(options)}")
        video = need_text(record, "video_name", where)
        negative = next(text for letter, text in options.items() if letter != gt)
        # get_qa_acc.py reads a category only from a file named short (lines 40 and 72): a long QA
        # record's category is read where it names one, and a missing, null or empty one is none
        named = subset != "long_qa" or not _blank(record.get("category"))
        category = (need_text(record, "category", where),) if named else ()
        items.append((where, make_item(
            where, id=need_key(record, "idx", where), group_id=video, benchmark="temporalbench", test=subset,
            videos=(resolve_video(root, video, where),), texts=(options[gt], negative),
            categories=(need_text(record, ("dataset", "source_dataset"), where), *category),
            prompt=question, target_position=sorted(options).index(gt))))
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
    if format not in ("binary", "multichoice"):
        raise DataError(f"format must be binary or multichoice, not {format!r}")
    items, paths = [], []
    for name in subset.split(","):
        if name not in SUBSETS:
            raise DataError(f"unknown TemporalBench subset {name!r}; choose from {', '.join(SUBSETS)}")
        path = find_file(data_dir, (SUBSETS[name], SUBSETS[name] + "l"), f"TemporalBench {name} file")
        paths.append(path)
        root = os.path.dirname(path)
        part = _caption_items(path, root) if name == "caption" else _binary_items(path, root, name)
        if "," in subset:  # an idx is unique within its own file only: several files keep theirs apart
            part = [(where, replace(item, id=f"{name}/{item.id}")) for where, item in part]
        items += part
    items = distinct(items, ", ".join(paths))
    if format == "multichoice":
        return _multi_choice([i for i in items if i.options_are != "references"])
    return items


# The released scorer, get_qa_acc.py at 62f88ab9a93699cb45f89c6e9ac034e2b83fcb39: line 49 compares
# GT with the reply's first character in lower case ("Answer: B" is A); binary accuracy divides by
# every answer (line 92), MBA by every video (line 94). An empty reply raises at line 49, outside
# any try, and stops the script; timefoil counts it wrong. Long QA is scored by the same script
# (--data_json temporalbench_long_qa.json). Captioning: get_captioning_score.py computes only the
# all-MiniLM-L6-v2 similarity, which the generation protocol's equals (each checked by
# tests/benchmarks/test_temporalbench_released.py on the numbers the scripts printed).
# The per-source tables' order (the seven sources as the specification lists them) and the
# categories' order, as get_qa_acc.py prints them (lines 110-119: the paper's seven word-level
# categories with event order, the event-level one, before "Others").
SOURCES = ("ActivityNet", "Charades", "COIN", "EgoExo4D", "Movie Description", "Oops", "FineGym")
CATEGORIES = ("Action Order", "Action Frequency", "Action Type", "Motion Magnitude", "Motion Direction/Orientation",
              "Action Effector", "Event Order", "Others")

RELEASED_READING = ReadingRule(source=f"{RELEASED} get_qa_acc.py:49 (first character)", letter=first_character)

# The paper's per-source tables (Table 8 short QA, Table 9 long QA, "T-" per subset) and its
# per-category table (Table 7) give binary accuracy alone; MBA per source and per category stays
# in a run's own table. The binary questions' BA, whether a letter was chosen or a score ranked them.
PAPER_SHAPES = tuple(shape for protocol in ("choice", "similarity") for shape in (
    PaperShape(protocol, "Tables 8 and 9", ("BA",), kind="source dataset", what="BA by source dataset"),
    PaperShape(protocol, "Table 7", ("BA",), kind="category", what="BA by category")))


BENCHMARK = Benchmark(
    name="temporalbench",
    description="TemporalBench: binary accuracy and multiple binary accuracy (MBA) on fine-grained captions",
    load=load,
    option_values={"format": (("binary", "multichoice"), None)},
    shapes=frozenset({"texts", "references"}),  # binary QA items; captioning items for generation
    default_protocol="choice",
    prompts=PROMPTS,
    variants=PROMPT_VARIANTS,
    # binary accuracy is the paper's BA; asked with all M + 1 options at once it is another number
    summary=SummarySpec(group_metric="MBA", rename={"accuracy": "BA"},
                        multichoice_rename={"accuracy": "MC accuracy"},
                        category_kinds={"source dataset": SOURCES, "category": CATEGORIES}),
    table={"choice": ("BA", "MBA", "MC accuracy", "central picks", "central is true"), "similarity": ("BA", "MBA"),
           "entailment": ("StrictVLE", "MBA"), "generation": ("BLEU-4", "ROUGE-L", "CIDEr", "embedding similarity")},
    unit="items",
    quoted=paper_rows("choice", "paper", ("overall/MBA",), {"GPT-4o": (38.5,), "human": (67.9,)})
    + paper_rows("choice", "paper", ("overall/MC accuracy",), {"GPT-4o": (75.7,)})
    # the repository's README, not the paper, prints this row (github.com/mu-cai/TemporalBench)
    + paper_rows("choice", "released README", ("overall/BA", "overall/MBA"),
                 {"LLaVA-OneVision-7B, 1 frame": (53.30, 13.31)}, origin="released README"),
    hub_dataset="microsoft/TemporalBench",
    released=RELEASED_READING,
    paper_shapes=PAPER_SHAPES,
)
