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
from .base import (AVG, MAX_SECONDS, Benchmark, DataError, PaperShape, distinct, find_file, make_item, need_flag,
                   need_key, need_text, optional, resolve_video)
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
    # the default prompts by name: a model that answers only in writing is asked "closed" unless told this
    "open": Prompts(entailment=ENTAIL, choice=CHOICE, source="paper App. C Fig. 15 (open models, Gemini)"),
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


# -- the paper's tables ------------------------------------------------------------------------------
# Its tables of runs, each with its rows as printed (a row on the 150-per-test subset says so in its
# label; None where the paper prints "-"; its Random rows are the chance row every table has).
TEST_LABELS = {"control": "Ctrl", "agent_random": "AgRand", "agent_bind": "AgBind", "coref": "AgCref",
               "action_adv": "ActAdv", "action_manner": "ActMan", "action_bind": "ActBind", "chrono": "EvChr"}
EVERY = (*TESTS, AVG)  # Ctrl, the seven tests, then "Avg": their average, control left out

# Table 2 (StrictVLE), in the paper's order; the summary lists a metric's rows in the order they are
# declared, the models the text discusses first (NAMED_FIRST)
TABLE_2_ROWS = {
    "PLLaVA": (1.3, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0),
    "Owl-Con": (24.3, 3.4, 0.7, 0.0, 4.3, 2.8, 0.6, 0.1, 1.7),
    "Video-LLaVA": (65.8, 16.4, 7.6, 0.3, 8.7, 3.3, 10.6, 3.9, 7.3),
    "Qwen2-VL-7B": (84.6, 39.1, 13.5, 6.5, 17.8, 17.5, 16.4, 0.4, 15.9),
    "LLaVA-OneVision-7B": (81.6, 56.7, 32.9, 8.0, 29.7, 30.6, 36.4, 30.5, 32.1),
    "LLaVA-OneVision-72B": (79.3, 63.7, 45.4, 38.6, 33.1, 29.3, 45.1, 46.5, 43.1),
    "Gemini-1.5-Flash (subset)": (91.9, 56.4, 23.8, 4.7, 32.9, 21.6, 25.0, 2.7, 23.9),
    "Qwen2-VL-72B (subset)": (82.7, 56.0, 29.3, 35.3, 30.0, 24.0, 35.3, 1.3, 30.2),
    "LLaVA-OneVision-72B (subset)": (81.3, 64.0, 46.7, 41.3, 30.7, 32.7, 46.0, 50.0, 44.5),
    "GPT-4o (subset)": (63.3, 54.7, 44.7, 40.7, 55.0, 42.0, 54.0, 32.2, 46.2),
    "Gemini-1.5-Pro (subset)": (74.3, 60.1, 49.7, 36.7, 52.3, 43.5, 52.3, 50.3, 49.3),
    "human": (None, 91.5, 92.9, 92.6, 92.9, 89.9, 91.5, 100.0, 93.0),
}
NAMED_FIRST = ("LLaVA-OneVision-72B", "LLaVA-OneVision-7B", "Qwen2-VL-7B", "Gemini-1.5-Pro (subset)", "human")
TABLE_2 = PaperShape("entailment", "Table 2", ("StrictVLE",), EVERY, what="StrictVLE by test",
                     order=tuple(TABLE_2_ROWS))

# Table 3: accuracy on positives, acc(pos), and on negatives whose positive was right, acc(neg|pos), on
# the control test and on average
TABLE_3 = PaperShape("entailment", "Table 3", ("acc(pos)", "acc(neg|pos)"), ("control", AVG),
                     what="acc(pos) and acc(neg|pos)")
TABLE_3_ROWS = {
    "LLaVA-OneVision-7B": (83.0, 98.3, 85.9, 38.1),
    "LLaVA-OneVision-72B": (79.8, 99.3, 80.4, 53.6),
    "Qwen2-VL-7B": (92.4, 91.5, 93.9, 17.1),
    "Qwen2-VL-72B (subset)": (84.0, 98.4, 85.2, 36.4),
    "Gemini-1.5-Flash (subset)": (93.9, 97.8, 95.8, 25.4),
    "GPT-4o (subset)": (63.0, 100.0, 64.5, 72.3),
    "Gemini-1.5-Pro (subset)": (75.0, 99.1, 74.0, 66.2),
}

