"""``timefoil prepare``: fetch published annotation files (and, optionally, cut YouTube
clips), then say which referenced videos are still missing."""
from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field

from ..benchmarks import DataError, get_benchmark
from ..core.environment import switch
from ..core.options import typed_options

@dataclass
class PrepareReport:
    benchmark: str
    dest: str
    downloaded: list[str] = field(default_factory=list)
    referenced: int = 0
    missing: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def download_from_hub(repo_id: str, dest: str) -> list[str]:
    """Snapshot of the benchmark's dataset repository; honours HF_TOKEN, HF_HOME and
    HF_HUB_OFFLINE like every Hugging Face tool. A failure is one line naming the dataset."""
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        raise DataError("downloading needs huggingface_hub: pip install 'timefoil[hub]'") from None
    try:
        path = snapshot_download(repo_id=repo_id, repo_type="dataset", local_dir=dest)
    except Exception as exc:  # offline, no access, a gated dataset: said, with what to do
        if switch("HF_HUB_OFFLINE"):
            raise DataError(f"could not download the Hugging Face dataset {repo_id} into {dest}: HF_HUB_OFFLINE is "
                            "set and the local cache does not hold it; with network (and HF_TOKEN for a gated "
                            "dataset), unset HF_HUB_OFFLINE and run the same command again") from None
        first = " ".join(str(exc).split()).split(". ")[0][:200] or type(exc).__name__
        raise DataError(f"could not download the Hugging Face dataset {repo_id} into {dest} ({first}); with "
                        "network and, for a gated dataset, HF_TOKEN, run the same command again") from None
    return sorted(os.path.relpath(os.path.join(r, f), path) for r, _, fs in os.walk(path) for f in fs)


def _video_files(items) -> dict[str, dict]:
    """Every file the items point at, with what is known to fetch it."""
    files: dict[str, dict] = {}
    for item in items:
        for ref in item.videos:
            for part in (ref.parts or (ref,)):
                files.setdefault(part.path, item.metadata.get("youtube"))
    return files


def cut_from_youtube(path: str, source: dict) -> bool:
    """Download with yt-dlp: the [start, end] section when given (ffmpeg cuts it), else the
    whole video, which the loader then windows. False when it fails."""
    if not shutil.which("yt-dlp") or not shutil.which("ffmpeg"):
        raise DataError("cutting YouTube clips needs yt-dlp and ffmpeg on PATH")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    command = ["yt-dlp", "-q", "-f", "mp4/bestvideo+bestaudio", "--merge-output-format", "mp4", "-o", path,
               f"https://www.youtube.com/watch?v={source['id']}"]
    if source.get("start") is not None and source.get("end") is not None:
        command[1:1] = ["--download-sections", f"*{source['start']}-{source['end']}", "--force-keyframes-at-cuts"]
    return subprocess.run(command, capture_output=True, timeout=600).returncode == 0 and os.path.exists(path)


def where_from(benchmark: str) -> str:
    """Where a benchmark's files come from, for the line that says they are missing."""
    bench = get_benchmark(benchmark)
    if bench.hub_dataset:
        return f"they come from the Hugging Face dataset {bench.hub_dataset}: timefoil prepare {benchmark} --dest DIR"
    return f"get them by hand: {bench.obtain}" if bench.obtain else "see docs/benchmarks.md"


def prepare(benchmark: str, dest: str, *, download: bool = True, youtube: bool = False, **options) -> PrepareReport:
    bench = get_benchmark(benchmark)
    report = PrepareReport(benchmark, dest)
    os.makedirs(dest, exist_ok=True)
    if download and bench.hub_dataset:
        report.downloaded = download_from_hub(bench.hub_dataset, dest)
    elif bench.obtain:
        report.notes.append(bench.obtain)
    try:
        items = bench.load(dest, **typed_options(bench.load, options, f"{benchmark} option"))
    except DataError as exc:  # the files are not there (yet): say where they come from
        raise DataError(f"{exc}; {where_from(benchmark)}") from None
    files = _video_files(items)
    report.referenced = len(files)
    for path, source in sorted(files.items()):
        if os.path.exists(path) or (youtube and source and cut_from_youtube(path, source)):
            continue
        report.missing.append(path)
    return report
