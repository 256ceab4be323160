"""VideoComp-style (video, positive, negative) rows -> a timefoil benchmark folder.

Each row is one item whose options are the positive caption and its negative(s); the field
names are arguments because releases name them differently.

    python examples/convert_videocomp.py rows.jsonl --out videocomp-folder
"""
import json
import sys

from _folder import write_folder


def convert(rows: list[dict], video: str = "video", positive: str = "positive", negative: str = "negative",
            test: str = "test") -> list[dict]:
    records = []
    for k, row in enumerate(rows):
        negatives = row[negative] if isinstance(row[negative], list) else [row[negative]]
        records.append({"id": str(row.get("id", k)), "test": str(row.get(test, "videocomp")), "video": row[video],
                        "texts": [row[positive], *negatives], "target": 0})
    return records


if __name__ == "__main__":
    rows = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8") if line.strip()]
    print(write_folder(sys.argv[sys.argv.index("--out") + 1], "videocomp", convert(rows), "VideoComp pairs"))
