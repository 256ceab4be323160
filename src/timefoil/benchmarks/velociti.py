"""VELOCITI: entailment and multiple choice on 10 s movie clips, eight tests."""
from __future__ import annotations

import os
import re
from collections import Counter

from ..core.items import Item
from ..protocols import OWN_WORDING, Prompts
from ..protocols.readings import ReadingRule, contains_one_verdict, first_token
from ..scoring import SummarySpec
from ..video.sampling import Sampling
from .base import (MAX_SECONDS, Benchmark, DataError, distinct, find_file, make_item, need_flag, need_key, need_text,
                   optional, paper_rows, resolve_video)
from .reading import parse_json, read_text
from .tables import read_rows, table_files

TESTS = ("control", "agent_random", "agent_bind", "coref", "action_adv", "action_manner", "action_bind", "chrono")

# -- prompts ------------------------------------------------------------------------------------
# Each constant is the text of its source, byte for byte; tests/benchmarks/test_prompt_sources.py checks them
# against the source lines kept in tests/data/prompts/. The paper ("VELOCITI: Benchmarking
# Video-Language Compositional Reasoning with Strict Entailment") prints its prompts as figures:
# one line per paragraph of the figure here.

# Paper, App. C, Fig. 15 (open Video-LLMs and Gemini): the entailment and multiple-choice prompts.
PREAMBLE = ("Carefully watch the video and pay attention to the sequence of events, the details and actions of "
            "persons.\n")
ENTAIL = PREAMBLE + ("Here is a caption that describes the video: {caption}\nBased on your observation, does the "
                     "given video entail the caption?")
CHOICE = PREAMBLE + ("Here are two captions that describe the video.\nA) {c1}\nB) {c2}\nBased on your observation, "
                     "select the caption that best describes the video.\nJust print either A or B.")
# Paper, App. C: closed models are told "Just answer with either Yes or No.", on a line of its own
# as in Fig. 16.
CLOSED = "\nJust answer with either Yes or No."
# Paper, App. C, Fig. 16 (GPT-4o, shown frames): a first sentence about frames, and "video frames"
# in the second.
FRAMES_PREAMBLE = ("You are given frames sampled sequentially from a video. Carefully watch the video frames and pay "
                   "attention to the sequence of events, the details and actions of persons.\n")
FRAMES_ENTAIL = FRAMES_PREAMBLE + ENTAIL.removeprefix(PREAMBLE) + CLOSED
FRAMES_CHOICE = FRAMES_PREAMBLE + CHOICE.removeprefix(PREAMBLE)

# Released code, github.com/katha-ai/VELOCITI at 8d66ddbb58161184f3877e7c1946955139948285 (the
# CVPR 2025 main branch). vidllm_eval.py line 15 (entailment, open models; the closing instruction
# and the trailing space on the question's line) and line 17 (multiple choice: one line up to the
# options' end; {cap1}/{cap2} are timefoil's {c1}/{c2}).
RELEASED_ENTAIL = ("Carefully watch the video and pay attention to the sequence of events, the details and actions "
                   "of persons.\nHere is a caption that describes the video: {caption}\nBased on your observation, "
                   "does the given video entail the caption? Just answer with either Yes or No. ")
RELEASED_CHOICE_SOURCE = ("Carefully watch the video and pay attention to the sequence of events, the details and "
                          "actions of persons. Here are two captions that describe the video. A) {cap1} B) {cap2}\n"
                          "Based on your observation, select the caption that best describes the video. Just print "
                          "either A or B.")
RELEASED_CHOICE = RELEASED_CHOICE_SOURCE.replace("{cap1}", "{c1}").replace("{cap2}", "{c2}")
# gemini/eval.py line 90 (entailment for Gemini: no trailing space; {cap} is {caption}); its
# multiple-choice prompt, line 92, is vidllm_eval.py's line 17.
RELEASED_GEMINI_ENTAIL_SOURCE = ("Carefully watch the video and pay attention to the sequence of events, the details "
                                 "and actions of persons.\nHere is a caption that describes the video: {cap}\nBased "
                                 "on your observation, does the given video entail the caption? Just answer with "
                                 "either Yes or No.")
