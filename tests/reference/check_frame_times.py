"""Live check of the times every architecture is told: real video files at non-integer rates,
decoded by timefoil through windows that do not start on a frame, and for each architecture
whose processor is told when its frames were taken (``hf_open.TIMES``, and the built families
that write timestamps) timefoil's inputs compared with the model card's path given the real
decoded metadata. Run in the throwaway environment with torchvision, never in CI:

    PYTHONPATH=src /tmp/ref/bin/python tests/reference/check_frame_times.py [model_type ...]

The model card's metadata is what transformers' own decoder (``load_video``, PyAV) reads from
the file, with the frames timefoil sampled (their indices in the file): the file's rate, frame
count and duration for ``time_origin=file``; for the window (the default origin) the same as
for a clip cut from the window's first frame: indices from that frame, its frame count and
length. For each window, sampling and origin it prints each architecture's result and, where
the processor writes them, the times it was told next to the frames' real times (index / rate
of the file, less the window's first frame's time for the window). Nemotron-H Omni's processor
reads whole milliseconds per frame (33 at 29.97 fps), so the model card's path with the file's
rate tells it times that drift from the real ones; timefoil's are compared with the model card
given the times in milliseconds (each time to the millisecond), and the line says whether they
also equal the model card's at the file's rate (they do where 1000 / rate is whole: 80 ms at
12.5 fps). SmolVLM2 (built, compared through ``preprocess=official``) states the clip's length
from the duration in its model card's metadata, as every other architecture is given it.
"""
from __future__ import annotations

import json
import math
import os
import re
import sys
import tempfile
from fractions import Fraction

import numpy as np
import torch

from timefoil.core.items import VideoRef
from timefoil.models import load_model
from timefoil.models.local.hf_open import TIMES, model_inputs
from timefoil.models.requests import Request
from timefoil.testing import pattern_frames, tiny_vlm
from timefoil.video.frames import FrameStore
from timefoil.video.sampling import Sampling

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from open_families import recipes  # noqa: E402

# (rate, frames, window start, window end): 29.97 fps from 2.98 s (frame 90, at 3.003 s); 12.5 fps
# from 1.03 s (frame 13, at 1.04 s)
VIDEOS = {"ntsc": (Fraction(30000, 1001), 300, 2.98, 8.3), "pal-half": (Fraction(25, 2), 120, 1.03, 7.9)}
SAMPLINGS = {"8 frames": Sampling(frames=8), "1.3 fps": Sampling(frames=None, fps=1.3, max_frames=8)}
WORDS = ["Describe what happens", "Frame frame sampled at seconds and Time Duration"]
FAMILIES = ("qwen3_vl", "smolvlm", "gemma4")  # built families that write timestamps, run through preprocess=official


def write(path: str, rate: Fraction, count: int) -> None:
    import av

    frames = pattern_frames(count, 60, 80)
    with av.open(path, "w") as container:
        stream = container.add_stream("libx264rgb", rate=rate)
        stream.pix_fmt, stream.options = "rgb24", {"qp": "0", "preset": "ultrafast"}
        stream.width, stream.height = 80, 60
        for array in frames:
            for packet in stream.encode(av.VideoFrame.from_ndarray(np.ascontiguousarray(array), format="rgb24")):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)


def card_metadata(path: str, frames, origin: str) -> tuple[dict, np.ndarray]:
    """The metadata and frames transformers' decoder gives for the frames timefoil sampled (their
    indices in the file); for the window, as for a clip cut from the window's first frame."""
    from transformers.video_utils import load_video

    indices = [index for _, index in frames.entries]
    video, metadata = load_video(path, backend="pyav", sample_indices_fn=lambda metadata, **kwargs: indices)
    meta = {"fps": metadata.fps, "total_num_frames": metadata.total_num_frames, "duration": metadata.duration,
            "frames_indices": list(indices)}
    if origin == "window":
        first, stop = frames.windows[0][1:3]
        meta.update(frames_indices=[i - first for i in indices], total_num_frames=stop - first,
                    duration=(stop - first) / metadata.fps)
    return meta, np.asarray(video)


def card_inputs(processor, text: str, array, metadata: dict, extra: dict) -> dict:
    messages = [[{"role": "user", "content": [{"type": "video", "video": array}, {"type": "text", "text": text}]}]]
    kwargs = {"padding": True, "do_sample_frames": False, "video_metadata": [metadata], **extra}
    return dict(processor.apply_chat_template(messages, tokenize=True, return_dict=True, return_tensors="pt",
                                              add_generation_prompt=True, processor_kwargs=kwargs))


