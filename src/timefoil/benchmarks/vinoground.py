"""Vinoground: 500 counterfactual pairs, each a 2x2 group of text and video questions."""
from __future__ import annotations

import csv
import os

from ..items import Item
from ..protocols import Prompts
from ..scoring import SummarySpec
from ..video.sampling import Sampling
from .base import Benchmark, DataError, find_file, need, need_text, paper_rows, read_json, resolve_video

TEXT = "Which caption best describes this video? A. {c1}, B. {c2}"
VIDEO = ("Which video segment matches this caption? Note: The video contains two segments separated by a 2-second "
         "black frame. Caption: {caption}. A. First segment (before black frame), B. Second segment (after black "
         "frame)")
COT = "\nplease think step by step"


def _published_orders(data_dir: str, name: str) -> dict[str, dict]:
    """idx -> {target_position, prompt, joined_video} from vinoground_textscore.json / _videoscore.json, if present."""
    try:
        path = find_file(data_dir, (name,), name)
    except DataError:
        return {}
    records = read_json(path)
    if not isinstance(records, list):
        raise DataError(f"{path}: expected a list of questions")
    out = {}
    for n, record in enumerate(records, 1):
        where = f"{path}: record {n}"
        gt = need_text(record, "GT", where)
        if gt not in ("A", "B"):
            raise DataError(f"{where}: GT must be 'A' or 'B', found {gt!r}")
        out[str(need(record, "idx", where))] = {"target_position": "AB".index(gt),
                                                "prompt": need_text(record, "question", where),
                                                "joined_video": record.get("video_name")}
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
    with open(path, newline="", encoding="utf-8") as handle:
        for row_number, row in enumerate(csv.DictReader(handle), 2):
            where = f"{path}: row {row_number}"
            n = need_text(row, "index", where).strip()
            pos, neg = need_text(row, "pos_cap", where), need_text(row, "neg_cap", where)
            minor = [m.strip() for m in (row.get("minor") or "").split(";") if m.strip()]
            clips = [resolve_video(root, f"vinoground_videos/{n}_{s}.mp4", where) for s in ("pos", "neg")]
            common = dict(group_id=n, benchmark="vinoground", test="vinoground",
                          categories=(need_text(row, "major", where), *minor))
            for suffix, target in (("pos", 0), ("neg", 1)):
                idx = f"{n}_{suffix}"
                asked = {k: v for k, v in text_orders.get(idx, {}).items() if k != "joined_video"}
                items.append(Item(id=f"{idx}:text", role="text", videos=(clips[target],), texts=(pos, neg),
                                  target=target, **asked, **common))
                published = dict(video_orders.get(idx, {}))
                joined = published.pop("joined_video", None)
                if concatenated == "published":
                    if not joined:
                        raise DataError(f"{where}: no published concatenated video for {idx} "
                                        "(vinoground_videoscore.json is needed)")
                    published["joined_video"] = resolve_video(root, f"vinoground_videos_concated/{joined}", where)
                items.append(Item(id=f"{idx}:video", role="video", videos=tuple(clips),
                                  texts=((pos, neg)[target],), target=target, options_are="videos",
                                  **published, **common))
    return items


BENCHMARK = Benchmark(
    name="vinoground",
    description="Vinoground: text, video and group scores on 500 counterfactual video pairs",
    load=load,
    protocols=("choice", "similarity"),
    default_protocol="choice",
    default_sampling=Sampling(frames=32),
    prompts=Prompts(choice=TEXT, video_choice=VIDEO),
    # Chain of thought: the suffix on every question (the published ones too), room to reason,
    # and each answer read by the judge (--judge) or from its conclusion.
    variants={"cot": Prompts(choice=TEXT, video_choice=VIDEO, suffix=COT, reasoning=True, answer_tokens=1024)},
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
)