RELEASED_GEMINI_ENTAIL = RELEASED_GEMINI_ENTAIL_SOURCE.replace("{cap}", "{caption}")

# Paper, App. A.3, Fig. 5 ("CoT evaluation prompt", the rows of Table 8), quote marks as printed.
# The released code has no chain-of-thought prompt. The figure is one block headed "System
# Prompt" that ends with the line naming the caption; timefoil sends that last line as the user's
# question and the rest as the system prompt. The verdict is read from the <<<output>>> tags.
COT_SYSTEM = (
    "You are an AI assistant specializing in analyzing movie clips to verify captions using a Chain of "
    "Thought (CoT) approach. Given a movie clip and a corresponding caption, your task is to determine "
    "whether the caption accurately describes the events in the clip.\n"
    'A caption is considered accurate (“Yes") if *all applicable* of the following criteria are met:\n'
    "1. **Actor/Doer**: The person or entity performing the action is correctly identified.\n"
    "2. **Attributes**: The characteristics of the actors/doers and the action itself are accurately "
    "described (e.g. clothing color, size, speed).\n"
    "3. **Instruments/Objects**: Any tools, objects, or instruments used in the action are correctly "
    "identified.\n"
    "4. **Receiver/Patient**: The target or recipient of the action is correctly identified.\n"
    "5. **Relationships**: The relationships between the entities involved (e.g., “standing next "
    'to",“holding") are accurately depicted.\n'
    '6. **Manner**: The way in which the action is performed (e.g., “quickly", “slowly", “angrily") is '
    "accurately described.\n"
    "7. **Location**: The setting or location of the scene is correctly identified.\n"
    "8. **Clarity**: There is sufficient visual information in the clip to confidently assess the "
    "correctness of the caption.\n"
    "9. **Event Order**: If the caption suggests a specific order of events, then the video should have "
    "events happening in the suggested order.\n"
    "If any of the above criteria cannot be verified due to a lack of visuals, the caption should not be "
    "considered accurate.\n"
    "Note that the caption is designed to represent a part of the video clip and may not explain all the "
    "events in the clip.\n"
    "Follow these steps:\n"
    "1. **Analysis:** Carefully examine the provided movie clip.\n"
    "2. **Reasoning:** Analyze the caption in relation to the clip. Break down the caption into smaller "
    "parts and determine if each part meets the accuracy criteria listed above. Detail your reasoning "
    "process within ‘<<<thinking>>>‘ tags.\n"
    "3. **Evaluation:** Based on your reasoning, evaluate the overall accuracy of the caption. If there "
    "is insufficient information in the clip to definitively confirm or deny the caption based on one or "
    "more criteria, explain what information is missing within ‘<<<reflection>>>‘ tags.\n"
    '4. **Conclusion:** Provide a clear “Yes" or “No" answer within ‘<<<output>>>‘ tags.\n'
    "Use the following format:\n"
    "<<<thinking>>>\n"
    "[[[[Detailed step-by-step reasoning, referencing the accuracy criteria. This is your internal "
    "thought process.]]]]\n"
    "<<</thinking>>>\n"
    "<<<reflection>>>\n"
    "[[[[Reflections on your reasoning, including any uncertainties or missing information and which "
    "criteria could not be verified. If the caption cannot be definitively verified, explain why.]]]]\n"
    "<<</reflection>>>\n"
    "<<<output>>>\n"
    "[[[[ Yes or No ]]]]\n"
    "<<</output>>>"
)
COT_ENTAIL = "Evaluate the following caption for the accompanying movie clip: {caption}"

# timefoil's own chain of thought, for either protocol (the paper has none for multiple choice):
# reasoning over the roles and order of events, then a tagged verdict that the parser reads.
OWN_COT_SYSTEM = ("You check captions of short movie clips. Reason step by step: who acts, what they do, how, to "
                  "whom, and in which order, each compared with what the clip shows. End with your verdict inside "
                  "<answer></answer> tags.")
