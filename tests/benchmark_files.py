"""Benchmark files for the tests: fixtures in each benchmark's published format, and a scorer
the tests replay by hand.

VITATECS and ViLMA annotation files in their published formats are written by the tests.

The records are made up (field names, nesting, key shapes and the quirks the loaders must
handle are those of the published files): 25 rows per VITATECS aspect; 24 records per ViLMA
file, some failing the human-validation filter, a counting file without validation fields,
a file that is not valid JSON, clips already cut to their window, and equal-length caption
and foil pairs (ties).
"""
from __future__ import annotations

import functools
import json
import os
import random
import tempfile

import numpy as np

import csv
from collections import defaultdict
from timefoil.benchmarks import get_benchmark
from timefoil.models.base import Model
from timefoil.execution.offline import answer_offline
from timefoil.models.requests import Answer
from timefoil.scoring import score_records

from timefoil.video import write_video

ASPECTS = ("Direction", "Intensity", "Sequence", "Localization", "Compositionality", "Type")
WORDS = ("person", "dog", "ball", "door", "car", "cup", "rope", "box", "hand", "table", "shirt", "lamp")
VERBS = ("opens", "closes", "pushes", "pulls", "lifts", "drops", "throws", "catches", "turns", "moves")


def _sentence(rng: random.Random, length: int) -> str:
    words = ["a", rng.choice(WORDS), rng.choice(VERBS), "the", rng.choice(WORDS)]
    while len(words) < length:
        words.append(rng.choice(("slowly", "quickly", "again", "there", "then", "away", "up", "down")))
    return " ".join(words[:max(length, 3)])


def vitatecs_slice(root: str, rows: int = 25, seed: int = 0) -> str:
    """Six ``<Aspect>.jsonl`` files of ``rows`` lines each."""
    rng = random.Random(seed)
    os.makedirs(root, exist_ok=True)
    for aspect in ASPECTS:
        lines = []
        for n in range(rows):
            caption = _sentence(rng, rng.randint(5, 9))
            lines.append(json.dumps({"src_dataset": rng.choice(("MSRVTT", "VATEX")),
                                     "video_name": f"video{rng.randint(1000, 9999)}.mp4", "caption": caption,
                                     "counterfactual": _sentence(rng, rng.randint(5, 9)), "aspect": aspect}))
        with open(os.path.join(root, f"{aspect}.jsonl"), "w", encoding="utf-8") as handle:
            handle.write("\n".join(lines) + "\n")
    return root


# file -> (source dataset, how its records name their video)
VILMA_FILES = {
    "counting-easy-spelled-sec.json": ("QUVA", "quva"),
    "counting-hard-spelled-sec.json": ("QUVA", "quva"),
    "counting-easy-digits-sec.json": ("QUVA", "quva"),  # another encoding, no validation fields
    "counting-easy-spelled-pts.json": ("QUVA", "quva"),  # another encoding (frame points)
    "SRL_Action_Replacement_Top_1000.json": ("VidSitu", "cut"),
    "SRL_Actor_Swapping.json": ("VidSitu", "cut"),
    "change-state-action.json": ("coin", "youtube"),
    "change-state-prestate.json": ("coin", "youtube"),
    "change-state-poststate.json": ("STAR", "file"),
    "change-state-inverse.json": ("coin", "youtube"),
    "rare-actions-verb-foils.json": ("RareAct", "youtube"),
    "rare-actions-noun-foils.json": ("RareAct", "youtube"),
    "relations.json": ("something-something-v2", "file"),
}

# Published as it is: the comma after "class" is missing, so line 17 is where JSON breaks.
DUMMY = """{
    "dummy_0": {
        "dataset": "RareAct",
        "original_split": "test",
        "dataset_idx": "1001",
        "linguistic_phenomena": "actions",
        "youtube_id": "aaaaaaaaaaa",
        "video_file": null,
        "start_time": 40,
        "end_time": 50,
        "time_unit": "sec",
        "caption": "someone is folding a towel.",
        "foils": [
            "someone is washing a towel."
        ],
        "class": "folding"
        "classes_foil": [
            "washing"
        ]
    }
}
"""


def _video(rng: random.Random, how: str, n: int) -> dict:
    if how == "quva":
        start = round(rng.uniform(0, 3), 4)
        return {"youtube_id": None, "video_file": f"{n:03d}_rope_beach.mp4" if n == 0 else f"{n:03d}_clip.mp4",
                "start_time": 1.8667 if n == 0 else start, "end_time": 3.2 if n == 0 else round(start + 2, 4)}
    if how == "cut":  # the file is already the clip: its name ends in _<start>_<end>
        start = rng.randint(0, 100)
        ident = "".join(rng.choice("abcdefghijkXYZ0123") for _ in range(11))
        return {"youtube_id": ident, "video_file": f"{ident}_{start}_{start + 10}", "start_time": start,
                "end_time": start + 10}
    if how == "youtube":
        start = float(rng.randint(0, 100))
        return {"youtube_id": "".join(rng.choice("abcdefghijkXYZ0123") for _ in range(11)), "video_file": None,
                "start_time": start, "end_time": start + 1}
    return {"youtube_id": None, "video_file": str(rng.randint(10000, 99999)), "start_time": None, "end_time": None}


