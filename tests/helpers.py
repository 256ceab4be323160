"""Shared test helpers: the command line in a subprocess, items built in code, synthetic suites."""
from __future__ import annotations

import functools
import os
import subprocess
import sys
import tempfile

from timefoil.core.items import Item, VideoRef
from timefoil import score_run
from timefoil.execution.store import RunLog
from timefoil.execution.offline import answer_offline  # noqa: F401  (re-exported for the tests)
from timefoil.models import Model
from timefoil.models.requests import Answer


def video(name: str) -> VideoRef:
    return VideoRef.file(f"/nonexistent/{name}.mp4")


def pair_item(item_id, group, texts, *, test="t", subtest=None, role="main", target=0, vid=None) -> Item:
    return Item(id=item_id, group_id=group, benchmark="test", test=test, subtest=subtest, role=role,
                videos=(video(vid or group),), texts=tuple(texts), target=target)


def vinoground_group(g: int) -> list[Item]:
    """The four questions of one 2x2 pair: two text questions, two video questions."""
    v1, v2 = video(f"{g}_pos"), video(f"{g}_neg")
    c1, c2 = f"caption one of {g}", f"caption two of {g}"
    common = dict(group_id=f"g{g}", benchmark="test", test="vino")
    return [
        Item(id=f"{g}-t1", videos=(v1,), texts=(c1, c2), target=0, role="text", **common),
        Item(id=f"{g}-t2", videos=(v2,), texts=(c1, c2), target=1, role="text", **common),
        Item(id=f"{g}-v1", videos=(v1, v2), texts=(c1,), target=0, role="video", options_are="videos", **common),
        Item(id=f"{g}-v2", videos=(v1, v2), texts=(c2,), target=1, role="video", options_are="videos", **common),
    ]


def generated_suite(tmp_path_factory, seed: int, per_family: int = 2) -> str:
    """A synthetic suite rendered into a fresh folder (module-scoped fixtures share one)."""
    from timefoil.synth import generate

    root = str(tmp_path_factory.mktemp("suite"))
    generate(root, per_family=per_family, seed=seed)
    return root


def run_records(run_dir) -> list[dict]:
    return RunLog(str(run_dir)).read()


def run_protocol(model: str, suite: str, tmp_path, protocol: str, order: str | None, frames: int = 4):
    """``model`` on the synthetic ``suite`` under ``protocol`` in this process: (records, run.json),
    every record answered without error."""
    import json

    from timefoil import RunConfig, run
    from timefoil.video.sampling import Sampling

    config = RunConfig("synth", model, data_dir=suite, protocol=protocol, order_policy=order,
                       sampling=Sampling(frames=frames))
    report = run(config, str(tmp_path / "run"), cache_dir=str(tmp_path / "cache"), progress=False)
    records = run_records(tmp_path / "run")
    assert records and report.errors == 0, [r["answer"]["error"] for r in records if r["answer"]["error"]][:2]
    return records, json.load(open(tmp_path / "run" / "run.json"))


