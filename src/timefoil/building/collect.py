"""`timefoil build collect`: annotators' answer files -> agreement, accepted items, and a human
baseline run that `score` and `report` read like any model's.

Acceptance rules: ``K/N`` (at least K of every N annotators chose the target; "2/3" is ViLMA's),
``unanimous``, ``majority``. The human run aggregates per item by ``mode`` (the most chosen
option; Vinoground's rule over its 10 answers; a tie is recorded as a tie and scored wrong) or
``each`` (one run per annotator; their mean accuracy is printed, as VITATECS reports).
"""
from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import replace
from fractions import Fraction
from typing import Any, Sequence

from ..benchmarks import folder
from ..core.output import write_whole
from ..core.paths import refuse_output_inside
from ..core.items import Item, VideoRef
from ..models import Model
from ..models.requests import Answer, Request
from ..execution.config import RunConfig
from ..execution.runner import Runner
from .agreement import summary
from .answers import AnswerFile, read_answers

NONE = "none"  # the "none of them" answer


def acceptance(rule: str) -> Fraction:
    """The share of annotators that must choose the target."""
    if rule == "unanimous":
        return Fraction(1)
    if rule == "majority":
        return Fraction(1, 2) + Fraction(1, 10**9)
    try:
        k, n = (int(x) for x in rule.split("/"))
        if 0 < k <= n:
            return Fraction(k, n)
    except ValueError:
        pass
    raise ValueError(f"acceptance rule must be K/N (e.g. 2/3), unanimous or majority, not {rule!r}")


def votes_by_item(files: Sequence[AnswerFile], items: Sequence[Item]) -> dict[str, list[tuple[str, Any]]]:
    """item id -> [(annotator, vote)], each vote checked against its item (``answers.AnswerFile.vote``):
    an option index or None ("none of them"), or for validation the aspect named or "invalid"."""
    task = files[0].task
    by_id = {item.id: item for item in items}
    out: dict[str, list[tuple[str, Any]]] = {}
    for data in files:
        if data.task != task:
            raise ValueError(f"{data.path}: a {data.task} file among {task} files")
        strangers = sorted(set(data.answers) - set(by_id))
        if strangers:
            raise ValueError(f"{data.path}: answers for {len(strangers)} items this benchmark does not hold "
                             f"(e.g. {json.dumps(strangers[0], ensure_ascii=False)})")
        for item_id in data.answers:
            answered, vote = data.vote(item_id, by_id[item_id])
            if answered:
                out.setdefault(item_id, []).append((data.annotator, vote))
    return out


class HumanAnswers(Model):
    """Answers choice requests with the annotators' choices: the mode over annotators, or one
    annotator's own. Never loaded from a spec; used only to write a run."""

    name = "human"
    batch_size = 256

    def __init__(self, items: Sequence[Item], votes: dict[str, list[tuple[str, Any]]], label: str,
                 annotator: str | None = None):
        self.label, self.annotator = label, annotator
        self.by_question = {(item.videos[0].path, frozenset(item.texts)): item for item in items}
        self.votes = votes

    def fingerprint(self) -> dict:
        return {"name": "human", "label": self.label, "annotator": self.annotator,
                "votes": {k: sorted(map(list, v), key=str) for k, v in sorted(self.votes.items())}}

    def answer_choice(self, requests: Sequence[Request], frames) -> list[Answer]:
        return [self._one(r) for r in requests]

    def _one(self, request: Request) -> Answer:
        item = self.by_question.get((request.video.path if request.video else None, frozenset(request.option_texts)))
        votes = [v for who, v in self.votes.get(item.id, []) if self.annotator in (None, who)] if item else []
        if not votes:
            return Answer(error="not annotated")
        counts = Counter(votes).most_common()
        top = [v for v, n in counts if n == counts[0][1]]
        letter = {text: label for text, label in zip(request.option_texts, request.labels)}
        names = [NONE if v is None else letter[item.texts[v]] for v in top]
        meta = {"votes": {(NONE if v is None else letter[item.texts[v]]): n for v, n in counts}}
        if len(names) > 1:
            return Answer(raw="tie: " + " / ".join(names), meta=meta)
        return Answer(raw=names[0] if names[0] != NONE else "none of them", meta=meta)


