"""Which forward runs a suffix chunk and a greedy decoding step: the model's own (eager) or
torch.compile's (``compile=auto|on|off``; auto: compiled on a CUDA GPU, eager elsewhere).

On a GPU the host cannot launch a 7B decoder's ~50 small kernels a layer as fast as the device
runs them: a suffix chunk was 1,415 launches and two thirds of a video's wall. Compiled, the
norms, rotary and residual adds fuse into a few kernels; a suffix chunk that only reads logits
also runs as one CUDA graph replay (mode ``reduce-overhead``). Its shapes are bucketed so that few
graphs are recorded: rows padded up to the next of 1, 2, 3, 4, 6, 8, 12, 16, ... (copies of the
first row) and the suffix width to the next power of two from 8 (masked pads after every row's
last token), the read positions likewise (the last one repeated). A pad is never attended to by a
real token (it comes after them, and is masked) and its logits are never read, so answers are the
unpadded ones up to the rounding of a different kernel shape.

Without CUDA graphs: a suffix chunk whose rows go on to generate (its KV cache outlives the call,
where a graph's next replay would overwrite it) and every decoding step (its cache grows by one
token a step: a new shape each time) run compiled with dynamic shapes, unpadded. The prefix, with
its pixels, runs eager: one forward a video, where launches are a small share.

The first compiled call of each kind is said in one line with its time. A compile that fails is
said in one line and everything after runs eager; ``ran`` names what ran (run.json's
``ran_on.forward``)."""
from __future__ import annotations

import sys
import time
import warnings
from typing import Any, Callable

from ...core.memory import is_out_of_memory

SETTINGS = ("auto", "on", "off")
SMALLEST_WIDTH = 8
# torch.compile's backend: inductor (fused kernels, and CUDA graphs with mode reduce-overhead). A
# test may set a cheaper one (dynamo's capture alone) where inductor's compile would take a minute.
BACKEND = "inductor"


