"""Bad annotation files, one row each, for every benchmark's loader: each is refused at load
with exit 1 and one line naming the file, the line (record, row) and the field; the run
directory stays untouched because the run never started."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from faults import Fault, run_fault

GOOD_ITEM = {"id": "a", "test": "order", "video": "videos/a.mp4", "texts": ["a man jumps, then sits",
                                                                            "a man sits, then jumps"]}
VILMA_RECORD = {"dataset": "QUVA", "video_file": "clip", "start_time": 1.0, "end_time": 3.0, "time_unit": "sec",
                "caption": "he jumps three times", "foils": ["he jumps five times"], "mturk": {"caption": 3},
                "proficiency": {"caption": "he jumps", "foils": ["he sits"], "human": {"caption": 1}}}
TB_QUESTION = {"idx": "q1", "video_name": "v.mp4", "category": "order", "dataset": "COIN", "GT": "A",
               "question": "Which caption?\nA. he runs then sits\nB. he sits then runs\nAnswer with the letter."}
VITATECS_ROW = {"src_dataset": "MSRVTT", "video_name": "v.mp4", "caption": "a man runs",
                "counterfactual": "a man walks"}
VELOCITI_ROW = {"test_name": "chrono", "video_id": "v_abc_seg_0_10", "pos": "a then b", "neg": "b then a"}


def command(tmp_path: Path, benchmark: str, verb: str = "run") -> list[str]:
    data = str(tmp_path / "data")
    if verb == "inspect":
        return ["inspect", benchmark, "--data", data]
    return ["run", benchmark, "--model", "random", "--data", data, "--out", str(tmp_path / "run")]


def data_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "data"
    folder.mkdir(exist_ok=True)
    return folder


def run_never_started(tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert not run.exists() or not any(run.iterdir()), sorted(p.name for p in run.iterdir())


def folder_bench(lines: list[str | bytes], verb: str = "run"):
    """An items folder whose items.jsonl holds ``lines`` (text or raw bytes) as given."""
    def prepare(tmp_path: Path) -> list[str]:
        raw = b"".join((line if isinstance(line, bytes) else line.encode("utf-8", "surrogatepass")) + b"\n"
                       for line in lines)
        (data_dir(tmp_path) / "items.jsonl").write_bytes(raw)
        return command(tmp_path, "items", verb)
    return prepare


def item(**changes) -> str:
    return json.dumps({**GOOD_ITEM, **changes})


def vitatecs_bench(line: str, verb: str = "run"):
    """VITATECS: the Direction file holds ``line``, the other five aspects a good row."""
    def prepare(tmp_path: Path) -> list[str]:
        folder = data_dir(tmp_path)
        for aspect in ("Direction", "Intensity", "Sequence", "Localization", "Compositionality", "Type"):
            (folder / f"{aspect}.jsonl").write_text(line if aspect == "Direction" else json.dumps(VITATECS_ROW))
        return command(tmp_path, "vitatecs", verb)
    return prepare


def file_bench(benchmark: str, name: str, text: str | bytes, verb: str = "run"):
    def prepare(tmp_path: Path) -> list[str]:
        path = data_dir(tmp_path) / name
        path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
        return command(tmp_path, benchmark, verb)
    return prepare


def vinoground_bench(rows: list[list[str]], extra: dict[str, str] | None = None, verb: str = "run"):
    def prepare(tmp_path: Path) -> list[str]:
        folder = data_dir(tmp_path)
        with open(folder / "vinoground.csv", "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(["index", "major", "minor", "pos_cap", "neg_cap", "pos_vid", "neg_vid"])
            writer.writerows(rows)
        for name, text in (extra or {}).items():
            (folder / name).write_text(text)
        return command(tmp_path, "vinoground", verb)
    return prepare


VINO_ROW = ["0", "action", "", "a dog runs then sits", "a dog sits then runs", "y0a", "y0b"]
DEEP = "[" * 100_000 + "]" * 100_000


FAULTS = [
    # the benchmark folder (items.jsonl), the format every builder and converter writes
    Fault("items: categories given as one string", folder_bench([item(categories="order")]), 1,
          r"data/items\.jsonl: line 1: field 'categories' must be a non-empty list of non-empty strings, "
          r"found str 'order'$", run_never_started),
    Fault("items: a key given twice in one object", folder_bench([item(), '{"id": "b", "id": "c", "test": "t", '
                                                                          '"video": "v.mp4", "texts": ["x", "y"]}'],
                                                                 "inspect"), 1,
          r"data/items\.jsonl: line 2: not valid JSON \(key 'id' appears twice in one object at column 1\)$",
          run_never_started),
    Fault("items: an empty items.jsonl", folder_bench([]), 1,
          r"data/items\.jsonl: no records \(the file is empty\)$", run_never_started),
    Fault("items: a byte that is not UTF-8", folder_bench([item(), b'{"id": "b", "test": "caf\xe9"}']), 1,
          r"data/items\.jsonl: line 2: byte 0xe9 at column 25 is not UTF-8", run_never_started),
    Fault("items: a line nested 100000 deep", folder_bench([item(), DEEP], "inspect"), 1,
          r"data/items\.jsonl: line 2: not valid JSON \(nested deeper than 32 levels at column 33\)$",
          run_never_started),
    Fault("items: a window ending at 1e308 s", folder_bench([item(video={"path": "videos/a.mp4", "start": 0,
                                                                         "end": 1e308})]), 1,
          r"data/items\.jsonl: line 1: field 'end' must lie in \[0, 1e\+06\], found float 1e\+308$", run_never_started),
    Fault("items: a caption holding a lone surrogate", folder_bench([item(texts=["a man jumps", "a man \ud800 sits"])]),
          1, r"data/items\.jsonl: line 1: field 'texts\[1\]' holds a lone surrogate \('\\ud800' at character 7\)",
          run_never_started),
    Fault("items: target given as a string", folder_bench([item(target="1")]), 1,
          r"data/items\.jsonl: line 1: field 'target' must be an integer from 0 to 9999, found str '1'$",
          run_never_started),
    Fault("items: an id used twice", folder_bench([item(), item(texts=["x", "y"])]), 1,
          r"data/items\.jsonl: line 2: id 'a' is already used \(.*items\.jsonl: line 1\)$", run_never_started),
    Fault("items: an integer of 2000 digits", folder_bench([item(target_position=0).replace(
        '"target_position": 0', '"target_position": ' + "9" * 2000)], "inspect"), 1,
          r"data/items\.jsonl: line 1: not valid JSON \(an integer of 2000 digits at column \d+\)$",
          run_never_started),
    # the published benchmarks' own files
    Fault("vitatecs: a key given twice", vitatecs_bench('{"src_dataset": "MSRVTT", "caption": "a", "caption": "b"}',
                                                        "inspect"), 1,
          r"data/Direction\.jsonl: line 1: not valid JSON \(key 'caption' appears twice", run_never_started),
    Fault("vitatecs: NaN in an unused field", vitatecs_bench(json.dumps({**VITATECS_ROW, "score": float("nan")})), 1,
          r"data/Direction\.jsonl: line 1: field 'score' must be a finite number, found float nan$",
          run_never_started),
    Fault("velociti: in_subset neither true nor false",
          file_bench("velociti", "velociti.jsonl", json.dumps({**VELOCITI_ROW, "in_subset": "maybe"})), 1,
          r"data/velociti\.jsonl: line 1: field 'in_subset' must be true or false, found str 'maybe'$",
          run_never_started),
    Fault("velociti: an empty CSV of the subset", file_bench("velociti", "chrono.csv", "cap1,cap2,ev,gt,video_id\n"),
          1, r"data/chrono\.csv: no records \(the file is empty\)$", run_never_started),
    Fault("vilma: a window ending at 1e308 s", file_bench("vilma", "relations.json", json.dumps(
        {"k1": {**VILMA_RECORD, "end_time": 1e308}})), 1,
          r"data/relations\.json: record 'k1': field 'end_time' must lie in \[0, 1e\+06\]", run_never_started),
    Fault("vilma: a foil class given as an object", file_bench("vilma", "relations.json", json.dumps(
        {"k1": {**VILMA_RECORD, "classes_foil": [{"name": "x"}]}})), 1,
          r"data/relations\.json: record 'k1': field 'classes_foil' must be a class name or number",
          run_never_started),
    Fault("vilma: an empty object", file_bench("vilma", "relations.json", "{}", "inspect"), 1,
          r"data/relations\.json: no records \(the file is empty\)$", run_never_started),
    Fault("temporalbench: idx given as a number with a fraction", file_bench(
        "temporalbench", "temporalbench_short_qa.json", json.dumps([{**TB_QUESTION, "idx": 1.5}])), 1,
          r"data/temporalbench_short_qa\.json: record 1: field 'idx' must be a non-empty string or an integer, "
          r"found float 1\.5$", run_never_started),
    Fault("temporalbench: a question holding a lone surrogate", file_bench(
        "temporalbench", "temporalbench_short_qa.json",
        json.dumps([{**TB_QUESTION, "question": TB_QUESTION["question"].replace("runs", "\ud800")}])), 1,
          r"data/temporalbench_short_qa\.json: record 1: field 'question' holds a lone surrogate",
          run_never_started),
    Fault("vinoground: a CSV byte that is not UTF-8", file_bench(
        "vinoground", "vinoground.csv", b"index,major,minor,pos_cap,neg_cap,pos_vid,neg_vid\n"
                                        b"0,action,,a dog runs,a dog sits\xff,a,b\n"), 1,
          r"data/vinoground\.csv: line 2: byte 0xff at column 32 is not UTF-8", run_never_started),
    Fault("vinoground: a row with a cell too many", vinoground_bench([VINO_ROW, VINO_ROW[:1] + ["1"] + VINO_ROW[1:]]),
          1, r"data/vinoground\.csv: row 3: 8 cells under a header of 7 columns$", run_never_started),
    Fault("vinoground: a published question with GT twice", vinoground_bench(
        [VINO_ROW], {"vinoground_textscore.json": '[{"idx": "0_pos", "question": "Q", "GT": "A", "GT": "B"}]'}), 1,
          r"data/vinoground_textscore\.json: line 1: not valid JSON \(key 'GT' appears twice", run_never_started),
    # VITATECS numbers its rows (its release repeats some): a repeated line is counted, and said
    Fault("vitatecs: a line repeated word for word", vitatecs_bench((json.dumps(VITATECS_ROW) + "\n") * 2, "inspect"),
          0, r"^timefoil: 1 item\(s\) ask word for word what an earlier one asks \(first: direction-00002 repeats "
          r"direction-00001\); each is counted, as the files count it$"),
    Fault("synth: categories given as one string", file_bench("synth", "synth.jsonl", json.dumps(
        {"id": "a", "group_id": "g", "test": "order", "videos": [{"path": "videos/a.mp4"}], "texts": ["x", "y"],
         "target": 0, "categories": "order"})), 1,
          r"data/synth\.jsonl: line 1: field 'categories' must be a non-empty list of non-empty strings",
          run_never_started),
]


@pytest.mark.parametrize("fault", FAULTS, ids=str)
def test_fault(fault, tmp_path):
    run_fault(fault, tmp_path)
