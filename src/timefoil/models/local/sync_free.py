"""A loaded video LLM whose forward reads nothing back from the device inside its layers.

Each read of a GPU tensor's values on the host (``tolist``, ``item``, a tensor in an ``if``,
``nonzero``, a boolean mask as an index) waits for every kernel queued before it, and the GPU
then idles while the host launches the next ones. transformers' Qwen vision towers do this in
every block: under sdpa or eager attention each splits q, k and v by
``(cu_seqlens[1:] - cu_seqlens[:-1]).tolist()``, the lengths of its frames (or windows), with
``cu_seqlens`` made on the device from the grid. Here the tower is handed those inputs made
on the host from the grid, read once at the tower's start by transformers' own functions
(its family's ``grid_inputs``): the segment bounds stay on the host under sdpa or eager (the
split reads host memory), everything the tower computes with goes to its device. Qwen3-VL's
deepstack merge, between decoder layers, indexes by a boolean mask; it becomes a masked
scatter, which needs no count on the host.

Everything is installed on the loaded model's own modules (instance attributes), never on
transformers' classes: other users of the library in the same process are unaffected. The
outputs are those of the plain model, bit for bit on the CPU (the same operations on the same
values; tests/models/test_no_sync.py). The reads left outside the layers are listed in
docs/performance.md."""
from __future__ import annotations

from typing import Any, Callable

# the vision tower's inputs that keep their place on the host under sdpa or eager attention:
# segment bounds only split tensors there (a flash kernel takes them on the device), and the
# window order transformers itself makes on the host
HOST_INPUTS = ("cu_seqlens", "cu_window_seqlens", "window_index")
# the longest segment, which a flash kernel takes as a number, for each bounds input
LONGEST = {"cu_seqlens": "max_seqlen", "cu_window_seqlens": "max_window_seqlen"}
# the forward's inputs that the sync-free tower lets stay on the host (``host_inputs``)
GRIDS = ("image_grid_thw", "video_grid_thw")


def install(model, model_type: str) -> list[str]:
    """Installs the sync-free forwards on ``model`` (a loaded transformers model of
    ``model_type``), once however often called; the names of the modules changed (none for a
    family without device reads in its layers, or one timefoil has no family for)."""
    from ..families import FAMILIES

    spec = FAMILIES.get(model_type)
    changed = []
    inner = getattr(model, "model", model)
    tower = getattr(inner, "visual", None)
    if spec is not None and spec.grid_inputs is not None and tower is not None:
        if getattr(tower.forward, "__name__", "") != "grid_ready_forward":  # installed once
            tower.forward = _grid_ready(tower, spec.grid_inputs)
        changed.append("visual")
    language = getattr(inner, "language_model", None)
    if language is not None and callable(getattr(language, "_deepstack_process", None)):
        language._deepstack_process = _deepstack_added
        changed.append("language_model._deepstack_process")
    return changed


def host_inputs(model) -> tuple[str, ...]:
    """The names of ``model``'s forward inputs that stay in host memory: its grids, where the
    sync-free tower is installed. Nothing reads them on the device then: the tower reads its grid
    on the host (above), the features are split after it by sizes worked out from the grid, and
    the 3-D rotary positions, made from the grid too, are handed to the forward ready made. The
    grid's reads, once at the tower's start and once at the split, are then reads of host memory."""
    inner = getattr(model, "model", model)
    tower = getattr(inner, "visual", None)
    if getattr(getattr(tower, "forward", None), "__name__", "") == "grid_ready_forward":
        return GRIDS
    return ()


def _grid_ready(tower, grid_inputs: Callable[[Any, Any], dict]):
    """The tower's forward, handed the inputs it would derive from ``grid_thw`` on the device
    (transformers' vision encoders take them precomputed as keyword arguments); inputs the
    caller gave keep precedence."""
    forward = tower.forward

    def grid_ready_forward(hidden_states, grid_thw, **kwargs):
        torch = _torch()
        # the grid's integers at the tower's start: host memory where the caller kept the grid
        # there (``host_inputs``), else one read of the device where transformers reads it too
        host_grid = torch.tensor(grid_thw.tolist(), dtype=grid_thw.dtype)
        flash = _flash(tower.config)
        made = {}
        for name, value in grid_inputs(tower, host_grid).items():
            if name in LONGEST and flash:  # a flash kernel takes bounds on the device, the longest as a number
                made[LONGEST[name]] = int((value[1:] - value[:-1]).max())
            if torch.is_tensor(value) and not (name in HOST_INPUTS and (not flash or name == "window_index")):
                value = _sent(value, hidden_states.device)
            made[name] = value
        return forward(hidden_states, grid_thw, **{**made, **kwargs})

    return grid_ready_forward


def _deepstack_added(hidden_states, visual_pos_masks, visual_embeds):
    """Qwen3-VL's deepstack merge (a vision layer's features added at the vision tokens after
    an early decoder layer) without a boolean index, whose count the host would read: the
    features scattered into zeros at the masked rows, added everywhere. The same sums at the
    vision tokens, the text tokens' states plus zero."""
    torch = _torch()
    mask = visual_pos_masks.to(hidden_states.device)
    if mask.dim() == hidden_states.dim() - 1:
        mask = mask[..., None]
    features = visual_embeds.to(hidden_states.device, hidden_states.dtype)
    return hidden_states + torch.zeros_like(hidden_states).masked_scatter(mask, features)


def _sent(value, device):
    """``value`` on ``device``, sent from pinned memory to a GPU (the host does not wait for it)."""
    if device.type == "cuda":
        value = value.pin_memory()
    return value.to(device, non_blocking=True)


def _flash(config) -> bool:
    """Whether the tower runs a flash kernel (as transformers decides it, at each forward)."""
    from transformers.utils import generic

    return generic.is_flash_attention_requested(config)


def _torch():
    import torch

    return torch


__all__ = ["GRIDS", "HOST_INPUTS", "host_inputs", "install"]
