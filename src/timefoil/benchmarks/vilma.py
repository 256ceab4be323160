"""ViLMA: five tests, each a main test (T) and a proficiency test (P) on the same video."""
from __future__ import annotations

import os
import re

from ..core.items import Item
from ..protocols import OWN_WORDING, Prompts
from ..protocols.readings import ReadingRule
from ..scoring import SummarySpec
from .base import (Benchmark, DataError, distinct, make_item, need_number, need_object, need_text, need_texts,
                   optional, paper_rows, resolve_video, window)
from .reading import json_records, read_json

# file -> (test, subtest). Only these files make the benchmark; others in the folder are ignored.
FILES = {
    "counting-easy-spelled-sec.json": ("counting", "easy"),
    "counting-hard-spelled-sec.json": ("counting", "hard"),
    "SRL_Action_Replacement_Top_1000.json": ("situation_awareness", "action_replacement"),
    "SRL_Actor_Swapping.json": ("situation_awareness", "actor_swapping"),
    "change-state-action.json": ("change_of_state", "action"),
    "change-state-prestate.json": ("change_of_state", "prestate"),
    "change-state-poststate.json": ("change_of_state", "poststate"),
    "change-state-inverse.json": ("change_of_state", "inverse"),
    "rare-actions-verb-foils.json": ("rare_actions", "action_replacement"),
    "rare-actions-noun-foils.json": ("rare_actions", "object_replacement"),
    "relations.json": ("spatial_relations", "relations"),
}
TESTS = tuple(dict.fromkeys(test for test, _ in FILES.values()))
VIDEO_EXTENSIONS = ("", ".mp4", ".webm", ".mkv", ".avi")


def _test_of(name: str) -> tuple[str, str]:
    if name in FILES:
        return FILES[name]
    match = re.match(r"counting-(easy|hard)", name)
    if match:
        return "counting", match.group(1)
    raise DataError(f"{name}: not a ViLMA benchmark file (expected one of {', '.join(FILES)})")


def _video(root: str, record: dict, where: str):
    """video_file (searched with common extensions) or youtube_id, windowed by start/end
    seconds unless the file is already cut to them (a name ending in _<start>_<end>)."""
    start, end = window(record, "start_time", "end_time", where)
    name = need_text(record, ("video_file", "youtube_id"), where)
    unit = optional(record, "time_unit", need_text, where, "sec")
    if unit != "sec":
        raise DataError(f"{where}: field 'time_unit' is {unit!r}; use the *-sec files (timestamps in seconds)")
    for ext in VIDEO_EXTENSIONS:
        if os.path.exists(os.path.join(root, "videos", name + ext)):
            name += ext
            break
    else:
        name += "" if os.path.splitext(name)[1] else ".mp4"
    precut = start is not None and end is not None and re.search(rf"_{int(start)}_{int(end)}(\.\w+)?$", name)
    ref = resolve_video(root, f"videos/{name}", where)
    return ref if precut else type(ref).file(ref.path, start, end)


def _youtube(record: dict, where: str) -> dict | None:
    """How `prepare --youtube` can fetch the file: a cut clip, or the whole video (windowed)."""
    youtube_id = optional(record, "youtube_id", need_text, where)
    if youtube_id is None:
        return None
    if optional(record, "video_file", need_text, where):
        start, end = window(record, "start_time", "end_time", where)
        return {"id": youtube_id, "start": start, "end": end}
    return {"id": youtube_id}


def member(record: dict, where: str) -> bool:
    """In the benchmark iff annotators validated the caption (mturk.caption >= 2) and the
    proficiency caption (proficiency.human.caption == 1)."""
    mturk = need_object(record, "mturk", where + " (a file without human validation is not part of ViLMA)")
    human = need_object(need_object(record, "proficiency", where), "human", where + ": proficiency")
    return need_number(mturk, "caption", where + ": mturk") >= 2 and need_number(human, "caption",
                                                                                  where + ": proficiency.human") == 1


def _label(value, field: str, where: str) -> str:
    """A class as published: a name or a number (a count)."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)) or value == "":
        raise DataError(f"{where}: field {field!r} must be a class name or number, found {type(value).__name__} "
                        f"{value!r:.40}")
    return str(value)


def breakdown(record: dict, test: str, where: str) -> tuple[str, ...]:
    """What the paper breaks results down by: the source dataset, the class (the true count,
    for counting) and the foils' classes."""
    dataset = optional(record, "dataset", need_text, where)
    out = [f"source={dataset}"] if dataset else []
    if record.get("class") is not None:
        out.append(f"{'count' if test == 'counting' else 'class'}={_label(record['class'], 'class', where)}")
    foils = record.get("classes_foil")
    out += [f"foil={_label(c, 'classes_foil', where)}"
            for c in (foils if isinstance(foils, list) else [foils] if foils is not None else [])]
    return tuple(out)