def collect(bench_dir: str, answer_files: Sequence[str], *, rule: str = "2/3", aggregate: str = "mode",
            out: str | None = None, accepted_dir: str | None = None, build_dir: str | None = None,
            cache_dir: str | None = None, seed: int = 0) -> dict[str, Any]:
    for output in (out, accepted_dir, build_dir):
        refuse_output_inside(output, [bench_dir, *answer_files])
    files = [read_answers(path) for path in answer_files]
    task = files[0].task
    names = [f.annotator for f in files]
    if len(set(names)) != len(names):
        raise ValueError(f"the same annotator twice among {', '.join(names)}")
    items = [i for i in folder.load(bench_dir) if i.options_are == "texts" and i.role == "main"]
    votes = votes_by_item(files, items)
    ratings = [[NONE if v is None else v for _, v in votes.get(i.id, [])] for i in items]
    needed = acceptance(rule)
    accepted = []
    for item in items:
        given = [v for _, v in votes.get(item.id, [])]
        wanted = item.target if task == "choice" else item.test
        if given and Fraction(sum(v == wanted for v in given), len(given)) >= needed:
            accepted.append(item)
    result: dict[str, Any] = {"task": task, "annotators": len(files), "names": names, "items": len(items),
                              "answered": sum(1 for r in ratings if r), "rule": rule, "accepted": len(accepted),
                              **summary(ratings, seed=seed), "aggregate": aggregate if task == "choice" else None}
    if accepted_dir:
        _write_accepted(bench_dir, accepted_dir, accepted)
        result["accepted_dir"] = accepted_dir
    if out and task == "choice":
        result.update(_human_runs(bench_dir, items, votes, names, aggregate, out, cache_dir))
    if build_dir:
        from .datasheet import write_datasheet

        write_whole(os.path.join(build_dir, "agreement.json"), json.dumps(result, indent=2))
        write_datasheet(build_dir)
    return result


def _human_runs(bench_dir, items, votes, names, aggregate, out, cache_dir) -> dict[str, Any]:
    def write(run_dir: str, label: str, annotator: str | None):
        config = RunConfig("items", f"human:{label}", data_dir=bench_dir, protocol="choice")
        model = HumanAnswers(items, votes, label, annotator)
        return Runner(config, run_dir, model=model, cache_dir=cache_dir, progress=False, threads=1).run()

    if aggregate == "mode":
        report = write(out, f"mode of {len(names)}", None)
        return {"runs": [out], "human_accuracy": _accuracy(report)}
    if aggregate == "each":
        runs, accuracies = [], []
        for name in names:
            run_dir = os.path.join(out, name)
            accuracies.append(_accuracy(write(run_dir, name, name)))
            runs.append(run_dir)
        known = [a for a in accuracies if a is not None]
        return {"runs": runs, "per_annotator": dict(zip(names, accuracies)),
                "human_accuracy": sum(known) / len(known) if known else None}
    raise ValueError(f"aggregate must be mode or each, not {aggregate!r}")


def _accuracy(report) -> float | None:
    """Overall accuracy as a share (reports give percentages)."""
    for metric in report.metrics:
        if metric.name == "overall/accuracy" and metric.value is not None:
            return metric.value / 100
    return None


def _write_accepted(bench_dir: str, accepted_dir: str, accepted: list[Item]) -> None:
    """The accepted items as a benchmark folder beside the original (videos linked, not copied)."""
    meta = {**folder.read_meta(bench_dir), "accepted_from": os.path.abspath(bench_dir)}
    os.makedirs(accepted_dir, exist_ok=True)
    link = os.path.join(accepted_dir, "videos")
    if not os.path.exists(link):
        os.symlink(os.path.abspath(os.path.join(bench_dir, "videos")), link)
    moved = [_moved(item, bench_dir, accepted_dir) for item in accepted]
    folder.write(accepted_dir, moved, meta)


def _moved(item: Item, old: str, new: str) -> Item:
    videos = tuple(VideoRef.file(os.path.join(new, os.path.relpath(v.path, old)), v.start, v.end)
                   for v in item.videos)
    return replace(item, videos=videos)