# Table 4 (ClassicVLE): the Video-LLMs by entailment; VERA's plausibility and the contrastive models
# score texts, for which ClassicVLE is the similarity protocol's accuracy
TABLE_4 = PaperShape("entailment", "Table 4", ("ClassicVLE",), EVERY, what="ClassicVLE by test")
TABLE_4_ROWS = {
    "PLLaVA": (90.7, 74.6, 48.9, 63.7, 71.0, 57.0, 51.8, 49.8, 59.5),
    "Video-LLaVA": (89.7, 75.1, 49.6, 64.3, 61.6, 48.5, 52.0, 53.8, 57.8),
    "Owl-Con": (90.8, 73.2, 49.9, 48.1, 72.4, 61.8, 52.7, 42.5, 57.2),
    "Qwen2-VL-7B": (97.7, 93.0, 74.6, 63.7, 75.3, 76.2, 70.0, 63.5, 73.8),
    "LLaVA-OneVision-7B": (98.6, 94.4, 78.8, 69.0, 79.7, 76.9, 74.2, 84.0, 79.6),
    "LLaVA-OneVision-72B": (99.4, 95.8, 83.3, 80.5, 84.2, 81.2, 78.4, 81.9, 83.6),
}
TABLE_4_SCORED = PaperShape("similarity", "Table 4", ("accuracy",), EVERY,
                            what="ClassicVLE (the similarity's accuracy) by test")
TABLE_4_SCORED_ROWS = {
    "VERA": (50.9, 58.4, 53.4, 63.7, 67.6, 58.3, 53.3, 53.4, 58.3),
    "SigLIP": (95.3, 79.0, 54.4, 50.4, 66.4, 55.0, 54.0, 48.2, 58.2),
    "ViFi-CLIP": (93.7, 82.8, 58.9, 56.3, 63.2, 60.3, 59.0, 48.1, 61.2),
    "NegCLIP": (93.4, 83.5, 55.3, 50.4, 61.6, 61.1, 52.4, 50.1, 59.2),
}

# Table 7: Table 3's two numbers on every test (its Ctrl and Avg are Table 3's, but for GPT-4o's Ctrl)
TABLE_7 = PaperShape("entailment", "Table 7", ("acc(pos)", "acc(neg|pos)"), EVERY,
                     what="acc(pos) and acc(neg|pos) by test")
TABLE_7_ROWS = {
    "LLaVA-OneVision-7B": (83.0, 98.3, 84.2, 67.3, 82.0, 40.1, 97.1, 8.2, 86.3, 34.4, 80.6, 37.9, 81.9, 44.5, 89.0,
                           34.2, 85.9, 38.1),
    "LLaVA-OneVision-72B": (79.8, 99.3, 81.6, 78.1, 79.5, 57.1, 87.0, 44.4, 80.6, 41.1, 77.9, 37.5, 78.2, 57.6, 78.3,
                            59.4, 80.4, 53.6),
    "Qwen2-VL-7B": (92.4, 91.5, 92.8, 42.1, 90.7, 14.9, 97.6, 6.6, 94.3, 18.9, 93.0, 18.8, 91.0, 18.1, 98.0, 0.4, 93.9,
                    17.1),
    "Qwen2-VL-72B (subset)": (84.0, 98.4, 85.3, 65.6, 84.0, 34.9, 77.3, 45.7, 84.0, 35.7, 86.7, 27.7, 80.7, 43.8, 98.7,
                              1.4, 85.2, 36.4),
    "LLaVA-OneVision-72B (subset)": (81.3, 100.0, 79.3, 80.7, 80.7, 57.9, 86.7, 47.7, 79.3, 38.7, 82.0, 39.8, 74.7,
                                     61.6, 80.7, 62.0, 80.5, 55.5),
    "Gemini-1.5-Flash (subset)": (93.9, 97.8, 93.3, 60.4, 93.9, 25.4, 100.0, 4.7, 93.3, 35.3, 95.3, 22.7, 95.3, 26.2,
                                  99.3, 2.8, 95.8, 25.4),
    "Gemini-1.5-Pro (subset)": (75.0, 99.1, 72.3, 83.2, 75.5, 65.8, 71.3, 51.4, 72.5, 72.2, 79.6, 54.7, 75.5, 65.8,
                                71.4, 70.5, 74.0, 66.2),
    "GPT-4o (subset)": (63.3, 100.0, 58.0, 94.3, 64.0, 69.8, 62.0, 65.6, 65.8, 83.7, 65.3, 64.3, 64.7, 83.5, 71.8, 44.9,
                        64.5, 72.3),
}

