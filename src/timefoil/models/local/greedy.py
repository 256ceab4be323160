"""Greedy answers continued from the forward pass that read the first step.

The forward pass over a batch of prompts (or over their suffixes, on a copy of the shared
prefix's KV cache) already holds everything generation needs: the logits of the first answer
token and the KV cache of every prompt token. Generating from there, one token per row per
step at the position each row has in its own full sequence, gives the tokens
``model.generate`` gives on the same prompts, without encoding the video or filling the cache
again. Rows that finish (end of sequence, their budget, or the end of their first answer line
where asked) leave the batch, so a long answer does not hold the short ones."""
from __future__ import annotations

import inspect
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence


@dataclass
class Continuation:
    """A batch after its forward pass: ready to generate its next tokens."""

    logits: Any  # [rows, vocabulary]: each row's logits for its first answer token
    cache: Any  # the KV cache of every row's tokens (pads masked)
    mask: Any  # [rows, cached tokens]: 1 for a row's real tokens
    positions: Any  # [rows] or [3, rows]: the position of each row's next token


def cache_keyword(model) -> str:
    """The forward's name for the KV cache: ``cache`` in transformers 5.24 and later, where
    ``past_key_values`` is deprecated (and warns), ``past_key_values`` before."""
    return "cache" if "cache" in inspect.signature(type(model).forward).parameters else "past_key_values"


def kept_logits(model, positions: int) -> dict:
    """The forward argument that computes logits at the last ``positions`` tokens only, where
    the model takes it: the rest would cost a vocabulary-wide projection of every prompt token
    (1,600 x 152k floats, a gigabyte, for a Qwen2-VL prompt with a video)."""
    return {"logits_to_keep": positions} if "logits_to_keep" in inspect.signature(type(model).forward).parameters \
        else {}


def cache_of(output):
    cache = getattr(output, "cache", None)
    return cache if cache is not None else output.past_key_values


def _every_layer_has(cache, method: str) -> bool:
    return all(hasattr(layer, method) for layer in getattr(cache, "layers", ()))


def keep_rows(cache, rows) -> None:
    """Keep only the cache's ``rows`` (a tensor of row indices), in place. transformers'
    ``batch_select_indices`` is written for key/value layers only; a linear-attention layer
    (Qwen3.5's gated delta) keeps a conv and a recurrent state per row, which its
    ``reorder_cache`` (an index_select along the batch, as every layer has) selects as well."""
    if _every_layer_has(cache, "batch_select_indices"):
        cache.batch_select_indices(rows)
    else:
        cache.reorder_cache(rows)


def repeat_rows(cache, times: int) -> None:
    """A one-row cache made ``times`` rows of itself, in place (for linear-attention layers as
    in ``keep_rows``: row 0 selected ``times`` times)."""
    if _every_layer_has(cache, "batch_repeat_interleave"):
        cache.batch_repeat_interleave(times)
    else:
        import torch

        cache.reorder_cache(torch.zeros(times, dtype=torch.long))


def end_ids(model, tokenizer) -> set[int]:
    ends = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    ends = [ends] if isinstance(ends, int) else list(ends or [])
    if tokenizer.eos_token_id is not None:
        ends.append(tokenizer.eos_token_id)
    return set(ends)


def ends_first_line(tokenizer, tokens: list[int]) -> bool:
    """The answer so far has some text and then a line break: its first line is complete."""
    text = tokenizer.decode(tokens, skip_special_tokens=True).lstrip()
    return "\n" in text


@dataclass(eq=False)
class Row:
    """One answer being generated: its budget, whether it ends with its first line, the tokens
    so far, and why it stopped (None while it goes on)."""

    budget: int
    first_line: bool
    tokens: list[int] = field(default_factory=list)
    why: str | None = None
    seconds: float = 0.0  # its share of the decode steps it took part in
    waiting: list[Callable[["Row"], None]] = field(default_factory=list)

    def when_done(self, call: Callable[["Row"], None]) -> None:
        """``call(row)`` once the row has stopped: now, if it has."""
        if self.why is None:
            self.waiting.append(call)
        else:
            call(self)

    def stop(self, why: str) -> None:
        self.why = why
        for call in self.waiting:
            call(self)
        self.waiting.clear()


