"""VITATECS: (video, caption, counterfactual) triples in six temporal aspects."""
from __future__ import annotations

import os

from ..core.items import Item
from ..protocols import OWN_WORDING, Prompts
from ..protocols.readings import ReadingRule
from ..scoring import SummarySpec
from .base import Benchmark, distinct, find_file, make_item, need_text, paper_rows, resolve_video
from .reading import read_jsonl

RECALL_ROWS = ("caption", "counterfactual", "All")  # Table 7's rows; "All" is the mean of the other two
ASPECTS = ("Direction", "Intensity", "Sequence", "Localization", "Compositionality", "Type")

# -- prompts ------------------------------------------------------------------------------------
# Paper, App. C, Table 11 ("Prompt for video LLM evaluation"), byte for byte ([description 1] and
# [description 2] are {d1} and {d2}); tests/benchmarks/test_prompt_sources.py checks them against the table's
# text in tests/data/prompts/. The released code (github.com/lscpku/VITATECS) evaluates contrastive
# models only and has no prompt. Entailment, which the paper does not ask, is timefoil's wording.
PROMPTS = Prompts(
    system="You are given a short video clip and two sentences. Select the sentence that best describes "
           "the content of the video.",
    choice="Which of the following best describes the content of the video: (A) {d1} (B) {d2} Respond with "
           "a single letter (A or B).",
    source=f"paper App. C Table 11 (choice); entailment: {OWN_WORDING}")
# -- end of prompts -----------------------------------------------------------------------------


def load(data_dir: str) -> list[Item]:
    items = []
    for aspect in ASPECTS:
        path = find_file(data_dir, (f"{aspect}.jsonl",), f"VITATECS {aspect} file")
        root = os.path.dirname(os.path.dirname(path)) if os.path.basename(os.path.dirname(path)) == "data" \
            else os.path.dirname(path)
        for number, (where, record) in enumerate(read_jsonl(path), 1):
            source, name = need_text(record, "src_dataset", where), need_text(record, "video_name", where)
            item_id = f"{aspect.lower()}-{number:05d}"  # rows repeat upstream: their order keeps them apart
            items.append((where, make_item(
                where, id=item_id, group_id=item_id, benchmark="vitatecs", test=aspect.lower(),
                videos=(resolve_video(root, f"videos/{source}/{name}", where),),
                texts=(need_text(record, "caption", where), need_text(record, "counterfactual", where)),
                categories=(source,), metadata={"source": source})))
    return distinct(items, data_dir)


# The released scorers, github.com/lscpku/VITATECS at 58bff59bb1d3ed287983fca8ca7589498f4db6b2:
# X-CLIP/eval_vitatecs_xclip.py line 401 (eval_vitatecs_clip4clip.py line 399, alpro/eval_alpro.py
# line 166) count a triple right where the caption's score is strictly above the counterfactual's,
# over every triple: the meant rule. It scores no written answer; the rule changes nothing.
RELEASED_READING = ReadingRule(source="github.com/lscpku/VITATECS@58bff59 X-CLIP/eval_vitatecs_xclip.py:401 "
                                      "(caption > counterfactual, strict; as meant)")


BENCHMARK = Benchmark(
    name="vitatecs",
    description="VITATECS: caption vs counterfactual in six temporal aspects (MSR-VTT, VATEX)",
    load=load,
    prompts=PROMPTS,
    order_policy="both",  # the generative protocol asks both option orders
    # "Avg.": the mean of the six aspects, for accuracy (Table 3) and for every recall row (Table 7)
    summary=SummarySpec(tests=tuple(a.lower() for a in ASPECTS), categories=False,
                        average={"similarity": "accuracy", "choice": "accuracy",
                                 "retrieval": tuple(f"R@{k} {row}" for row in RECALL_ROWS for k in (1, 5, 10))},
                        headline={"retrieval": "R@10 All"}),  # Table 7 quotes R@10
    table={"similarity": ("accuracy",), "choice": ("accuracy", "A∧B"), "entailment": ("ClassicVLE",),
           "retrieval": tuple(f"R@10 {row}" for row in RECALL_ROWS)},
    quoted=paper_rows("similarity", "Table 3", ("overall/average accuracy",), {
        "X-CLIP": (65.2,), "CLIP4Clip": (65.3,), "BLIP-large": (64.1,), "human": (94.3,)})
    + paper_rows("retrieval", "Table 7", tuple(f"overall/average R@10 {row}" for row in RECALL_ROWS), {
        "ALPRO (zero-shot)": (41.4, 37.5, 39.4), "CLIP4Clip (MSR-VTT)": (66.9, 57.5, 62.2)}),
    obtain="annotation files: data/<Aspect>.jsonl of github.com/lscpku/VITATECS, into this folder; videos: the "
           "MSR-VTT and VATEX test sets under videos/MSRVTT/ and videos/VATEX/",
    released=RELEASED_READING,
)