def _vilma_record(rng: random.Random, name: str, n: int) -> dict:
    dataset, how = VILMA_FILES[name]
    caption = _sentence(rng, rng.randint(4, 8))
    # every fourth record's foil is as long as its caption: a tie for a length-based scorer
    foil = " ".join(reversed(caption.split())) if n % 4 == 3 else _sentence(rng, rng.randint(4, 8))
    record = {"dataset": dataset, "original_split": "test", "dataset_idx": str(n), **_video(rng, how, n),
              "time_unit": "sec", "caption": caption, "foils": [foil],
              "proficiency": {"caption": _sentence(rng, 4), "foils": [_sentence(rng, rng.randint(3, 6))]}}
    if name.startswith("counting"):
        count, other = rng.sample(range(1, 10), 2)
        record.update({"class": count, "classes_foil": [other]})
    else:
        record.update({"class": rng.choice(VERBS), "classes_foil": [rng.choice(VERBS)]})
    if "digits" not in name:  # the validation fields; about one record in five fails the filter
        valid = n == 0 or rng.random() < 0.8  # the first record of each file is always in
        record["mturk"] = {"foil": 0, "caption": rng.choice((2, 3)) if valid else 1, "other": 0}
        record["proficiency"]["human"] = {"foil": 0, "caption": 1 if valid or rng.random() < 0.5 else 0, "other": 0}
    return record


def vilma_slice(root: str, records: int = 24, seed: int = 0) -> str:
    """Every ViLMA file, ``records`` records each, plus the published ``dummy.json``."""
    rng = random.Random(seed)
    os.makedirs(root, exist_ok=True)
    for name in VILMA_FILES:
        stem = os.path.splitext(name)[0]
        data = {f"{stem}-{n:04d}": _vilma_record(rng, name, n) for n in range(records)}
        with open(os.path.join(root, name), "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2)
    with open(os.path.join(root, "dummy.json"), "w", encoding="utf-8") as handle:
        handle.write(DUMMY)
    return root


@functools.cache
def vitatecs_dir() -> str:
    """The VITATECS slice, written once per test process."""
    return vitatecs_slice(os.path.join(tempfile.mkdtemp(prefix="timefoil-vitatecs-"), "vitatecs"))


@functools.cache
def vilma_dir() -> str:
    """The ViLMA slice, written once per test process."""
    return vilma_slice(os.path.join(tempfile.mkdtemp(prefix="timefoil-vilma-"), "vilma"))


VITATECS_DIR, VILMA_DIR = vitatecs_dir(), vilma_dir()


class ByLength(Model):
    """Scores a text by its length: a rule the tests can replay by hand."""

    kinds = frozenset({"similarity"})

    def answer(self, requests, frames):
        return [Answer(score=float(len(r.text))) for r in requests]


def score_by_length(name, items):
    bench = get_benchmark(name)
    records = answer_offline(items, "similarity", ByLength(), prompts=bench.prompts)
    return score_records(records, benchmark=name, model="len", protocol="similarity", spec=bench.summary)


# -- ViLMA -------------------------------------------------------------------------------
def vilma_members():
    """Members per (test, subtest), worked out from the raw files without timefoil."""
    files = {"counting-easy-spelled-sec.json": "counting/easy", "counting-hard-spelled-sec.json": "counting/hard",
             "SRL_Action_Replacement_Top_1000.json": "situation_awareness/action_replacement",
             "SRL_Actor_Swapping.json": "situation_awareness/actor_swapping",
             "change-state-action.json": "change_of_state/action",
             "change-state-prestate.json": "change_of_state/prestate",
             "change-state-poststate.json": "change_of_state/poststate",
             "change-state-inverse.json": "change_of_state/inverse",
             "rare-actions-verb-foils.json": "rare_actions/action_replacement",
             "rare-actions-noun-foils.json": "rare_actions/object_replacement",
             "relations.json": "spatial_relations/relations"}
    members = defaultdict(list)
    for name, key in files.items():
        for record in json.load(open(os.path.join(VILMA_DIR, name))).values():
            if record["mturk"]["caption"] >= 2 and record["proficiency"]["human"]["caption"] == 1:
                members[key].append(record)
    return members


# -- VELOCITI ----------------------------------------------------------------------------
def velociti_fixture(root, records):
    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, "velociti.jsonl"), "w") as handle:
        for record in records:
            handle.write(json.dumps(record) + "\n")
    return str(root)


