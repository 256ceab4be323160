"""VELOCITI: entailment and multiple choice on 10 s movie clips, eight tests."""
from __future__ import annotations

import os
import re
from collections import Counter

from ..items import Item
from ..protocols import Prompts
from ..scoring import SummarySpec
from ..video.sampling import Sampling
from .base import (MAX_SECONDS, Benchmark, DataError, distinct, find_file, make_item, need_flag, need_key, need_text,
                   optional, paper_rows, resolve_video)
from .reading import parse_json, read_text
from .tables import read_rows, table_files

TESTS = ("control", "agent_random", "agent_bind", "coref", "action_adv", "action_manner", "action_bind", "chrono")
PREAMBLE = ("Carefully watch the video and pay attention to the sequence of events, the details and actions of "
            "persons.\n")
ENTAIL = PREAMBLE + ("Here is a caption that describes the video: {caption}\nBased on your observation, does the "
                     "given video entail the caption?")
CHOICE = PREAMBLE + ("Here are two captions that describe the video.\nA) {c1}\nB) {c2}\nBased on your observation, "
                     "select the caption that best describes the video.\nJust print either A or B.")
CLOSED = "\nJust answer with either Yes or No."
FRAMES = "You are given frames sampled sequentially from a video. "
# timefoil's own chain-of-thought wording (the paper's appendix prompt is not reproduced): reason
# over the roles and order of events, then a tagged verdict that the parser reads.
COT_SYSTEM = ("You check captions of short movie clips. Reason step by step: who acts, what they do, how, to "
              "whom, and in which order, each compared with what the clip shows. End with your verdict inside "
              "<answer></answer> tags.")
COT_ENTAIL = "Caption: {caption}\nDoes the clip show exactly this? Conclude with <answer>Yes</answer> or " \
             "<answer>No</answer>."
COT_CHOICE = ("Captions:\nA) {c1}\nB) {c2}\nWhich caption describes the clip? Conclude with <answer>A</answer> "
              "or <answer>B</answer>.")


# The released 150-per-test subset uses the first version's test names.
V1_TESTS = {"agent_iden": "agent_random", "action_mod": "action_manner", "sequence": "chrono"}
NAMED = ("velociti.jsonl", "velociti.json", "test.jsonl", "test.json")


def _release(data_dir: str) -> tuple[str, list[tuple[str, dict]]]:
    """(where, record) in the hub layout (test_name, video_id, event, pos, neg, in_subset),
    from velociti.json(l), or the table files `datasets` saves (parquet, arrow), or the
    subset's CSV files (cap1, cap2, ev, gt, video_id; the file names the test), and the
    folder that holds videos/ (beside a named file; the dataset folder for tables)."""
    try:
        files = [find_file(data_dir, NAMED, "VELOCITI file")]
        root = os.path.dirname(files[0])
    except DataError:
        files, root = table_files(data_dir, split="test"), data_dir
    if not files:
        raise DataError(f"{data_dir}: no VELOCITI file found (looked for {', '.join(NAMED)}, the hub's parquet or "
                        "arrow files, or the subset's CSV files)")
    return root, [(where, _from_csv(record, path, where) if path.endswith(".csv") else record)
                  for path in files for where, record in read_rows(path)]


def _from_csv(record: dict, path: str, where: str) -> dict:
    """A subset CSV row in the hub layout: gt names the true caption (cap1 / cap2, 1 / 2, or its text)."""
    cap1, cap2 = need_text(record, "cap1", where), need_text(record, "cap2", where)
    gt = need_text(record, "gt", where)
    first = gt.strip().lower() in ("cap1", "1", "a", "0") or gt == cap1
    if not first and gt.strip().lower() not in ("cap2", "2", "b") and gt != cap2:
        raise DataError(f"{where}: gt {gt!r} names neither caption")
    test = optional(record, "test_name", need_text, where, os.path.splitext(os.path.basename(path))[0])
    return {"test_name": test, "video_id": need_text(record, "video_id", where), "event": record.get("ev") or None,
            "pos": cap1 if first else cap2, "neg": cap2 if first else cap1, "in_subset": True}


def _id_list(path: str) -> set[str]:
    """Item ids from a JSON list, or one per line."""
    text = read_text(path)
    if not text.lstrip().startswith("["):
        return {line.strip() for line in text.splitlines() if line.strip()}
    return {need_key({"id": x}, "id", f"{path}: entry {n}") for n, x in enumerate(parse_json(text, path), 1)}