def _records(path: str) -> list[tuple[str, str, dict]]:
    """(key, where, record) of a ViLMA file: an object from ids to records."""
    data = read_json(path)
    if not isinstance(data, dict):
        raise DataError(f"{path}: expected an object mapping ids to records, found {type(data).__name__}")
    return [(key, where, record) for key, (where, record) in zip(data, json_records(data, path))]


def load_file(path: str, root: str) -> list[tuple[str, Item]]:
    records = _records(path)
    test, subtest = _test_of(os.path.basename(path))
    stem, items = os.path.splitext(os.path.basename(path))[0], []
    for key, where, record in records:
        if not member(record, where):
            continue
        group = f"{stem}:{key}"
        common = dict(group_id=group, benchmark="vilma", test=test, subtest=subtest,
                      videos=(_video(root, record, where),), categories=breakdown(record, test, where))
        proficiency, at = need_object(record, "proficiency", where), where + ": proficiency"
        items.append((where, make_item(
            where, id=group, texts=(need_text(record, "caption", where), *need_texts(record, "foils", where)),
            metadata={"dataset": record.get("dataset"), "youtube": _youtube(record, where)}, **common)))
        items.append((where, make_item(
            where, id=f"{group}:proficiency", role="proficiency",
            texts=(need_text(proficiency, "caption", at), *need_texts(proficiency, "foils", at)), **common)))
    return items


def survey(data_dir: str) -> dict:
    """For `inspect`: per file, the records the human-validation filter removed, and the
    files in the folder that are not read, with the reason."""
    folder = next((f for f in (data_dir, os.path.join(data_dir, "data"))
                   if os.path.isdir(f) and any(name in FILES for name in os.listdir(f))), data_dir)
    filtered, ignored = {}, {}
    for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
        if not name.endswith(".json"):
            continue
        if name not in FILES:
            variant = re.match(r"counting-(easy|hard)-", name)
            ignored[name] = ("another encoding of a counting file (timefoil reads the -spelled-sec ones)" if variant
                             else "not one of the ViLMA benchmark files")
            continue
        records = _records(os.path.join(folder, name))
        removed = sum(1 for _, where, record in records if not member(record, where))
        filtered[name] = {"records": len(records), "removed by the validation filter": removed}
    return {"files": filtered, "ignored": ignored}


def load(data_dir: str) -> list[Item]:
    if os.path.isfile(data_dir):  # one file, named explicitly
        return distinct(load_file(data_dir, os.path.dirname(data_dir)), data_dir)
    for folder in (data_dir, os.path.join(data_dir, "data")):  # like the other loaders, DIR or DIR/data
        present = [name for name in FILES if os.path.exists(os.path.join(folder, name))]
        if present:
            return distinct([pair for name in present for pair in load_file(os.path.join(folder, name), data_dir)],
                            folder)
    raise DataError(f"{data_dir}: none of the ViLMA files found ({', '.join(FILES)})")


# The released scorers, github.com/ilkerkesen/ViLMA at 746912b7c8e81d53eb946abe26456ad8b7db826f:
# bin/eval.py lines 71-72 (torchmetrics' multiclass accuracy: the argmax of the scores, the first
# of equal ones) and bin/multi_eval.py lines 78-81 (argmax, or argmin of perplexities, equal to 0
# for both the proficiency and the main test): a caption that ties with a foil counts right. Every
# item of the benchmark counts (the membership filter, bin/eval.py lines 49-56, is the loader's).
RELEASED_READING = ReadingRule(source="github.com/ilkerkesen/ViLMA@746912b bin/eval.py:71-72, bin/multi_eval.py:78-81 "
                                      "(argmax: ties right)", tie_policy="ties-correct")


BENCHMARK = Benchmark(
    name="vilma",
    description="ViLMA: counting, situation awareness, change of state, rare actions, spatial relations (P, T, P+T)",
    load=load,
    # The paper and its code score captions (similarity, perplexity) and print no question: the
    # choice and entailment questions are timefoil's.
    prompts=Prompts(source=f"{OWN_WORDING} (the paper and its code ask no question)"),
    summary=SummarySpec(tests=TESTS, average="P+T", rename={"accuracy": "T"}),
    survey=survey,
    table={"similarity": ("P", "T", "P+T"), "choice": ("P", "T", "P+T"), "entailment": ("P", "StrictVLE", "P+T")},
    quoted=paper_rows("similarity", "Table 2", ("overall/average P+T",), {
        "Video-LLaMA": (57.3,), "BLIP-2": (57.5,), "InternVideo": (54.2,), "CLIP": (52.9,),
        "GPT-2 (text only)": (26.2,), "OPT (text only)": (30.6,), "random": (23.8,)}),
    obtain="annotation files: data/*.json of github.com/ilkerkesen/ViLMA, into this folder; videos under videos/ "
           "(QUVA, Something-Something v2, STAR, VidSitu by file name; YouTube clips with --youtube)",
    released=RELEASED_READING,
)