def row_bucket(rows: int) -> int:
    """The next of 1, 2, 3, 4, 6, 8, 12, 16, 24, ... (powers of two and 1.5 times them): at most a
    third of a chunk's rows are pads."""
    size = 1
    while True:
        for candidate in (size, size * 3 // 2):
            if candidate >= rows:
                return candidate
        size *= 2


def width_bucket(width: int) -> int:
    """The next power of two, at least ``SMALLEST_WIDTH``."""
    size = SMALLEST_WIDTH
    while size < width:
        size *= 2
    return size


def compile_wanted(setting: str, device, spread: bool = False) -> bool:
    """``spread``: the model's layers lie on several devices (a device_map), where auto leaves the
    forwards eager (CUDA graphs hold one device's work; accelerate's hooks move tensors between)."""
    if setting not in SETTINGS:
        raise ValueError(f"model-arg compile must be one of {', '.join(SETTINGS)}, not {setting!r}")
    return setting == "on" or (setting == "auto" and str(device).startswith("cuda") and not spread)


class Forwards:
    """The model's forward for suffix chunks (``suffix``) and decoding steps (``step``), eager or
    compiled as ``setting`` says. ``counts``: forwards run each way ("graphed", "compiled",
    "eager"); ``first_compile_s``: the first compiled call's seconds, by kind; ``graphs_compiled``:
    the graphs each kind made (one per shape dynamo had not seen, bounded by the buckets)."""

    def __init__(self, model, device, setting: str = "auto"):
        from .placement import devices_of

        self.model = model
        self.on = compile_wanted(setting, device, "+" in (devices_of(getattr(model, "hf_device_map", None)) or ""))
        self.graphs = self.on and str(device).startswith("cuda")  # CUDA graphs exist on a CUDA device only
        self.failed: str | None = None  # why compiling failed: everything after it runs eager
        self.counts = {"graphed": 0, "compiled": 0, "eager": 0}
        self.first_compile_s: dict[str, float] = {}
        self.graphs_compiled: dict[str, int] = {}  # by kind: graphs dynamo made (new shapes, once each)
        self.calls: dict[str, int] = {}  # by kind: compiled calls
        self._compiled: dict[str, Callable] = {}

    @property
    def ran(self) -> str:
        """What ran the suffixes and decoding steps, as run.json says it."""
        if self.counts["graphed"]:
            return "torch.compile, CUDA graphs"
        if self.counts["compiled"]:
            return "torch.compile"
        return "eager"

    # -- the two call sites ---------------------------------------------------------------
    def suffix(self, inputs: dict, rows: int, cache_rows: Callable[[int], Any], keyword: str, reads_only: bool):
        """One suffix chunk's forward over ``rows`` rows of the prefix cache (``cache_rows(n)``
        makes an n-row one, under the forward's cache ``keyword``). Where only its logits are
        read (``reads_only``), compiled runs pad it to bucketed shapes and give back the real
        rows' logits at the real read positions; otherwise the output is the model's own."""
        if not self._compiling():
            return self._eager({**inputs, keyword: cache_rows(rows)})
        if not reads_only:
            return self._run("suffix", {**inputs, keyword: cache_rows(rows)}, graphs=False)
        padded, reads = bucketed(inputs, rows)
        output = self._run("suffix_graphed" if self.graphs else "suffix",
                           {**padded, keyword: cache_rows(padded["input_ids"].shape[0])}, graphs=self.graphs)
        logits = output.logits[:rows]
        logits = logits[:, :reads] if "logits_to_keep" in inputs else logits[:, :inputs["input_ids"].shape[1]]
        # a graph's outputs live in its memory pool, which its next replay writes over
        output.logits = logits.clone() if self.graphs and self.failed is None else logits
        return output

    def step(self, **inputs):
        """One decoding step's forward (its cache grows a token a step: compiled with dynamic shapes)."""
        if not self._compiling():
            return self._eager(inputs)
        return self._run("step", inputs, graphs=False)

    # -- how each runs --------------------------------------------------------------------
    def _compiling(self) -> bool:
        return self.on and self.failed is None

    def _eager(self, inputs: dict):
        self.counts["eager"] += 1
        return self.model(**inputs)

    def _run(self, kind: str, inputs: dict, graphs: bool):
        import torch

        compiled = self._compiled.get(kind)
        if compiled is None:
            # decoding steps change shape every step: dynamic from the start; suffixes are bucketed
            mode = {"mode": "reduce-overhead"} if graphs and BACKEND == "inductor" else {}
            compiled = self._compiled[kind] = torch.compile(CALLS[kind], backend=BACKEND,
                                                            dynamic=True if kind == "step" else None, **mode)
        first = kind not in self.first_compile_s
        made = _graphs_made()
        start = time.perf_counter()
        try:
            if graphs:  # the previous replay's outputs are no longer read: its pool may be reused
                torch.compiler.cudagraph_mark_step_begin()
            with warnings.catch_warnings():
                # inductor advises TF32 for float32 matrix products on an Ampere or newer GPU: the
                # output projection is float32 on purpose (float_logits), and TF32 would move p(yes)
                warnings.filterwarnings("ignore", message="TensorFloat32 tensor cores")
                output = compiled(self.model, inputs)
        except Exception as exc:  # any compiler failure: the model's own forward instead
            if is_out_of_memory(exc):
                raise
            self.failed = f"{type(exc).__name__}: {' '.join(str(exc).split())[:160]}"
            print(f"timefoil: torch.compile failed ({self.failed}); the model's own forward runs instead",
                  file=sys.stderr, flush=True)
            return self._eager(inputs)
        self.counts["graphed" if graphs else "compiled"] += 1
        self.graphs_compiled[kind] = self.graphs_compiled.get(kind, 0) + _graphs_made() - made
        self.calls[kind] = self.calls.get(kind, 0) + 1
        if first:
            if str(getattr(self.model, "device", "cpu")).startswith("cuda"):
                torch.cuda.synchronize()
            self.first_compile_s[kind] = seconds = time.perf_counter() - start
            what = {"suffix": "suffix forward", "suffix_graphed": "suffix forward (CUDA graphs)",
                    "step": "decoding step"}[kind]
            print(f"timefoil: {what} compiled in {seconds:.1f} s (torch.compile; new shapes compile as they come)",
                  file=sys.stderr, flush=True)
        return output


def _graphs_made() -> int:
    """Graphs dynamo has made in this process (its own statistics)."""
    from torch._dynamo.utils import counters

    return int(counters["stats"]["unique_graphs"])


# One function per kind, each its own code object: dynamo keeps a code object's compiled graphs
# up to a limit (8), and the kinds' shapes (bucketed, dynamic, a token a step) would share it.
# The module's forward, not its __call__: hooks on the model (a bench's timers) stay outside.
def _suffix_graphed(model, inputs: dict):
    return model.forward(**inputs)


def _suffix(model, inputs: dict):
    return model.forward(**inputs)


def _step(model, inputs: dict):
    return model.forward(**inputs)


CALLS = {"suffix_graphed": _suffix_graphed, "suffix": _suffix, "step": _step}


def bucketed(inputs: dict, rows: int) -> tuple[dict, int]:
    """A suffix chunk's inputs padded to bucketed shapes, and how many read positions are real:
    rows repeated from the last (a chunk of several prefixes keeps each row beside its own),
    the width padded with masked tokens after every row's last, positions and cache positions
    continued, the read positions' last repeated."""
    import torch
    import torch.nn.functional as F

    ids, mask, where = inputs["input_ids"], inputs["attention_mask"], inputs["position_ids"]
    width = ids.shape[1]
    more_rows, more_width = row_bucket(rows) - rows, width_bucket(width) - width

    def rows_of(tensor):  # along the row axis (dim -2 of positions, which may lead with 3 axes)
        if not more_rows:
            return tensor
        last = tensor.narrow(-2, tensor.shape[-2] - 1, 1)
        return torch.cat([tensor, last.expand(*last.shape[:-2], more_rows, last.shape[-1])], dim=-2)

    ids = F.pad(rows_of(ids), (0, more_width))
    mask = F.pad(rows_of(mask), (0, more_width))  # pads masked
    where = F.pad(rows_of(where), (0, more_width))
    position = inputs["cache_position"]
    following = position[-1] + 1 + torch.arange(more_width, device=position.device)
    padded = {**inputs, "input_ids": ids, "attention_mask": mask, "position_ids": where,
              "cache_position": torch.cat([position, following])}
    reads = width
    kept = inputs.get("logits_to_keep")
    if torch.is_tensor(kept):
        reads = kept.shape[0]
        padded["logits_to_keep"] = torch.cat([kept, kept[-1:].expand(width_bucket(reads) - reads)])
    return padded, reads


__all__ = ["Forwards", "SETTINGS", "bucketed", "compile_wanted", "row_bucket", "width_bucket"]
