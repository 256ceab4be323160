"""From requests to transformers model inputs: chat prompts, tokens, pixels and positions.

Video LLMs of the families in ``models/families`` get their inputs from timefoil's own builder
(``video_inputs``) by default, on every machine, so CPU and GPU runs see identical inputs.
``preprocess=official`` uses the model's ``AutoProcessor`` instead (its video processor needs
torchvision). Where torchvision imports, the first video batch is also built by the official
processor and compared, so a transformers release that changes its preprocessing cannot go
unnoticed. Any other vision architecture (the "open path") is always shown through its own
processor: its frames as a video where the processor takes video, else as images, and its
positions computed by the model itself (``positions`` returns None).
"""
from __future__ import annotations

import dataclasses
import threading
import warnings
from typing import Any, Sequence

import numpy as np

from ...video.frames import Frames
from ..torchvision_match import advice
from ..families import FAMILIES, INPUT_KINDS, TIME_ORIGINS, build_vision, family_spec, taking
from ..pixel_cache import PixelCache
from ..video_inputs import (Timing, UnsupportedFamily, _torch, adds_special_tokens, build_batch, chat_template,
                            pixels_on, video_pixels)
from .hf_open import STATES_WHEN, TIMES, refuse_frameless

PREPROCESS = ("auto", "timefoil", "official")  # auto: timefoil's for a family in the table, else official
VIDEO_AS = ("auto", *INPUT_KINDS)  # auto: the family's first (video where it takes video)
# Qwen2.5-VL's seconds per temporal patch, named in the fingerprint: the span of the frames it is
# shown, which for timefoil's frames (1 / rate apart) is the sampling's own rate (docs/models.md, "Times")
SPAN_RULE = "temporal_patch_size / sampling rate"


def torchvision_imports() -> bool:
    try:
        import torchvision  # noqa: F401
    except Exception:  # absent, or a wheel that does not match torch ("operator torchvision::nms ...")
        return False
    return True


def official_processor(path: str, revision: str | None = None, trust_remote_code: bool = False,
                       open_path: str | None = None):
    """The folder's own processor, pads on the left. ``open_path``: the architecture, where it is
    shown through its own processor because timefoil builds no inputs for it (so there is no
    preprocess option to drop when a piece it needs is missing)."""
    from transformers import AutoProcessor

    kwargs = {**({"revision": revision} if revision else {}),
              **({"trust_remote_code": True} if trust_remote_code else {})}
    try:
        processor = AutoProcessor.from_pretrained(path, **kwargs)
    except ImportError as exc:
        # transformers' message runs over several lines: keep its first sentence
        reason = " ".join(str(exc).split()).split(". ")[0] or type(exc).__name__
        if open_path is None:
            raise ImportError(f"the official processor of {path} cannot be built here ({reason}); drop "
                              "preprocess=official to use timefoil's own preprocessing, which needs no torchvision"
                              ) from None
        missing = "torchvision" if "torchvision" in reason.lower() else "the package it names"
        raise ImportError(f"{open_path} is shown through its own processor (timefoil builds no inputs for it), which "
                          f"cannot be built here ({reason}); install {missing}"
                          + (f" to run it: {advice()}" if missing == "torchvision" else " to run it")
                          ) from None
    # a batch's answers are read at its last position: pads must come first (most processors'
    # tokenizers pad on the right by default, so a shorter prompt's answer was read at a pad)
    getattr(processor, "tokenizer", processor).padding_side = "left"
    return processor


