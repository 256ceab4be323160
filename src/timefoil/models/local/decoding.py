"""Decode steps shared across videos (continuous batching).

Each video's group prefills its prompts and hands its rows over (``DecodeQueue.admit``) with
their first-step logits and KV cache. The queue decodes every admitted row together, one
token per row per step; rows that stop leave at once, and the queue hands control back (so the
next group prefills and joins) as soon as the rows still going fall below ``rows`` and their
cache below ``cache_bytes``. A call holding many videos with a few questions each thus decodes
in steps of many rows instead of one to four, and a long answer never holds the others.

Joining rows of different lengths: the shorter cache is padded on the left with masked
positions (zeros in the attention mask) and every row keeps its own positions (3-D rotary ones
included), so each row attends to exactly its own tokens at its own positions, as it would
alone. Caches that left padding would shift (sliding-window layers attend within a span of
cache slots, not of positions; other cache types hold more than keys and values) are decoded
group by group instead, and the reason is kept in ``off``."""
from __future__ import annotations

from typing import Callable, Sequence

from .greedy import Continuation, GreedyRows, Row


def unpaddable(cache, sliding_window: bool) -> str | None:
    """Why ``cache`` cannot be joined with another by left padding (None: it can)."""
    from transformers.cache_utils import DynamicCache, DynamicLayer

    if type(cache) is not DynamicCache:
        return f"its KV cache is a {type(cache).__name__}, not a plain DynamicCache"
    if getattr(cache, "offloading", False):
        return "its KV cache is offloaded"
    odd = sorted({type(layer).__name__ for layer in cache.layers if type(layer) is not DynamicLayer})
    if odd:
        return f"its KV cache has {', '.join(odd)} layers, which left padding would shift"
    if any(not layer.is_initialized or layer.keys is None or layer.keys.dim() != 4 for layer in cache.layers):
        return "its KV cache has layers without keys of their own (shared or empty)"
    if sliding_window:
        return "its layers attend within a sliding window of cache slots, which left padding would shift"
    return None


def cache_bytes(cache) -> int:
    return sum(layer.keys.nbytes + layer.values.nbytes for layer in cache.layers)


def _left_pad(tensor, width: int, dim: int):
    import torch.nn.functional as F

    missing = width - tensor.shape[dim]
    if not missing:
        return tensor
    pads = [0, 0] * (tensor.dim() - 1 - dim % tensor.dim()) + [missing, 0]
    return F.pad(tensor, pads)


def join(batch: GreedyRows, state: Continuation, rows: list[Row]) -> None:
    """``state``'s rows appended to ``batch``'s: both caches and masks padded on the left to the
    longer one's width (padded slots masked), logits and positions each row's own."""
    import torch

    width = max(batch.mask.shape[1], state.mask.shape[1])
    for ours, theirs in zip(batch.cache.layers, state.cache.layers):
        ours.keys = torch.cat([_left_pad(ours.keys, width, -2), _left_pad(theirs.keys, width, -2)])
        ours.values = torch.cat([_left_pad(ours.values, width, -2), _left_pad(theirs.values, width, -2)])
    batch.mask = torch.cat([_left_pad(batch.mask, width, 1), _left_pad(state.mask, width, 1)])
    batch.positions = torch.cat([batch.positions, state.positions], dim=-1)
    batch.logits = torch.cat([batch.logits, state.logits])
    batch.rows += rows


def trim(batch: GreedyRows) -> None:
    """Drop the leading slots no row still going attends to (those of rows that have left)."""
    if batch.mask is None:
        return
    used = batch.mask.any(0).nonzero()
    first = int(used[0]) if len(used) else 0
    if first:
        for layer in batch.cache.layers:
            layer.keys, layer.values = layer.keys[..., first:, :], layer.values[..., first:, :]
        batch.mask = batch.mask[:, first:]


class DecodeQueue:
    """Greedy rows of many groups decoded together; see the module's docstring. ``fed`` counts
    the tokens fed to the model and ``seconds`` the time spent in decode steps."""

    def __init__(self, model, tokenizer, *, rows: int, cache_bytes: int, sliding_window: bool = False,
                 forward: Callable | None = None):
        self.model, self.tokenizer = model, tokenizer
        self.forward = forward  # each step's forward (compiled): the model's own when None
        self.max_rows, self.max_bytes = rows, cache_bytes
        self.sliding_window = sliding_window
        self.batch: GreedyRows | None = None
        self.off: str | None = None  # why rows are decoded group by group, once a cache showed it
        self.fed, self.seconds = 0, 0.0

    def admit(self, state: Continuation, budgets: Sequence[int], first_line: Sequence[bool]) -> list[Row]:
        """The group's rows join the batch; steps run until there is room for the next group.
        Each row is filled in (``Row.when_done``) when it stops."""
        rows = [Row(budget, line) for budget, line in zip(budgets, first_line)]
        why_not = self.off or unpaddable(state.cache, self.sliding_window)
        if why_not is None and state.cache.get_seq_length() != state.mask.shape[1]:
            why_not = "its KV cache and attention mask differ in length"
        if why_not is not None:  # this group alone, to its end
            self.off = why_not
            self._run(GreedyRows(self.model, self.tokenizer, state, rows, self.forward), until_room=False)
            return rows
        if self.batch is None or not self.batch.rows:
            self.batch = GreedyRows(self.model, self.tokenizer, state, rows, self.forward)
        else:
            join(self.batch, state, rows)
        self._run(self.batch, until_room=True)
        return rows

    def finish(self) -> None:
        """Every admitted row decoded to its end."""
        if self.batch is not None:
            self._run(self.batch, until_room=False)
        self.batch = None

    def _full(self, batch: GreedyRows) -> bool:
        return len(batch.rows) >= self.max_rows or cache_bytes(batch.cache) >= self.max_bytes

    def _run(self, batch: GreedyRows, until_room: bool) -> None:
        fed, seconds = batch.fed, batch.seconds
        while batch.rows and (not until_room or self._full(batch)):
            if batch.step() and batch.rows and self.off is None:
                trim(batch)
        self.fed += batch.fed - fed
        self.seconds += batch.seconds - seconds


__all__ = ["DecodeQueue", "cache_bytes", "join", "trim", "unpaddable"]
