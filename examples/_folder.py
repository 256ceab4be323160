"""What the converters share: writing a benchmark folder from plain item records."""
import json
import os


def write_folder(out: str, name: str, records: list[dict], description: str) -> str:
    """``records`` are lines of items.jsonl (README: Benchmark folders); video paths are
    relative to ``out`` (link or copy the videos there)."""
    os.makedirs(out, exist_ok=True)
    tests = list(dict.fromkeys(r["test"] for r in records))
    with open(os.path.join(out, "benchmark.json"), "w", encoding="utf-8") as handle:
        json.dump({"name": name, "description": description, "tests": tests}, handle, indent=2)
    with open(os.path.join(out, "items.jsonl"), "w", encoding="utf-8") as handle:
        handle.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    return out