def _youtube(video_id: str, where: str) -> dict | None:
    """v_<YouTube id>_seg_<start>_<end>: a clip to cut from that video."""
    match = re.match(r"v_(.+)_seg_(\d+)_(\d+)$", video_id)
    if not match:
        return None
    start, end = int(match.group(2)), int(match.group(3))
    if not start < end <= MAX_SECONDS:
        raise DataError(f"{where}: field 'video_id' names the segment {start}..{end} s, which is no clip")
    return {"id": match.group(1), "start": start, "end": end}


def load(data_dir: str, subset: str | None = None) -> list[Item]:
    """``subset``: "paper" (the released 150-per-test subset: the hub's in_subset column) or a
    file of item ids (JSON list or one per line). Videos: videos/<video_id>.mp4."""
    counter, items = Counter(), []
    in_subset: set[str] = set()
    root, rows = _release(data_dir)
    for where, record in rows:
        test = need_text(record, ("test_name", "test"), where)
        test = V1_TESTS.get(test, test)
        if test not in TESTS:
            raise DataError(f"{where}: unknown test_name {test!r} (expected one of {', '.join(TESTS)})")
        counter[test] += 1
        video_id = need_text(record, "video_id", where)
        item_id = optional(record, ("id", "idx"), need_key, where, f"{test}-{counter[test]:05d}")
        if optional(record, "in_subset", need_flag, where, False):
            in_subset.add(item_id)
        items.append((where, make_item(
            where, id=item_id, group_id=item_id, benchmark="velociti", test=test,
            videos=(resolve_video(root, f"videos/{video_id}.mp4", where),),
            texts=(need_text(record, "pos", where), need_text(record, "neg", where)),
            metadata={"video_id": video_id, "event": optional(record, "event", need_text, where),
                      "youtube": _youtube(video_id, where)})))
    items = distinct(items, data_dir)
    if subset == "paper":
        if not in_subset:
            raise DataError(f"{data_dir}: no record is marked in_subset: the hub release or the subset's CSV files "
                            "are needed for subset=paper")
        items = [item for item in items if item.id in in_subset]
    elif subset:
        wanted = _id_list(subset)
        unknown = wanted - {item.id for item in items}
        if unknown:
            raise DataError(f"{subset}: {len(unknown)} id(s) not in {data_dir}, e.g. {sorted(unknown)[:3]}")
        items = [item for item in items if item.id in wanted]
    return items


BENCHMARK = Benchmark(
    name="velociti",
    description="VELOCITI: StrictVLE / ClassicVLE entailment and two-order multiple choice on movie clips",
    load=load,
    default_protocol="entailment",
    default_sampling=Sampling(frames=None, fps=1.0),  # mid-second frames
    prompts=Prompts(entailment=ENTAIL, choice=CHOICE),
    variants={"closed": Prompts(entailment=ENTAIL + CLOSED, choice=CHOICE),
              "released": Prompts(entailment=ENTAIL + CLOSED, choice=CHOICE),  # the released evaluation code's
              "frames": Prompts(entailment=FRAMES + ENTAIL + CLOSED, choice=FRAMES + CHOICE),
              "cot": Prompts(entailment=COT_ENTAIL, choice=COT_CHOICE, system=COT_SYSTEM, reasoning=True,
                             answer_tokens=1024)},
    order_policy="both",
    # "Avg" of the paper: the mean over the seven tests, control left out, for every metric;
    # the facets of its Figure 1 (multi-event: the tests with several events in both captions).
    summary=SummarySpec(tests=TESTS, average={"entailment": ("StrictVLE", "ClassicVLE", "acc(pos)", "acc(neg|pos)"),
                                 "choice": ("acc_A", "acc_B", "bias", "A∧B"), "similarity": ("accuracy",)},
                        average_excludes=("control",), categories=False,
                        facets={"agent": ("agent_random", "agent_bind", "coref"),
                                "action": ("action_adv", "action_manner", "action_bind"),
                                "multi-event": ("coref", "chrono")}),
    unit="items",
    table={"entailment": ("StrictVLE", "ClassicVLE"), "choice": ("acc_A", "acc_B", "bias", "A∧B"),
           "similarity": ("accuracy",)},
    quoted=paper_rows("entailment", "Table 2", ("overall/average StrictVLE",), {
        "LLaVA-OneVision-72B": (43.1,), "LLaVA-OneVision-7B": (32.1,), "Qwen2-VL-7B": (15.9,),
        "Gemini-1.5-Pro (subset)": (49.3,), "human": (93.0,)})
    + paper_rows("entailment", "paper", ("overall/average ClassicVLE",), {"LLaVA-OneVision-72B": (83.6,)}),
    hub_dataset="katha-ai-iiith/VELOCITI",
)
