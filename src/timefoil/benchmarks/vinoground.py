"""Vinoground: 500 counterfactual pairs, each a 2x2 group of text and video questions."""
from __future__ import annotations

import os

from ..core.items import Item
from ..protocols import Prompts
from ..protocols.readings import ReadingRule, first_character
from ..scoring import SummarySpec
from ..video.sampling import Sampling
from .base import (Benchmark, DataError, distinct, find_file, make_item, need_key, need_text, one_of, optional,
                   paper_rows, resolve_video)
from .reading import json_records, read_csv, read_json

# -- prompts ------------------------------------------------------------------------------------
# Each constant is the text of its source, byte for byte; tests/benchmarks/test_prompt_sources.py checks them
# against the source lines kept in tests/data/prompts/.
# Paper, Section 4.2: the text-score and video-score questions. The published question files
# (vinoground_textscore.json, _videoscore.json) hold the same questions per item; where they are
# present timefoil asks each item's published question as written.
TEXT = "Which caption best describes this video? A. {c1}, B. {c2}"
VIDEO = ("Which video segment matches this caption? Note: The video contains two segments separated by a 2-second "
         "black frame. Caption: {caption}. A. First segment (before black frame), B. Second segment (after black "
         "frame)")
# Paper, App. G: "please think step by step" at the end of every question (the line break before it
# is timefoil's: the paper does not say how it is joined).
COT = "\nplease think step by step"
# Released code, github.com/Vinoground/Vinoground at 1543a2a1fda1950baafa794b65eb3f877685b435: each
# script sends the published question followed by its own instruction.
ONE_CHARACTER_LINE = "\nPlease only output one English character."  # eval/llava-onevision.py:78 (and :126)
ONE_CHARACTER = "Please only output one English character."  # eval/phi.py:90 (:144), eval/minicpm.py:74 (:105)
ONE_CHARACTER_DIGIT = "Please only output 1 English character."  # eval/videollama.py:43 (and :63)
MA_LMM_PREFIX, MA_LMM_SUFFIX = "Question: ", "Please only output 1 English character. Answer: "  # eval/ma-lmm.py:67
RELEASED = "github.com/Vinoground/Vinoground@1543a2a"


def _released(script: str, line: int, **around) -> Prompts:
    return Prompts(choice=TEXT, video_choice=VIDEO, **around,
                   source=f"released code {RELEASED} eval/{script}:{line} around the paper's questions (Section 4.2)")


PROMPT_VARIANTS = {
    # Chain of thought: the suffix on every question (the published ones too), room to reason,
    # and each answer read by the judge (--judge) or from its conclusion.
    "cot": Prompts(choice=TEXT, video_choice=VIDEO, suffix=COT, reasoning=True, answer_tokens=1024,
                   source="paper App. G (chain of thought) after the questions of Section 4.2"),
    "released-llava-onevision": _released("llava-onevision.py", 78, suffix=ONE_CHARACTER_LINE),
    "released-phi": _released("phi.py", 90, suffix=ONE_CHARACTER),
    "released-minicpm": _released("minicpm.py", 74, suffix=ONE_CHARACTER),
    "released-videollama": _released("videollama.py", 43, suffix=ONE_CHARACTER_DIGIT),
    "released-ma-lmm": _released("ma-lmm.py", 67, prefix=MA_LMM_PREFIX, suffix=MA_LMM_SUFFIX),
    "released-qwen": _released("qwen.py", 75),  # the question alone
}
# -- end of prompts -----------------------------------------------------------------------------

def _published_orders(data_dir: str, name: str) -> dict[str, dict]:
    """idx -> {target_position, prompt, joined_video} from vinoground_textscore.json / _videoscore.json, if present."""
    try:
        path = find_file(data_dir, (name,), name)
    except DataError:
        return {}
    out: dict[str, dict] = {}
    for where, record in json_records(read_json(path), path, "questions"):
        idx = need_key(record, "idx", where)
        if idx in out:
            raise DataError(f"{where}: idx {idx!r} appears twice")
        out[idx] = {"target_position": "AB".index(one_of(need_text(record, "GT", where), ("A", "B"), "GT", where)),
                    "prompt": need_text(record, "question", where),
                    "joined_video": optional(record, "video_name", need_text, where)}
    return out


