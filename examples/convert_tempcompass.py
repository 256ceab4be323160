"""TempCompass caption matching -> a timefoil benchmark folder.

The caption-matching file maps each video id to questions that list captions ("Caption A: ...")
and an answer naming one of them. Each question becomes an item whose options are its captions;
the question is asked as written (its own letters).

    python examples/convert_tempcompass.py caption_matching.json --dimension speed --out tc-folder
"""
import json
import re
import sys

from _folder import write_folder

CAPTION = re.compile(r"^Caption ([A-Z]): (.+)$", re.MULTILINE)


def convert(data: dict, dimension: str, video_dir: str = "videos", extension: str = ".mp4") -> list[dict]:
    records = []
    for video_id, questions in data.items():
        for k, entry in enumerate(questions):
            found = CAPTION.findall(entry["question"])
            labels = [letter for letter, _ in found]
            answer = re.match(r"\s*Caption ([A-Z])", entry["answer"])
            if len(found) < 2 or not answer or answer.group(1) not in labels:
                raise ValueError(f"{video_id} question {k}: captions or answer not readable")
            target = labels.index(answer.group(1))
            records.append({"id": f"{video_id}_{k}", "test": dimension, "video": f"{video_dir}/{video_id}{extension}",
                            "texts": [text.strip() for _, text in found], "target": target, "labels": labels,
                            "prompt": entry["question"], "target_position": target})
    return records


if __name__ == "__main__":
    args = sys.argv
    data = json.load(open(args[1], encoding="utf-8"))
    dimension = args[args.index("--dimension") + 1] if "--dimension" in args else "caption_matching"
    print(write_folder(args[args.index("--out") + 1], "tempcompass", convert(data, dimension),
                       "TempCompass caption matching"))