def same(ours: dict, card: dict, model) -> list[str]:
    keys = set(model_inputs(model, ours)) | set(model_inputs(model, card))
    return sorted(k for k in keys if not (k in ours and k in card and torch.equal(torch.as_tensor(ours[k]),
                                                                                  torch.as_tensor(card[k]))))


def numbers(text: str) -> list[str]:
    """The times written in a prompt (a tiny word tokenizer decodes "1.25" as "1 . 25")."""
    return re.findall(r"\d+(?:[.:]\d+)+", re.sub(r"\s*([.:])\s*", r"\1", text))


def check(name: str, folder: str, told: str | None, videos: dict) -> dict:
    official = {"preprocess": "official"} if name in FAMILIES else {}
    model = load_model(f"hf:{folder}", official)
    origins = ["window", "file"] if model.inputs.time_origin else ["window"]
    outcome = {"told": told, "cases": 0, "equal": 0, "differences": []}
    for origin in origins:
        if origin == "file":
            model = load_model(f"hf:{folder}", {**official, "time_origin": "file"})
        encoder, processor = model.inputs, model.inputs.processor
        for video, path in videos.items():
            start, end = VIDEOS[video][2:]
            ref = VideoRef.file(path, start=start, end=end)
            for label, sampling in SAMPLINGS.items():
                frames = encoder.timeline(FrameStore(max_pixels=10**6).get(ref, sampling), ref.start)
                prompt, _ = model._prompt(Request("generation", ref, "Describe what happens"), frames)
                ours = encoder.encode([prompt], [frames])
                metadata, decoded = card_metadata(path, frames, origin)
                extra = {"fps": frames.sampled_fps} if told == "fps" else {}
                at_file_rate = ""
                if told == "milliseconds":  # the model card given the times in milliseconds (see above)
                    at_rate = card_inputs(processor, "Describe what happens", frames.array, metadata, extra)
                    at_file_rate = f" equal_to_the_card_at_the_files_rate={not same(ours, at_rate, model.model)}"
                    metadata = {**metadata, "fps": 1000.0, "frames_indices": [
                        round(i / metadata["fps"] * 1000) for i in metadata["frames_indices"]]}
                card = card_inputs(processor, "Describe what happens", frames.array, metadata, extra)
                differing = same(ours, card, model.model)
                real = [i / frames.windows[0][0] - (frames.windows[0][1] / frames.windows[0][0] if origin == "window"
                                                     else 0) for _, i in frames.entries]
                text = model.tokenizer.decode(ours["input_ids"][0])
                outcome["cases"] += 1
                outcome["equal"] += not differing
                pixels = bool(np.array_equal(decoded, frames.array))
                line = (f"{name:22s} {origin:6s} {video:8s} {label:8s} equal={not differing}{at_file_rate} "
                        f"frames_equal_to_transformers_decode={pixels} real={[f'{t:.3f}' for t in real]} "
                        f"told={numbers(text)[:12]}")
                print(line, flush=True)
                if differing:
                    outcome["differences"].append(f"{origin} {video} {label}: {differing}")
                assert all(math.isfinite(t) for t in real)
    return outcome


def folders(names: list[str], root: str) -> dict:
    found = recipes()
    made = {}
    for name in names:
        folder = os.path.join(root, name)
        if name in FAMILIES:
            tiny_vlm(folder, name, WORDS)
        else:
            found[name].make(folder, WORDS)
        made[name] = folder
    return made


def main(names: list[str]) -> int:
    torch.set_num_threads(1)
    root = tempfile.mkdtemp()
    videos = {}
    for video, (rate, count, _, _) in VIDEOS.items():
        videos[video] = os.path.join(root, f"{video}.mp4")
        write(videos[video], rate, count)
    found = recipes()
    names = names or [*FAMILIES, *sorted(t for t in TIMES if t in found)]
    results, failed = {}, 0
    for name, folder in folders(names, root).items():
        told = TIMES.get(name, "indices")
        try:
            results[name] = check(name, folder, told, videos)
        except Exception as exc:  # noqa: BLE001 - reported per architecture
            results[name] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
        failed += "error" in results[name] or results[name]["equal"] != results[name]["cases"]
        print(f"{name:22s} {json.dumps(results[name])}", flush=True)
    print(f"{len(results) - failed} architectures equal the model card's path in every case, {failed} not")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
