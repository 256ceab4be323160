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

Outside the layers, where the caller keeps the grid on the host (``host_inputs``) the tower's
one read of it and transformers' split of the features after the tower read host memory; and
transformers' check of the vision tokens against the features, which reads their count back
from the device, takes it from the prompt's tokens on the host (``note_host_ids``).

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
    original = getattr(inner, "get_placeholder_mask", None)
    modalities = _placeholder_modalities(inner, original)
    if modalities:
        if getattr(original, "__name__", "") != "placeholder_mask_checked_on_host":  # installed once
            inner.get_placeholder_mask = _checked_on_host(inner, original, modalities)
        changed.append("get_placeholder_mask")
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


def note_host_ids(model, host_ids, sent_ids) -> None:
    """Counts the vision placeholder tokens of ``host_ids`` (a prompt's tokens on the host) for
    the forward of ``model`` that will be handed ``sent_ids`` (their copy on the device, or
    themselves on the CPU), where its placeholder check reads that count (``install``)."""
    check = getattr(getattr(model, "model", model), "get_placeholder_mask", None)
    counts = getattr(check, "host_counts", None)
    torch = _torch()
    if counts is not None and torch.is_tensor(host_ids) and torch.is_tensor(sent_ids):
        counts[sent_ids] = {name: int((host_ids == token).sum()) for name, token in check.tokens.items()}


def _placeholder_modalities(inner, original) -> tuple[str, ...]:
    """The kinds of vision tokens transformers' placeholder check of ``inner`` counts (image,
    and video where it takes video features), or none where it is not the check whose masks
    ``_checked_on_host`` makes: ``(input_ids == token).unsqueeze(-1)``, token from the config."""
    import inspect

    if not callable(original):
        return ()
    names = list(inspect.signature(original).parameters)
    if names[:3] != ["input_ids", "inputs_embeds", "image_features"] or names[3:] not in ([], ["video_features"]):
        return ()
    modalities = ("image", "video")[:len(names) - 2]
    config = getattr(inner, "config", None)
    if any(not isinstance(getattr(config, f"{name}_token_id", None), int) for name in modalities):
        return ()
    return modalities


def _checked_on_host(inner, original, modalities: tuple[str, ...]):
    """transformers' placeholder check of ``inner``, the count of each kind of vision token taken
    from the prompt's tokens on the host (``note_host_ids``) rather than read back from the
    device: the same masks (the same operations on the same tokens), the same error where the
    count and the features differ. Tokens not counted on the host (handed over some other way)
    get transformers' own check."""
    from torch.utils.weak import WeakIdKeyDictionary

    tokens = {name: getattr(inner.config, f"{name}_token_id") for name in modalities}
    counts = WeakIdKeyDictionary()  # the tensor a forward is handed -> its counts, gone with it

    def placeholder_mask_checked_on_host(input_ids, inputs_embeds, **features):
        counted = counts.get(input_ids) if input_ids is not None else None
        if counted is None:
            return original(input_ids, inputs_embeds, **features)
        masks = []
        for name in modalities:
            given = features.get(f"{name}_features")
            if given is not None and counted[name] * inputs_embeds.shape[-1] != given.numel():
                raise ValueError(f"{name.title()} features and {name} tokens do not match, tokens: {counted[name]}, "
                                 f"features: {given.shape[0]}")
            masks.append((input_ids == tokens[name]).unsqueeze(-1).to(inputs_embeds.device))
        return tuple(masks) if len(masks) > 1 else masks[0]

    placeholder_mask_checked_on_host.host_counts = counts
    placeholder_mask_checked_on_host.tokens = tokens
    return placeholder_mask_checked_on_host


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


__all__ = ["GRIDS", "HOST_INPUTS", "host_inputs", "install", "note_host_ids"]