class GreedyRows:
    """Rows generated together, one token per row per step. Between steps every row holds the
    logits of its next token (``logits[i]`` for ``rows[i]``), the cache holds every token it has
    seen, and ``positions`` the position its next token takes."""

    def __init__(self, model, tokenizer, state: Continuation, rows: list[Row], forward: Callable | None = None):
        self.model, self.tokenizer = model, tokenizer
        self.forward = forward or model  # a step's forward: the model's own, or a compiled one (compiled)
        self.ends = end_ids(model, tokenizer)
        self.keyword = cache_keyword(model)
        self.rows = list(rows)
        self.logits, self.cache, self.mask, self.positions = state.logits, state.cache, state.mask, state.positions
        self.fed = 0  # tokens fed to the model: one per row still going after each step
        self.seconds = 0.0  # time in the model's forward

    def _stopped(self, row: Row, token: int) -> str | None:
        if row.budget <= 0:
            return "max_tokens"
        if token in self.ends:
            return "eos"
        row.tokens.append(token)
        if row.first_line and ends_first_line(self.tokenizer, row.tokens):
            return "line"
        return "max_tokens" if len(row.tokens) >= row.budget else None

    def step(self) -> list[Row]:
        """Every row takes its likeliest token; the rows that stop (end of sequence, their
        budget, the end of their first line where asked) leave the batch, and the rest are fed
        their token to get the next logits. Returns the rows that stopped."""
        import torch

        chosen = self.logits.argmax(-1).tolist()
        still, stopped = [], []
        for slot, (row, token) in enumerate(zip(self.rows, chosen)):
            why = self._stopped(row, token)
            if why is None:
                still.append(slot)
            else:
                row.stop(why)
                stopped.append(row)
        if len(still) < len(self.rows):  # finished rows leave the batch
            self.select(still)
            chosen = [chosen[s] for s in still]
        if still:
            self._feed(torch.tensor(chosen, dtype=torch.long, device=self.mask.device)[:, None])
        return stopped

    def select(self, slots: list[int]) -> None:
        """Keep only the rows at ``slots``."""
        import torch

        self.rows = [self.rows[s] for s in slots]
        if not slots:
            self.logits = self.cache = self.mask = self.positions = None
            return
        keep = torch.tensor(slots, device=self.mask.device)
        keep_rows(self.cache, keep)
        self.mask, self.positions, self.logits = self.mask[keep], self.positions[..., keep], self.logits[keep]

    def _feed(self, feed) -> None:
        import torch

        start = time.perf_counter()
        self.fed += len(self.rows)
        mask = torch.cat([self.mask, self.mask.new_ones(len(self.rows), 1)], dim=1)
        output = self.forward(input_ids=feed, attention_mask=mask, position_ids=self.positions[..., None],
                              use_cache=True, cache_position=torch.tensor([mask.shape[1] - 1], device=mask.device),
                              **{self.keyword: self.cache})
        self.cache, self.mask, self.positions = cache_of(output), mask, self.positions + 1
        self.logits = output.logits[:, -1].float()
        spent = time.perf_counter() - start
        self.seconds += spent
        for row in self.rows:
            row.seconds += spent / len(self.rows)


def continue_greedy(model, tokenizer, state: Continuation, budgets: Sequence[int],
                    first_line: Sequence[bool],
                    forward: Callable | None = None) -> tuple[list[tuple[list[int], str]], int]:
    """(generated token ids, why it stopped: "eos", "line" or "max_tokens") per row, greedy as
    ``generate(do_sample=False)``, and the tokens fed to the model to get them (a row's first
    token needs none: it comes from the forward pass before). ``budgets`` caps each row's new
    tokens; ``first_line`` stops a row at the end of its first answer line (a choice answered
    on one line). ``forward``: what runs each step (the model itself unless given)."""
    rows = [Row(budget, line) for budget, line in zip(budgets, first_line)]
    batch = GreedyRows(model, tokenizer, state, rows, forward)
    while batch.rows:
        batch.step()
    return [(row.tokens, row.why) for row in rows], batch.fed


__all__ = ["Continuation", "GreedyRows", "Row", "cache_keyword", "cache_of", "continue_greedy", "end_ids",
           "keep_rows", "kept_logits", "repeat_rows"]
