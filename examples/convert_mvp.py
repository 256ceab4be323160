"""MVP (Minimal Video Pairs) -> a timefoil benchmark folder.

Each MVP row asks one question about one video with candidate answers; two rows with the same
question on two near-identical videos have opposite answers. Each pair becomes one group, so
timefoil's group score is MVP's paired accuracy (both questions right). The question is asked
as written, with its candidates listed in their given order.

    python examples/convert_mvp.py rows.jsonl --out mvp-folder   # rows: one JSON object per line
"""
import ast
import json
import sys
from collections import defaultdict

from _folder import write_folder

LETTERS = "ABCDEFGH"


def candidates_of(value) -> list[str]:
    """The candidate answers: a list, or a string holding a JSON or Python list."""
    if isinstance(value, list):
        return [str(v) for v in value]
    try:
        parsed = json.loads(value)
    except (TypeError, ValueError):
        parsed = ast.literal_eval(value)
    return [str(v) for v in parsed]


def convert(rows: list[dict]) -> list[dict]:
    by_question: dict[tuple, list[dict]] = defaultdict(list)
    for row in rows:
        by_question[(row.get("source", ""), row["question"])].append(row)
    records = []
    for k, ((source, question), pair) in enumerate(by_question.items()):
        for row in pair:
            options = candidates_of(row["candidates"])
            target = options.index(row["answer"])
            listed = "\n".join(f"{LETTERS[i]}. {o}" for i, o in enumerate(options))
            records.append({"id": str(row["video_id"]), "group": f"pair{k}", "test": source or "mvp",
                            "video": row["video_path"], "texts": options, "target": target,
                            "prompt": f"{question}\nOptions:\n{listed}\nAnswer with the option's letter.",
                            "target_position": target})
    return records


if __name__ == "__main__":
    rows = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8") if line.strip()]
    print(write_folder(sys.argv[sys.argv.index("--out") + 1], "mvp", convert(rows), "MVP minimal video pairs"))