OWN_COT_ENTAIL = "Caption: {caption}\nDoes the clip show exactly this? Conclude with <answer>Yes</answer> or " \
                 "<answer>No</answer>."
OWN_COT_CHOICE = ("Captions:\nA) {c1}\nB) {c2}\nWhich caption describes the clip? Conclude with <answer>A</answer> "
                  "or <answer>B</answer>.")
RELEASED = "github.com/katha-ai/VELOCITI@8d66ddb"
PROMPT_VARIANTS = {
    "closed": Prompts(entailment=ENTAIL + CLOSED, choice=CHOICE,
                      source="paper App. C: Fig. 15 with the closed models' instruction on a line of its own"),
    "frames": Prompts(entailment=FRAMES_ENTAIL, choice=FRAMES_CHOICE, source="paper App. C Fig. 16 (GPT-4o, frames)"),
    "released": Prompts(entailment=RELEASED_ENTAIL, choice=RELEASED_CHOICE,
                        source=f"released code {RELEASED} vidllm_eval.py:15 and :17 (open models)"),
    "released-gemini": Prompts(entailment=RELEASED_GEMINI_ENTAIL, choice=RELEASED_CHOICE,
                               source=f"released code {RELEASED} gemini/eval.py:90 and :92"),
    "cot": Prompts(entailment=COT_ENTAIL, system=COT_SYSTEM, reasoning=True, answer_tokens=1024,
                   protocols=("entailment",),
                   source="paper App. A.3 Fig. 5 (chain of thought; its last line as the user's question)"),
    "cot-timefoil": Prompts(entailment=OWN_COT_ENTAIL, choice=OWN_COT_CHOICE, system=OWN_COT_SYSTEM, reasoning=True,
                            answer_tokens=1024, source=f"{OWN_WORDING}: chain of thought with <answer> tags"),
}
# -- end of prompts -----------------------------------------------------------------------------


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


# The released scorers at 8d66ddbb58161184f3877e7c1946955139948285. Multiple choice, metrics.py
# lines 29-44 (gemini/closed_model_metrics.py lines 31-46 alike): a pair counts only where the first
# whitespace token of both answers is exactly "A" or "B", and acc_A, acc_B and A∧B divide by those
# pairs ("A." or "a" drops the pair; an empty answer raises at line 32, timefoil drops its pair).
# Entailment of closed models: gemini/eval.py lines 122-127 map a reply to Yes where it contains
# "Yes" and not "No", to No the other way round (case-sensitive), and closed_model_metrics.py lines
# 7-29 keep only pairs whose two replies both map, StrictVLE over those, acc(pos) and acc(neg|pos)
# (lines 17-29) too. Open models (metrics.py lines 13-27) are read from the first token's
# probabilities over every row: an e read from probabilities stands under this rule.
RELEASED_READING = ReadingRule(
    source=f"{RELEASED} metrics.py:29-44 (first token exactly A or B), gemini/eval.py:122-127 and "
           "gemini/closed_model_metrics.py:7-29 (contains Yes and not No); unread pairs dropped",
    letter=first_token, verdict=contains_one_verdict, drops=True)


BENCHMARK = Benchmark(
    name="velociti",
    description="VELOCITI: StrictVLE / ClassicVLE entailment and two-order multiple choice on movie clips",
    load=load,
    default_protocol="entailment",
    default_sampling=Sampling(frames=None, fps=1.0),  # mid-second frames
    prompts=Prompts(entailment=ENTAIL, choice=CHOICE, source="paper App. C Fig. 15 (open models, Gemini)"),
    variants=PROMPT_VARIANTS,
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
    released=RELEASED_READING,
    # Table 2: runs as rows, the control test ("Ctrl") and the seven tests, then their average
    by_test={"entailment": "StrictVLE", "choice": "A∧B", "similarity": "accuracy"},
    test_labels={"control": "Ctrl"},
)