class InputEncoder:
    """Prompts and batches for one model: text-only (tokenizer) or a video LLM."""

    def __init__(self, path: str, model_type: str, tokenizer, *, vision: bool, revision: str | None = None,
                 preprocess: str = "auto", video_as: str = "auto", processor=None, trust_remote_code: bool = False,
                 time_origin: str | None = None):
        if preprocess not in PREPROCESS:
            raise ValueError(f"preprocess must be one of {', '.join(PREPROCESS)}, got {preprocess!r}")
        if video_as not in VIDEO_AS:
            raise ValueError(f"video_as must be one of {', '.join(VIDEO_AS)}, got {video_as!r}")
        self.path, self.revision, self.model_type = path, revision, model_type
        self.trust_remote_code = trust_remote_code  # the user's word that the folder's processor code may run
        self.tokenizer, self.vision = tokenizer, vision
        # None: a family timefoil does not know (text-only, or shown through its official processor)
        self.family = FAMILIES.get(model_type)
        # a vision architecture outside the table: shown through its own processor, whatever was asked
        self.open = vision and self.family is None
        if self.open and preprocess == "timefoil":
            family_spec(model_type)  # refused in one line naming the families timefoil builds
        if preprocess == "auto":
            preprocess = "official" if self.open else "timefoil"
        self.preprocess = preprocess
        self.mrope = bool(self.family and self.family.mrope)
        self.builder = None
        self.processor = processor
        self.check: dict[str, Any] | None = None  # the first batch compared with the official processor
        # each video's pixels, built once, on a decode-ahead worker where the runner has one
        self.pixels = PixelCache()
        # the tokens of a video's head (the text through its video, expanded), one a shape and
        # sampling; the heads found equal to the whole encoding; whether they still are
        self._head_tokens: dict = {}
        self._heads_checked: set = set()
        self._heads_split = True
        # a fast tokenizer refuses two threads at once ("Already borrowed"): the answering thread
        # and the decode-ahead workers encode in turn (the pixels, built apart, are not held up)
        self._encoding = threading.RLock()
        self._checking = threading.Lock()  # the first batch's comparison with the official processor, once
        self.defer_check = False  # set where the runner decodes ahead: the comparison runs on a thread of its own
        # where the pixels are built: None on the host (exact); a GPU by the device path (pixels=device)
        self.pixel_device = None
        self.check_thread: threading.Thread | None = None
        if vision and processor is None and preprocess == "official":
            self.processor = official_processor(path, revision, trust_remote_code,
                                                open_path=model_type if self.open else None)
        if self.open:
            refuse_frameless(model_type, self.processor)
        if video_as == "auto":
            video_as = self.family.inputs[0] if self.family else self._open_input()
        elif self.open and video_as == "video" and self._open_input() != "video":
            raise UnsupportedFamily(f"{model_type}'s processor takes images only: its frames are shown as images "
                                    "(video_as=images)")
        self.video_as = video_as
        self.time_origin = self._time_origin(time_origin)
        if vision and self.processor is None:
            spec = family_spec(model_type)
            if video_as not in spec.inputs:  # refused at load, not request by request
                raise UnsupportedFamily(f"{model_type} takes frames as its {' or '.join(spec.inputs)} input "
                                        f"only (video_as={video_as} is for {', '.join(taking(video_as))})")
            self.builder = build_vision(model_type, path, tokenizer, revision)
        self.template = (chat_template(path, tokenizer, revision) if vision and self.processor is None
                         else getattr(self.processor or tokenizer, "chat_template", None))
        self._added = tokenizer.get_added_vocab() if self.builder is not None else {}

    def _open_input(self) -> str:
        """What an open-path processor is given the frames as: a video where it has a video
        processor, else images (an image-only model people use for video)."""
        return "video" if getattr(self.processor, "video_processor", None) is not None else "images"

    def _time_origin(self, asked: str | None) -> str | None:
        """What the times written into the prompt count from; None where none are written (only
        a family that writes timestamps, or an open-path architecture whose processor writes
        when each frame was taken (``TIMES``); a span such as Qwen2.5-VL's second_per_grid_ts,
        or a video's length, is the same from either origin)."""
        states_time = self.vision and (self.family.time == "text_timestamps" if self.family
                                       else TIMES.get(self.model_type) in STATES_WHEN)
        if asked is not None and asked not in TIME_ORIGINS:
            raise ValueError(f"time_origin must be one of {', '.join(TIME_ORIGINS)}, got {asked!r}")
        if asked is not None and not states_time:
            told = {"duration": "is told the video's length, the same from either origin",
                    "fps": "is told the frames' rate, the same from either origin"}.get(
                        self.times_told if self.vision else None, "is told no such time")
            raise ValueError(f"time_origin is for models whose prompt states when each frame was taken; "
                             f"{self.model_type or 'this model'} {told}")
        if not states_time:
            return None
        return asked or (self.family.time_origin if self.family else "window")

    def timeline(self, frames: Frames, window_start: float | None) -> Frames:
        """The frames with their times counted from the chosen origin: ``Frames.times`` count from
        the window's first frame; from the file's, each is its index in the file / the file's
        rate (``file_times``)."""
        if self.time_origin != "file" or not frames.times:
            return frames
        return dataclasses.replace(frames, times=file_times(frames, window_start))

    @property
    def times_told(self) -> str | None:
        """How the processor is told when the frames were taken (the kinds of ``TIMES``): a
        family by its table entry, an open-path architecture by ``TIMES``."""
        if self.family is not None:
            if self.family.states_length:  # the frames' indices, and the clip's duration
                return "duration"
            return {"text_timestamps": "indices", "second_per_grid_ts": "span"}.get(self.family.time)
        return TIMES.get(self.model_type)

    def fingerprint(self) -> dict:
        if not self.vision:
            return {}
        return {"preprocess": self.preprocess, "video_as": self.video_as,
                "inputs": self.builder.fingerprint() if self.builder else {"family": self.model_type},
                # the processor's code is transformers': another release may build other inputs
                **({"transformers": _transformers_version()} if self.preprocess == "official" else {}),
                **({"time_origin": self.time_origin} if self.time_origin else {}),
                # the device path's pixels are within two uint8 levels of the host's, not equal
                **({"pixels": "device"} if self.pixel_device is not None else {}),
                # the metadata its own processor is given (the open path), the times a family is told
                **({"frame_times": FRAME_TIMES} if self.open or self.time_origin else {}),
                **({"second_per_grid_ts": SPAN_RULE} if self.family and self.family.time == "second_per_grid_ts"
                   else {})}

    # -- prompts ---------------------------------------------------------------------------------------
    def prompt(self, instruction: str, system: str | None, n_frames: int | None) -> str:
        """The chat prompt, ready for the answer; ``n_frames`` None: no video is shown. A text
        model without a chat template (a base LM such as GPT-2) gets the plain text."""
        if not self.vision and not self.template:
            return (f"{system}\n\n" if system else "") + instruction + "\n"
        if self.vision:
            visual = ([] if n_frames is None else [{"type": "video"}] if self.video_as == "video"
                      else [{"type": "image"}] * n_frames)
            content: Any = visual + [{"type": "text", "text": instruction}]
        else:
            content = instruction
        messages = []
        if system:
            content_of_system = [{"type": "text", "text": system}] if self.vision else system
            messages.append({"role": "system", "content": content_of_system})
        messages.append({"role": "user", "content": content})
        template = self.template
        if n_frames is not None and self.video_as == "video" and self.family and self.family.video_template:
            template = self.family.video_template  # as the official processor renders a conversation with a video
        kwargs = {"chat_template": template} if template and self.processor is None else {}
        renderer = self.processor if self.processor is not None else self.tokenizer
        return renderer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False, **kwargs)

    # -- batches ---------------------------------------------------------------------------------------
    def encode(self, texts: list[str], frames: Sequence[Frames | None] | None = None,
               token_memo: dict | None = None) -> dict:
        """Tokens (left padded) and, for video LLMs, pixels of the same frames for every text
        (``token_memo``: see ``build_batch``)."""
        frames = list(frames) if frames else [None] * len(texts)
        shown = [f for f in frames if f is not None]
        if not self.vision or not shown:
            # the chat template already holds a text model's special tokens; a video LLM's text is
            # tokenised as its processor does it, with or without a video
            special = adds_special_tokens(self.tokenizer, texts) if self.vision else False
            with self._encoding:
                return dict(self.tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=special))
        if self.processor is not None:
            with self._encoding:
                return self._official(texts, frames)
        with self._encoding, pixels_on(self.pixel_device):
            arrays = [f.array if f is not None else None for f in frames]
            batch = build_batch(self.builder, self.tokenizer, texts, arrays, [self._timing(f) for f in frames],
                                as_images=self.video_as == "images",
                                memo=self.pixels, token_memo=token_memo)
        if self.pixel_device is not None:  # within two uint8 levels of the official pixels, not equal: not compared
            self.check = self.check or {"compared": False, "reason": "pixels built on the device (pixels=device)"}
        if self.check is None and self._checking.acquire(blocking=False) and torchvision_imports():
            # once, by the first thread here, outside the lock (the official processor has a
            # tokenizer of its own); on a thread of its own where the runner decodes ahead, so
            # that building the official processor never holds up the first answer
            if self.defer_check:
                self.check_thread = threading.Thread(target=self._compare_with_official, args=(texts, frames, batch),
                                                     name="timefoil-official-check", daemon=True)
                self.check_thread.start()
            else:
                self._compare_with_official(texts, frames, batch)
        return batch

    def _timing(self, frames: Frames | None) -> Timing | None:
        if frames is None or not frames.sampled_fps:
            return None
        return Timing(frames.sampled_fps, tuple(frames.times),
                      clip_length(frames, self.time_origin) if self.family.states_length else None)

    def pixels_ahead(self, frames: Frames) -> None:
        """The pixels of ``frames`` built now (on the calling thread, a decode-ahead worker) and
        kept for the call that shows them; nothing where timefoil builds no inputs."""
        if self.builder is None or frames is None:
            return
        as_images = self.video_as == "images"
        timing = self._timing(frames)
        with pixels_on(self.pixel_device):  # a thread's own setting: set here, on the worker
            self.pixels.get(frames.array, (timing, as_images),
                            lambda: video_pixels(self.builder, frames.array, timing, as_images))

    def encode_shared(self, model, texts: list[str], frames: Frames | None) -> "SharedPrompts":
        """Prompts that show one video, for a prefix that runs once: the first prompt's inputs
        (pixels built once) and positions, and every prompt's tokens.

        Where timefoil builds the inputs, no prompt's video is tokenised again: each prompt is
        tokenised with its video placeholder unexpanded, and its text after the last one is
        joined to the head (the text through the video, expanded), tokenised once for every
        video of one shape and sampling. A placeholder is an added token, which a tokenizer
        splits the text at, so the text after it is tokenised the same whether it stands for
        one token or for thousands; this is checked against the whole encoding of the first
        prompt of each new head, and a tokenizer for which it fails encodes every prompt whole."""
        with self._encoding:  # the decode-ahead thread encodes the next video meanwhile (hf_ahead)
            return self._encode_shared(model, texts, frames)

    def _encode_shared(self, model, texts: list[str], frames: Frames | None) -> "SharedPrompts":
        if frames is not None and self.builder is not None and self._heads_split:
            split = self._text_after_video(texts)
            if split is not None:
                return self._joined(model, texts, frames, *split)
        first = self.encode(texts[:1], [frames] if frames is not None else None)
        sequences = [first["input_ids"][0]] + [
            self.encode([text], [frames] if frames is not None else None)["input_ids"][0] for text in texts[1:]]
        return SharedPrompts(first, self.positions(model, first), sequences, whole=len(texts))

    def _joined(self, model, texts: list[str], frames: Frames, head_text: str, tails: list[list[int]]):
        torch = _torch()
        head = self.encode([head_text], [frames], token_memo=self._head_tokens)
        ids = head["input_ids"][0]
        tail = torch.tensor(tails[0], dtype=ids.dtype)[None]
        first = {**head, "input_ids": torch.cat([head["input_ids"], tail], dim=1),
                 "attention_mask": torch.ones(1, len(ids) + len(tails[0]), dtype=head["attention_mask"].dtype)}
        for key, types in self.builder.token_types(tail, self.tokenizer).items():
            first[key] = torch.cat([head[key], types], dim=1)
        known = tuple(ids.tolist())
        if known not in self._heads_checked:  # a new head: held to the whole encoding of its first prompt
            whole = self.encode(texts[:1], [frames])
            if not all(torch.equal(whole[k], first[k]) for k in whole if torch.is_tensor(whole[k])):
                self._heads_split = False
                return self._encode_shared(model, texts, frames)
            self._heads_checked.add(known)
        sequences = [first["input_ids"][0]] + [torch.cat([ids, torch.tensor(t, dtype=ids.dtype)]) for t in tails[1:]]
        return SharedPrompts(first, self.positions(model, first), sequences, whole=1)

    def _text_after_video(self, texts: list[str]) -> tuple[str, list[list[int]]] | None:
        """(the first prompt's text through its last video placeholder, each prompt's tokens
        after it, tokenised as text alone); None where the prompts differ before it or the
        placeholder is no added token."""
        token = self.builder.image_token if self.video_as == "images" else self.builder.video_token
        placeholder = self._added.get(token)
        if placeholder is None or token not in texts[0]:
            return None
        special = adds_special_tokens(self.tokenizer, texts)
        plain = self.tokenizer(list(texts), add_special_tokens=special)["input_ids"]
        if placeholder not in plain[0]:
            return None
        last = len(plain[0]) - 1 - plain[0][::-1].index(placeholder)
        if any(ids[:last + 1] != plain[0][:last + 1] for ids in plain[1:]):
            return None
        return texts[0][:texts[0].rindex(token) + len(token)], [ids[last + 1:] for ids in plain]

    def _official(self, texts: list[str], frames: list[Frames | None], processor=None) -> dict:
        processor = processor or self.processor
        special = adds_special_tokens(processor.tokenizer, texts)  # as apply_chat_template(tokenize=True)
        # the frame store's arrays are read-only (one array for every request of a video), which
        # torch.from_numpy inside the processor warns of at every call: it is handed a copy
        arrays = [f.array if f.array.flags.writeable else f.array.copy() for f in frames if f is not None]
        if self.video_as == "images":
            # one list of images per text (Gemma 3's processor counts each text's images apart), as
            # PIL images: a processor that loads images itself (Idefics 2) takes no arrays
            from PIL import Image

            images = [[Image.fromarray(frame) for frame in array] for array in arrays]
            return dict(processor(text=texts, images=images, return_tensors="pt", padding=True,
                                  add_special_tokens=special))
        # metadata from which the processor computes the times the frames were taken at (Qwen3-VL:
        # index / fps), counted from the chosen origin
        told = self.times_told
        metadata = [video_metadata(f, self.time_origin, told) for f in frames if f is not None]
        # the frames are timefoil's sampling: a processor that samples by default (Qwen3-VL: 2 fps,
        # at least 4 frames) must not thin them again
        rate = {"fps": metadata[0]["sampled_fps"]} if told == "fps" else {}
        for entry in metadata:
            entry.pop("sampled_fps")
        return dict(processor(text=texts, videos=arrays, video_metadata=metadata, do_sample_frames=False,
                              return_tensors="pt", padding=True, add_special_tokens=special, **rate))

    def _compare_with_official(self, texts, frames, batch) -> None:
        """Build the first batch again with the official processor; a difference is a warning
        with the largest difference, and recorded (the runner writes it into run.json)."""
        torch = _torch()
        try:
            trusted = {"trust_remote_code": True} if self.trust_remote_code else {}
            official = official_processor(self.path, self.revision, **trusted)
            reference = self._official(texts, frames, official)
        except Exception as exc:
            self.check = {"compared": False, "reason": f"{type(exc).__name__}: {exc}"[:300]}
            return
        differences = {}
        # every input the model is given, the attention mask too: in a batch of unequal prompts it
        # says which side the pads are on, and an input only one side gives is a difference
        for key in sorted(set(reference) | set(batch)):
            value, ours = reference.get(key), batch.get(key)
            if not (torch.is_tensor(value) or torch.is_tensor(ours)):
                continue
            if value is None:
                differences[key] = "not among the official processor's inputs"
            elif not (torch.is_tensor(ours) and torch.is_tensor(value)) or tuple(ours.shape) != tuple(value.shape):
                differences[key] = "missing or of another shape"
            elif not torch.equal(ours, value):
                differences[key] = float((ours.double() - value.double()).abs().max())
        self.check = {"compared": True, "equal": not differences, "differences": differences}
        if differences:
            warnings.warn(f"timefoil's inputs for {self.path} differ from the official processor's: {differences}; "
                          "this transformers release may have changed its preprocessing", stacklevel=2)

    # -- positions -------------------------------------------------------------------------------------
    def positions(self, model, batch: dict):
        """Explicit position ids: counted from each row's first real token (so left padding
        changes nothing), or, for Qwen's 3-D rotary positions, the model's own rope index. None
        on the open path: the model computes its own (each prompt is its own batch, unpadded)."""
        if self.open:
            return None
        mask = batch["attention_mask"]
        if self.mrope and ("video_grid_thw" in batch or "image_grid_thw" in batch):
            extra = {k: batch[k] for k in ("image_grid_thw", "video_grid_thw", "second_per_grid_ts") if k in batch}
            inner = getattr(model, "model", model)
            positions, _ = inner.get_rope_index(batch["input_ids"], batch["mm_token_type_ids"], attention_mask=mask,
                                                **extra)
            return positions
        flat = (mask.cumsum(-1) - 1).clamp(min=0)
        return flat[None].expand(3, -1, -1) if self.mrope else flat