def load(data_dir: str, concatenated: str = "built") -> list[Item]:
    """``concatenated``: "built" joins the two clips with a 2 s black gap at sampling time,
    so N frames always give (N - 1) / 2 per clip; "published" uses the files in
    vinoground_videos_concated/ named by vinoground_videoscore.json instead."""
    if concatenated not in ("built", "published"):
        raise DataError(f"concatenated must be 'built' or 'published', not {concatenated!r}")
    path = find_file(data_dir, ("vinoground.csv",), "vinoground.csv")
    text_orders = _published_orders(data_dir, "vinoground_textscore.json")
    video_orders = _published_orders(data_dir, "vinoground_videoscore.json")
    root, items = os.path.dirname(path), []
    for where, row in read_csv(path):
        n = need_text(row, "index", where).strip()
        pos, neg = need_text(row, "pos_cap", where), need_text(row, "neg_cap", where)
        minor = [m.strip() for m in (row.get("minor") or "").split(";") if m.strip()]
        clips = [resolve_video(root, f"vinoground_videos/{n}_{s}.mp4", where) for s in ("pos", "neg")]
        common = dict(group_id=n, benchmark="vinoground", test="vinoground",
                      categories=(need_text(row, "major", where), *minor))
        for suffix, target in (("pos", 0), ("neg", 1)):
            idx = f"{n}_{suffix}"
            asked = {k: v for k, v in text_orders.get(idx, {}).items() if k != "joined_video"}
            items.append((where, make_item(where, id=f"{idx}:text", role="text", videos=(clips[target],),
                                           texts=(pos, neg), target=target, **asked, **common)))
            published = dict(video_orders.get(idx, {}))
            joined = published.pop("joined_video", None)
            if concatenated == "published":
                if not joined:
                    raise DataError(f"{where}: no published concatenated video for {idx} "
                                    "(vinoground_videoscore.json is needed)")
                published["joined_video"] = resolve_video(root, f"vinoground_videos_concated/{joined}", where)
            items.append((where, make_item(where, id=f"{idx}:video", role="video", videos=tuple(clips),
                                           texts=((pos, neg)[target],), target=target, options_are="videos",
                                           **published, **common)))
    return distinct(items, path)


# The released scorer, get_score_all.py at 1543a2a1fda1950baafa794b65eb3f877685b435: lines 66-67
# and 79-80 compare the reply's first character with GT in lower case (the test `"qwen" or "ma-lmm"
# in model` is always true, so every model is read so: "Answer: B" is A, " B" is nothing); every
# pair counts in the denominator (line 109). A reply that raises there (empty) skips the rest of
# its pair (lines 126-127), so its video score counts wrong too; timefoil counts only that answer wrong.
RELEASED_READING = ReadingRule(source=f"{RELEASED} get_score_all.py:66-67,79-80 (first character)",
                               letter=first_character)


BENCHMARK = Benchmark(
    name="vinoground",
    description="Vinoground: text, video and group scores on 500 counterfactual video pairs",
    load=load,
    option_values={"concatenated": (("built", "published"), None)},
    shapes=frozenset({"texts", "videos"}),  # the text question and the video question of each pair
    opt_out={"entailment": "Vinoground's text, video and group scores are defined by choice and similarity",
             "retrieval": "half of its items are video questions, whose options are videos"},
    default_protocol="choice",
    default_sampling=Sampling(frames=32),
    prompts=Prompts(choice=TEXT, video_choice=VIDEO, source="paper Section 4.2 (or the published question files)"),
    variants=PROMPT_VARIANTS,
    summary=SummarySpec(),
    table={"choice": ("text", "video", "group"), "similarity": ("text", "video", "group")},
    quoted=paper_rows("choice", "Table 2", ("overall/text", "overall/video", "overall/group"), {
        "GPT-4o (32 frames)": (54.0, 38.2, 24.6), "GPT-4o CoT": (59.2, 51.0, 35.0),
        "LLaVA-OneVision-72B": (48.4, 35.2, 21.8), "Qwen2-VL-72B": (50.4, 32.6, 17.4), "human": (93.4, 94.0, 90.0),
        # the paper marks every row against these (Appendix C: six matchings for the group score);
        # asked as four independent two-way choices, the group's exact chance is 1/16
        "Random chance": (25.0, 25.0, 16.67)})
    + paper_rows("similarity", "Table 2", ("overall/text", "overall/video", "overall/group"),
                 {"VideoCLIP": (17.0, 2.8, 1.2), "Random chance": (25.0, 25.0, 16.67)}),
    hub_dataset="HanSolo9682/Vinoground",
    released=RELEASED_READING,
)