# Table 5: multiple choice on the control test and on average (bias: acc_B - acc_A)
TABLE_5 = PaperShape("choice", "Table 5", ("acc_A", "acc_B", "bias", "A∧B"), ("control", AVG),
                     what="multiple choice, both orders")
TABLE_5_ROWS = {
    "Qwen2-VL-7B": (94.9, 98.5, 3.6, 94.6, 38.9, 88.0, 49.1, 38.5),
    "LLaVA-OneVision-7B": (96.0, 99.6, 3.6, 95.9, 28.7, 96.5, 67.8, 28.7),
    "LLaVA-OneVision-72B": (99.2, 99.4, 0.2, 99.0, 78.0, 88.3, 10.3, 76.0),
    "Qwen2-VL-72B (subset)": (100.0, 100.0, 0.0, 100.0, 73.1, 75.7, 2.6, 65.3),
    "LLaVA-OneVision-72B (subset)": (100.0, 100.0, 0.0, 100.0, 77.1, 87.8, 10.7, 75.0),
    "Gemini-1.5-Flash (subset)": (100.0, 99.3, -0.7, 99.3, 85.1, 73.2, -11.9, 67.7),
    "GPT-4o (subset)": (100.0, 100.0, 0.0, 100.0, 83.9, 74.8, -9.1, 68.6),
}

# Table 10: bias and A∧B on each of the seven tests (no control, no average)
TABLE_10 = PaperShape("choice", "Table 10", ("bias", "A∧B"), TESTS[1:], what="multiple choice by test")
TABLE_10_ROWS = {
    "Qwen2-VL-7B": (24.2, 74.1, 42.2, 40.8, 37.5, 33.6, 49.6, 42.9, 51.5, 41.5, 40.0, 36.1, 98.5, 0.7),
    "LLaVA-OneVision-7B": (41.6, 58.1, 81.6, 17.1, 59.9, 26.0, 71.3, 27.6, 68.0, 30.1, 70.0, 24.2, 81.9, 15.9),
    "LLaVA-OneVision-72B": (3.1, 94.8, 10.9, 72.9, 8.0, 69.0, 8.9, 79.7, 11.1, 77.5, 14.8, 62.5, 15.1, 75.9),
    "Qwen2-VL-72B (subset)": (6.0, 88.7, 3.3, 64.7, 2.7, 60.0, 6.7, 68.0, 2.0, 74.0, 8.6, 54.7, -11.3, 47.3),
    "LLaVA-OneVision-72B (subset)": (2.7, 95.3, 11.4, 75.3, 11.3, 67.3, 9.3, 76.7, 7.3, 77.3, 16.0, 61.3, 16.7, 72.0),
    "Gemini-1.5-Flash (subset)": (-2.8, 94.4, -12.6, 73.4, 8.0, 61.3, -12.9, 72.8, -14.3, 66.0, 0.7, 64.8, -49.6, 41.4),
    "GPT-4o (subset)": (4.1, 92.5, 4.7, 79.3, 3.4, 60.8, -10.1, 77.0, -7.0, 74.1, 2.0, 70.7, -60.8, 25.7),
}


BENCHMARK = Benchmark(
    name="velociti",
    description="VELOCITI: StrictVLE / ClassicVLE entailment and two-order multiple choice on movie clips",
    load=load,
    default_protocol="entailment",
    default_sampling=Sampling(frames=None, fps=1.0),  # mid-second frames
    prompts=Prompts(entailment=ENTAIL, choice=CHOICE, source="paper App. C Fig. 15 (open models, Gemini)"),
    variants=PROMPT_VARIANTS,
    written_variant=("closed", "open"),  # App. C: the closed models were told to answer Yes or No
    option_values={"subset": (("paper",), "a file of item ids (a JSON list, or one per line)")},
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
    quoted=(TABLE_2.rows({label: TABLE_2_ROWS[label] for label in (*NAMED_FIRST, *TABLE_2_ROWS)})
            + TABLE_3.rows(TABLE_3_ROWS) + TABLE_4.rows(TABLE_4_ROWS) + TABLE_4_SCORED.rows(TABLE_4_SCORED_ROWS)
            + TABLE_7.rows(TABLE_7_ROWS) + TABLE_5.rows(TABLE_5_ROWS) + TABLE_10.rows(TABLE_10_ROWS)),
    hub_dataset="katha-ai-iiith/VELOCITI",
    released=RELEASED_READING,
    paper_shapes=(TABLE_2, TABLE_3, TABLE_4, TABLE_7, TABLE_4_SCORED, TABLE_5, TABLE_10),
    test_labels=TEST_LABELS,
)