def resumes_as_uninterrupted(spec: str, suite: str, tmp_path, monkeypatch, model_class=None,
                              asked: list | None = None) -> None:
    """``spec`` run on the synthetic ``suite`` (choice, both orders), then rerun finished: nothing
    asked; then cut after half its records (what a kill leaves: a prefix of lines, the last one
    partial) and rerun: only the rest asked. Both end with the uninterrupted run's records and
    numbers. Each rerun has a cache of its own, so only the run directory can spare it a
    question; ``model_class.answer`` counts what is asked, or the caller's own hook fills
    ``asked`` (one entry a request: what reaches a server's wire, say)."""
    from timefoil import RunConfig, run
    from timefoil.video.sampling import Sampling

    records, _ = run_protocol(spec, suite, tmp_path, "choice", "both")
    run_dir, full = tmp_path / "run", score_run(str(tmp_path / "run")).to_json()
    if asked is None:
        asked = []
        answer = model_class.answer
        monkeypatch.setattr(model_class, "answer", lambda self, requests, frames: asked.extend(requests) or
                            answer(self, requests, frames))
    asked.clear()  # what the uninterrupted run asked
    config = RunConfig("synth", spec, data_dir=suite, protocol="choice", order_policy="both",
                       sampling=Sampling(frames=4))
    assert run(config, str(run_dir), cache_dir=str(tmp_path / "c1"), progress=False).to_json() == full
    assert asked == []
    lines = (run_dir / "items.jsonl").read_text().splitlines(keepends=True)
    kept = len(lines) // 2
    (run_dir / "items.jsonl").write_text("".join(lines[:kept]) + lines[kept][:len(lines[kept]) // 2])
    assert run(config, str(run_dir), cache_dir=str(tmp_path / "c2"), progress=False).to_json() == full
    assert len(asked) == len(lines) - kept  # one request per record here: every choice is asked once
    assert sorted(r["id"] for r in run_records(run_dir)) == sorted(r["id"] for r in records)


def generated_alone(model, request, clip) -> str:
    """The path a model card shows: generate() on the one prompt, greedy, to its budget; a choice
    read to the end of its first answer line, as timefoil stops it."""
    batch = model._encode([model._prompt(request, clip)[0]], [clip])
    output = model.model.generate(**batch, max_new_tokens=request.max_tokens, do_sample=False,
                                  pad_token_id=model.tokenizer.pad_token_id)
    text = model.tokenizer.decode(output[0, batch["input_ids"].shape[1]:], skip_special_tokens=True).lstrip()
    if request.kind == "choice" and "\n" in text:
        text = text[:text.index("\n")]
    return text.strip()


def run_ids(run_dir) -> list[str]:
    """A run's recorded request ids, sorted (repeats kept, so a duplicate shows)."""
    return sorted(r["id"] for r in run_records(run_dir))


def run_scores(run_dir) -> str:
    """``score --json`` of a run, as comparable text."""
    import json

    return json.dumps(score_run(str(run_dir)).to_json(), sort_keys=True)


TESTS = os.path.dirname(os.path.abspath(__file__))  # the tests folder: data/, helper modules
REPO = os.path.dirname(TESTS)
CLI_TIMEOUT_S = 300.0


def cli(*args: str, timeout: float = CLI_TIMEOUT_S, env: dict[str, str] | None = None,
        **kwargs) -> subprocess.CompletedProcess:
    """``timefoil ARGS`` in a fresh interpreter with one torch thread, bounded in time. Ctrl-C is
    the default action there even where the suite was started with it ignored (nohup, a shell's
    background job), since a program keeps an ignored SIGINT ignored and some rows send one."""
    environment = {**os.environ, "TIMEFOIL_THREADS": "1", "OMP_NUM_THREADS": "1", **(env or {})}
    return subprocess.run([sys.executable, "-m", "timefoil.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env=environment, preexec_fn=default_ctrl_c, **kwargs)


def default_ctrl_c() -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


@functools.cache
def suite_on_disk(per_family: int = 3, seed: int = 0) -> str:
    """A synthetic suite written once per test process by the command line itself, for rows that
    build their own command lines (3 per family: 34 videos whose order pairs show two videos)."""
    root = os.path.join(tempfile.mkdtemp(prefix="timefoil-suite-"), "suite")
    result = cli("generate", "synth", "--out", root, "--per-family", str(per_family), "--seed", str(seed))
    assert result.returncode == 0, result.stderr
    return root


def write_stamped_video(path: str, stamps_ms, step: int, codec: str = "libx264rgb",
                        options: dict | None = None) -> None:
    """A 32x16 clip whose frame k is flat grey ``step * k``, shown at ``stamps_ms[k]``
    milliseconds: a variable frame rate, where a viewer sees each frame until the next one."""
    import fractions

    import av
    import numpy as np

    with av.open(path, "w") as container:
        stream = container.add_stream(codec, rate=30)
        stream.width, stream.height = 32, 16
        stream.pix_fmt = "rgb24" if codec == "libx264rgb" else "yuv420p"
        stream.options = {"qp": "0", **(options or {})}
        stream.codec_context.time_base = fractions.Fraction(1, 1000)
        for k, stamp in enumerate(stamps_ms):
            frame = av.VideoFrame.from_ndarray(np.full((16, 32, 3), step * k, np.uint8), format="rgb24")
            frame.pts, frame.time_base = stamp, fractions.Fraction(1, 1000)
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)


def install_package(site, package: str, source: str | None, entries: str, group: str = "timefoil.models"):
    """What pip leaves in a site folder for a one-module distribution: ``package/__init__.py``
    holding ``source`` (none: the distribution names a module that is not there) and its
    dist-info, whose entry points are ``entries`` under ``group``. Returns the site folder."""
    from pathlib import Path

    site = Path(site)
    if source is not None:
        (site / package).mkdir(parents=True, exist_ok=True)
        (site / package / "__init__.py").write_text(source)
    info = site / f"{package}-1.0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package.replace('_', '-')}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[{group}]\n{entries}\n")
    return site


class Scripted(Model):
    """Choice: the answer for each item's true caption, "{L}" standing for the true letter shown
    ("{l}" for it in lower case);
    entailment: the reply for each caption; similarity: the score of each caption."""

    name = "scripted"

    def __init__(self, replies):
        self.replies = replies

    def answer_choice(self, requests, frames):
        out = []
        for r in requests:
            true = next(j for j, t in enumerate(r.option_texts) if t.startswith("true"))
            reply = self.replies[r.option_texts[true]]
            out.append(Answer(raw=reply.replace("{L}", "AB"[true]).replace("{l}", "ab"[true])))
        return out

    def answer_entailment(self, requests, frames):
        return [Answer(raw=self.replies[r.caption]) for r in requests]

    def answer_similarity(self, requests, frames):
        return [Answer(score=self.replies[r.text]) for r in requests]


def velociti_folder(root, videos: int, rows: int, words: list[str], *, seed: int, longest: int = 9,
                    sizes=((48, 64),), shift: int = 7) -> str:
    """VELOCITI's layout in ``root`` (velociti.jsonl, every row in the paper subset, and
    videos/<id>.mp4): ``rows`` rows (a caption and its foil, of 3 to ``longest`` of ``words``) a
    video, so 2 x ``rows`` captions a video; video v of ``sizes[v]`` (cycled), its pattern rolled
    by ``shift`` x v pixels so that no two videos are alike."""
    import json
    import random

    import numpy as np

    from timefoil.benchmarks.velociti import TESTS
    from timefoil.testing import pattern_frames
    from timefoil.video.decode import write_video

    (root / "videos").mkdir(parents=True)
    rng = random.Random(seed)
    with open(root / "velociti.jsonl", "w") as handle:
        for n in range(videos * rows):
            pos, neg = (" ".join(rng.choice(words) for _ in range(rng.randint(3, longest))) for _ in range(2))
            handle.write(json.dumps({"test_name": TESTS[n % len(TESTS)], "video_id": f"v_clip{n % videos}_seg_0_4",
                                     "pos": pos, "neg": neg, "in_subset": True}) + "\n")
    for v in range(videos):
        height, width = sizes[v % len(sizes)]
        frames = np.roll(pattern_frames(8, height, width), shift * v, axis=2)
        write_video(str(root / "videos" / f"v_clip{v}_seg_0_4.mp4"), frames, 2)
    return str(root)
