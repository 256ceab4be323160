"""Tables as Hugging Face ``datasets`` publishes and saves them: parquet files, arrow files
(``save_to_disk``), JSON lines, CSV. Parquet and arrow need pyarrow (``timefoil[arrow]``)."""
from __future__ import annotations

import glob
import os

from .base import DataError
from .reading import clean, json_records, nonempty, read_csv, read_json, read_jsonl

TABLE_SUFFIXES = (".parquet", ".arrow", ".jsonl", ".json", ".csv")


def table_files(folder: str, split: str | None = None) -> list[str]:
    """The table files of one split in a folder (or its data/ or <split>/ folder), sorted:
    ``test-00000-of-00001.parquet``, ``data-00000-of-00001.arrow``, ``test.jsonl``, ..."""
    for where in (folder, os.path.join(folder, "data"), *([os.path.join(folder, split)] if split else [])):
        found = sorted(p for p in glob.glob(os.path.join(where, "*")) if p.endswith(TABLE_SUFFIXES)
                       and os.path.basename(p) not in ("dataset_info.json", "state.json", "dataset_dict.json"))
        if split:
            named = [p for p in found if os.path.basename(p).startswith(split)]
            found = named or found
        if found:
            return found
    return []


def read_rows(path: str) -> list[tuple[str, dict]]:
    """``(where, row)`` for each row of one table file; at least one. A JSON file is a list of
    rows, or an object holding them under "test" or "data"."""
    if path.endswith(".jsonl"):
        return read_jsonl(path)
    if path.endswith(".json"):
        data = read_json(path)
        if isinstance(data, dict) and any(isinstance(data.get(key), list) for key in ("test", "data")):
            data = next(data[key] for key in ("test", "data") if isinstance(data.get(key), list))
        return json_records(data, path, "rows")
    if path.endswith(".csv"):
        return read_csv(path)
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise DataError(f"{path}: reading {os.path.splitext(path)[1]} files needs pyarrow: "
                        "pip install 'timefoil[arrow]'") from None
    try:
        if path.endswith(".parquet"):
            rows = pq.read_table(path).to_pylist()
        else:
            with open(path, "rb") as handle:  # datasets writes arrow streams
                rows = pa.ipc.open_stream(handle).read_all().to_pylist()
    except (pa.ArrowInvalid, OSError) as exc:
        raise DataError(f"{path}: not a readable {os.path.splitext(path)[1][1:]} table ({exc})") from None
    return nonempty([(f"{path}: row {n}", clean(row, f"{path}: row {n}")) for n, row in enumerate(rows, 1)], path)
