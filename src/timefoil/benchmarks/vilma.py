"""ViLMA: five tests, each a main test (T) and a proficiency test (P) on the same video."""
from __future__ import annotations

import os
import re

from ..items import Item
from ..protocols import OWN_WORDING, Prompts
from ..scoring import SummarySpec
from .base import (Benchmark, DataError, need, need_number, need_text, need_texts, paper_rows, read_json, resolve_video,
                   window)

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
    if record.get("time_unit", "sec") != "sec":
        raise DataError(f"{where}: time_unit {record['time_unit']!r}; use the *-sec files (timestamps in seconds)")
    for ext in VIDEO_EXTENSIONS:
        if os.path.exists(os.path.join(root, "videos", name + ext)):
            name += ext
            break
    else:
        name += "" if os.path.splitext(name)[1] else ".mp4"
    precut = start is not None and end is not None and re.search(rf"_{int(start)}_{int(end)}(\.\w+)?$", name)
    ref = resolve_video(root, f"videos/{name}", where)
    return ref if precut else type(ref).file(ref.path, start, end)


def _youtube(record: dict) -> dict | None:
    """How `prepare --youtube` can fetch the file: a cut clip, or the whole video (windowed)."""
    if not record.get("youtube_id"):
        return None
    if record.get("video_file"):
        return {"id": record["youtube_id"], "start": record.get("start_time"), "end": record.get("end_time")}
    return {"id": record["youtube_id"]}


def member(record: dict, where: str) -> bool:
    """In the benchmark iff annotators validated the caption (mturk.caption >= 2) and the
    proficiency caption (proficiency.human.caption == 1)."""
    mturk = need(record, "mturk", where + " (a file without human validation is not part of ViLMA)")
    human = need(need(record, "proficiency", where), "human", where + ": proficiency")
    return need_number(mturk, "caption", where + ": mturk") >= 2 and need_number(human, "caption",
                                                                                  where + ": proficiency.human") == 1


def breakdown(record: dict, test: str) -> tuple[str, ...]:
    """What the paper breaks results down by: the source dataset, the class (the true count,
    for counting) and the foils' classes."""
    out = [f"source={record['dataset']}"] if record.get("dataset") else []
    if record.get("class") is not None:
        out.append(f"{'count' if test == 'counting' else 'class'}={record['class']}")
    foils = record.get("classes_foil")
    out += [f"foil={c}" for c in (foils if isinstance(foils, list) else [foils] if foils is not None else [])]
    return tuple(out)


def load_file(path: str, root: str) -> list[Item]:
    data = read_json(path)
    test, subtest = _test_of(os.path.basename(path))
    if not isinstance(data, dict):
        raise DataError(f"{path}: expected an object mapping ids to records")
    stem, items = os.path.splitext(os.path.basename(path))[0], []
    for key, record in data.items():
        where = f"{path}: record {key!r}"
        if not isinstance(record, dict):
            raise DataError(f"{where}: expected an object, found {type(record).__name__}")
        if not member(record, where):
            continue
        group = f"{stem}:{key}"
        common = dict(group_id=group, benchmark="vilma", test=test, subtest=subtest,
                      videos=(_video(root, record, where),), categories=breakdown(record, test))
        proficiency = need(record, "proficiency", where)
        items.append(Item(id=group, texts=(need_text(record, "caption", where), *need_texts(record, "foils", where)),
                          metadata={"dataset": record.get("dataset"), "youtube": _youtube(record)},
                          **common))
        items.append(Item(id=f"{group}:proficiency", role="proficiency",
                          texts=(need_text(proficiency, "caption", where + ": proficiency"),
                                 *need_texts(proficiency, "foils", where + ": proficiency")), **common))
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
        data = read_json(os.path.join(folder, name))
        removed = sum(1 for key, record in data.items() if not member(record, f"{name}: record {key!r}"))
        filtered[name] = {"records": len(data), "removed by the validation filter": removed}
    return {"files": filtered, "ignored": ignored}


def load(data_dir: str) -> list[Item]:
    if os.path.isfile(data_dir):  # one file, named explicitly
        return load_file(data_dir, os.path.dirname(data_dir))
    for folder in (data_dir, os.path.join(data_dir, "data")):  # like the other loaders, DIR or DIR/data
        present = [name for name in FILES if os.path.exists(os.path.join(folder, name))]
        if present:
            return [item for name in present for item in load_file(os.path.join(folder, name), data_dir)]
    raise DataError(f"{data_dir}: none of the ViLMA files found ({', '.join(FILES)})")


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
    obtain="annotation files: the ViLMA repository's data/*.json; videos under videos/ (QUVA, Something-Something "
           "v2, STAR, VidSitu by file name; YouTube clips with --youtube)",
)