# -- TemporalBench -----------------------------------------------------------------------
def tb_question(idx, video, category, true, negative, gt, source_key="dataset"):
    options = {"A": true, "B": negative} if gt == "A" else {"A": negative, "B": true}
    return {"idx": idx, "video_name": video, "category": category, source_key: "COIN",
            "question": f"Which caption best describes this video?\nA. {options['A']}\nB. {options['B']}\n"
                        "Answer with the option's letter from the given choices directly.", "GT": gt}


# -- Vinoground --------------------------------------------------------------------------
def vinoground_fixture(root, pairs=2, orders=True):
    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, "vinoground.csv"), "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["index", "major", "minor", "pos_cap", "neg_cap", "pos_vid", "neg_vid"])
        for n in range(pairs):
            writer.writerow([n, "action", "cyclical;spatial" if n == 0 else "", f"a dog runs then {n} sits",
                             f"a dog sits then {n} runs", f"yt{n}a", f"yt{n}b"])
    if orders:
        text = [{"idx": f"{n}_{s}", "video_name": f"{n}_{s}.mp4", "question": f"Q text {n} {s}",
                 "GT": "A" if s == "pos" else "B"} for n in range(pairs) for s in ("pos", "neg")]
        video = [{"idx": f"{n}_{s}", "video_name": f"{n}.mp4", "question": f"Q video {n} {s}",
                  "GT": "B" if s == "pos" else "A"} for n in range(pairs) for s in ("pos", "neg")]
        json.dump(text, open(os.path.join(root, "vinoground_textscore.json"), "w"))
        json.dump(video, open(os.path.join(root, "vinoground_videoscore.json"), "w"))
    return str(root)


class AlwaysA(Model):
    kinds = frozenset({"choice"})

    def answer(self, requests, frames):
        return [Answer(raw="A") for _ in requests]


def vinoground_with_videos(root):
    vinoground_fixture(root, pairs=2)
    os.makedirs(os.path.join(root, "vinoground_videos"))
    for n in range(2):
        for k, s in enumerate(("pos", "neg")):
            write_video(os.path.join(root, "vinoground_videos", f"{n}_{s}.mp4"),
                        [np.full((16, 16, 3), 40 * k + 10 * t, np.uint8) for t in range(12)], 6)
    return str(root)


# -- the five papers' benchmarks, small, with their videos ------------------------------------------
def _write_referenced_videos(benchmark: str, root: str) -> int:
    """A small clip at every path ``benchmark``'s items refer to, long enough for its window."""
    written = 0
    for item in get_benchmark(benchmark).load(root):
        for ref in item.videos:
            for part in ref.parts or (ref,):
                if os.path.exists(part.path):
                    continue
                seconds = int((part.end or 4) + 2)
                os.makedirs(os.path.dirname(part.path), exist_ok=True)
                shade = (written * 37) % 200
                write_video(part.path, [np.full((16, 16, 3), shade + t % 40, np.uint8) for t in range(4 * seconds)], 4)
                written += 1
    return written


def five_benchmarks(root) -> str:
    """``root/<benchmark>`` for the five papers' benchmarks, each in its published layout with a
    handful of items and tiny videos: what ``prepare --dest root/<benchmark>`` and the videos
    leave."""
    root = str(root)
    vinoground_with_videos(os.path.join(root, "vinoground"))
    tb = os.path.join(root, "temporalbench")
    os.makedirs(tb)
    videos = [f"short_video/COIN/v{n}_start_0_end_5.mp4" for n in range(2)]
    records = [tb_question(f"{v}_{k}", v, "action order", f"the man opens it {n}", f"the man shuts it {n} {k}",
                           "AB"[k % 2]) for n, v in enumerate(videos) for k in range(2)]
    with open(os.path.join(tb, "temporalbench_short_qa.json"), "w") as handle:
        json.dump(records, handle)
    vitatecs_slice(os.path.join(root, "vitatecs"), rows=1)
    velociti_fixture(os.path.join(root, "velociti"), [
        {"test_name": test, "video_id": f"clip{n}", "pos": f"he sits then runs {n}", "neg": f"he runs then sits {n}"}
        for n, test in enumerate(("chrono", "coref", "agent_bind"))])
    vilma = os.path.join(root, "vilma")
    os.makedirs(vilma)
    rng = random.Random(5)
    with open(os.path.join(vilma, "counting-easy-spelled-sec.json"), "w") as handle:
        json.dump({f"counting-{n}": _vilma_record(rng, "counting-easy-spelled-sec.json", n) for n in range(3)}, handle)
    for name in PAPER_NAMES:
        _write_referenced_videos(name, os.path.join(root, name))
    return root


PAPER_NAMES = ("vinoground", "temporalbench", "vitatecs", "velociti", "vilma")