@dataclasses.dataclass
class SharedPrompts:
    """Prompts that show one video, encoded for a prefix that runs once."""

    inputs: dict  # the first prompt's model inputs (one row: tokens, pixels, token types)
    positions: Any  # its position ids (None on the open path)
    sequences: list  # every prompt's token ids, 1-D, the first's included
    whole: int  # how many prompts were encoded whole (pixels built, positions computed)


def _transformers_version() -> str:
    import transformers

    return transformers.__version__


# what a fingerprint says of the times: each frame's index in its source / the source's rate
FRAME_TIMES = "source index / source fps, from the window's first frame or the file's"


def file_times(frames: Frames, window_start: float | None) -> tuple:
    """Each frame's time from the start of its file: its index in the file / the file's rate,
    as a processor given the frame's index in the file computes it (a window from 9.98 s of a
    30 fps file starts with frame 300, at 10.0 s). Frames of no file or of two (a
    concatenation) have no such index: theirs are later by the window's start."""
    if len(frames.windows) == 1 and None not in frames.entries:
        rate = frames.windows[0][0]
        return tuple(index / rate for _, index in frames.entries)
    return tuple(t + (window_start or 0.0) for t in frames.times)


def video_metadata(frames: Frames, origin: str | None, told: str | None) -> dict:
    """The ``video_metadata`` a processor is given for ``frames``, from which it computes the
    times the frames were taken at, counted from ``origin`` ("file", else the window's first
    frame), as ``told`` (a kind of ``TIMES``, or "span" for Qwen2.5-VL's second_per_grid_ts) says
    it reads them; "sampled_fps" is the sampling rate, for a processor told by its fps argument.

    - frames of one file: its rate and each frame's index in it (from the window's first frame
      or the file's), the frames up to the window's end, as the model card's decoded metadata
      says (a processor computes index / fps: the time of the frame);
    - frames of no file or of two: their times as indices at 1 frame per second (index / fps is
      the time, exactly);
    - milliseconds: each time in whole milliseconds at 1000 frames per second;
    - span: indices at the sampling rate, as many frames as shown (its sampled_fps, frames
      shown / frames x fps, is then the sampling rate, whose span the family's builder writes);
    - duration: also the window's length (frames / rate of the file, else frames / sampling rate)."""
    count = len(frames.array)
    rate = frames.sampled_fps or 1.0
    times = list(frames.times) or [i / rate for i in range(count)]
    if told == "span":
        return {"total_num_frames": count, "fps": rate, "frames_indices": [t * rate for t in times],
                "sampled_fps": rate}
    if told == "milliseconds":
        return {"total_num_frames": count, "fps": 1000.0, "frames_indices": [round(t * 1000) for t in times],
                "sampled_fps": rate}
    if len(frames.windows) == 1 and None not in frames.entries:
        fps, first, stop, total = frames.windows[0]
        origin_index = 0 if origin == "file" else first
        metadata = {"total_num_frames": total if origin == "file" else stop - first, "fps": fps,
                    "frames_indices": [index - origin_index for _, index in frames.entries], "sampled_fps": rate}
    else:
        metadata = {"total_num_frames": count, "fps": 1.0, "frames_indices": times, "sampled_fps": rate}
    if told == "duration":
        metadata["duration"] = clip_length(frames, origin)
    return metadata


def clip_length(frames: Frames, origin: str | None = None) -> float:
    """The length of the clip the frames were sampled from, in seconds, as the model card's
    decoded metadata gives it: the window's frames over the file's rate (from the file's start,
    ``origin`` "file": the whole file's), else the frames over the sampling rate (frames of no
    file or of two; from the file, their times already count from its start: the clip ends
    that long after its first frame)."""
    if len(frames.windows) == 1 and None not in frames.entries:
        fps, first, stop, total = frames.windows[0]
        return (total if origin == "file" else stop - first) / fps
    length = len(frames.array) / (frames.sampled_fps or 1.0)
    return length + (frames.times[0] if origin == "file" and frames.times else 0.0)


def frames_of(array: np.ndarray, rate: float = 1.0) -> Frames:
    """Frames for code that holds a bare array (benchmarks, tests)."""
    return Frames(array, tuple((0, i) for i in range(len(array))), False,
                  tuple(i / rate for i in range(len(array))), rate)


__all__ = ["FRAME_TIMES", "InputEncoder", "PREPROCESS", "SharedPrompts", "VIDEO_AS", "clip_length", "file_times",
           "frames_of",
           "official_processor", "torchvision_imports", "video_metadata"]
