"""Which suffix rows share a forward, and the one cache they run on.

Rows are packed in order into chunks while the chunk's estimated memory stays within the
budget (``row_budget``) and, where ``batch_size`` was given, its rows within it. Rows of
several videos share a chunk where their prefixes' caches can be joined: each prefix's
one-row cache padded before its first slot to the longest prefix of the chunk (padded slots
masked), then the rows stacked along the batch. A suffix token then sits as far from every
prefix token, in slots, as in its own sequence, so sliding-window layers (a span of slots)
see the same tokens; positions are each row's own. Linear-attention layers hold one state a
row, with no slots to pad: their states are stacked alone; a layer that holds nothing (it
reads another's keys and values) is shared. Caches with any other kind of layer keep each
video's rows to forwards of their own."""
from __future__ import annotations

import copy
from typing import Any, Sequence

from .row_budget import RowCost


def read_positions(suffixes: Sequence, captions: Sequence[int]) -> set[int]:
    """The suffix positions whose logits the rows read: a caption's tokens are each predicted
    from the token before it; a row without one reads its last token."""
    read: set[int] = set()
    for suffix, n in zip(suffixes, captions):
        read.update(range(len(suffix) - 1 - n, len(suffix) - 1) if n else (len(suffix) - 1,))
    return read


def _kinds():
    from transformers.cache_utils import (DummyLayer, DynamicCache, DynamicLayer, DynamicSlidingWindowLayer,
                                          LinearAttentionLayer)

    return DynamicCache, (DynamicLayer, DynamicSlidingWindowLayer), LinearAttentionLayer, DummyLayer


def joinable(caches: Sequence) -> bool:
    """Whether these one-row caches can be joined into one (``joined_rows``): plain dynamic
    caches whose layers, of the same kinds in the same order, are key/value layers (plain or
    sliding-window), linear-attention layers, or layers holding nothing (a layer that reads
    another's keys and values, Gemma 4's)."""
    cache_type, slotted, linear, empty = _kinds()
    if any(type(c) is not cache_type or getattr(c, "offloading", False) for c in caches):
        return False
    kinds = {tuple(type(layer) for layer in c.layers) for c in caches}
    if len(kinds) != 1:
        return False
    for layers in zip(*(c.layers for c in caches)):
        if type(layers[0]) in slotted:
            if len({layer.keys is None for layer in layers}) != 1:
                return False
        elif type(layers[0]) not in (linear, empty):
            return False
    return True


def _left_pad(tensor, width: int):
    import torch.nn.functional as F

    return F.pad(tensor, (0, 0, width - tensor.shape[-2], 0)) if tensor.shape[-2] < width else tensor


def joined_rows(caches: Sequence[tuple[Any, int]], slots: int):
    """One cache of every (one-row cache, rows) pair's rows in turn, over ``slots`` prefix
    slots: key/value layers padded before each prefix to the longest (a sliding-window layer
    keeps at most its window, so its own longest), linear-attention states stacked. New
    tensors throughout: the forward writes none of the prefixes' own."""
    import torch

    _, slotted, _, empty = _kinds()
    first = caches[0][0]
    fresh = copy.copy(first)
    fresh.layers = []
    for layers in zip(*(cache.layers for cache, _ in caches)):
        if type(layers[0]) is empty:  # holds nothing: shared as it is
            fresh.layers.append(layers[0])
            continue
        new = copy.copy(layers[0])
        for name, value in vars(layers[0]).items():  # per-layer dicts (a linear layer's states) are its own
            if isinstance(value, dict):
                setattr(new, name, dict(value))
        counts = [n for _, n in caches]
        if type(new) in slotted:
            if new.keys is not None:
                width = max(layer.keys.shape[-2] for layer in layers)
                for name in ("keys", "values"):
                    padded = [_left_pad(getattr(layer, name), width) for layer in layers]
                    setattr(new, name, torch.cat([t.expand(n, *t.shape[1:]) for t, n in zip(padded, counts)]))
                if hasattr(new, "cumulative_length"):  # a sliding window: the slots it has seen
                    new.cumulative_length = slots
        else:
            for name in ("conv_states", "recurrent_states"):
                states = getattr(new, name)
                for k, state in states.items():
                    if state is not None:
                        states[k] = torch.cat([getattr(layer, name)[k].expand(n, *state.shape[1:])
                                               for layer, n in zip(layers, counts)])
        fresh.layers.append(new)
    return fresh


def suffix_chunks(prefixes: Sequence, *, across: bool, by_length: bool, cap: int | None, cost: RowCost,
                  budget: int, every_logit: bool = False) -> list[list[tuple[Any, int]]]:
    """The prefixes' rows, (prefix, index), in chunks that each run as one forward: in order,
    each chunk as many rows as ``cap`` and the budget (less the prefixes' caches, held until
    their suffixes have run) allow, at least one. ``across``: rows of several prefixes may
    share a chunk; ``by_length``: only suffixes of one length share one; ``every_logit``: the
    model computes logits at every position (it takes no ``logits_to_keep``)."""
    room = budget - sum(cost.prefix(p.shared) for p in prefixes)
    units = [list(prefixes)] if across else [[p] for p in prefixes]
    chunks: list[list[tuple[Any, int]]] = []
    for unit in units:
        groups: dict[int, list[tuple[Any, int]]] = {}
        for p in unit:
            for i in range(len(p.sequences)):
                groups.setdefault(len(p.suffix(i)) if by_length else 0, []).append((p, i))
        for group in groups.values():
            chunk: list[tuple[Any, int]] = []
            slots = width = 0
            reads: set[int] = set()
            for p, i in group:
                suffix = p.suffix(i)
                grown = (max(slots, p.shared), max(width, len(suffix)),
                         reads | read_positions([suffix], [p.captions[i]]))
                reads = grown[1] if every_logit else len(grown[2])
                if chunk and ((cap is not None and len(chunk) >= cap)
                              or cost.forward(len(chunk) + 1, grown[0], grown[1], reads) > room):
                    chunks.append(chunk)
                    chunk, grown = [], (p.shared, len(suffix), read_positions([suffix], [p.captions[i]]))
                chunk.append((p, i))
                slots, width, reads = grown
            chunks.append(chunk)
    return chunks


__all__ = ["joinable", "joined_rows", "read_positions", "suffix_chunks"]
