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
from dataclasses import dataclass
from typing import Any, Sequence



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


def continue_greedy(model, tokenizer, state: Continuation, budgets: Sequence[int],
                    first_line: Sequence[bool]) -> tuple[list[tuple[list[int], str]], int]:
    """(generated token ids, why it stopped: "eos", "line" or "max_tokens") per row, greedy as
    ``generate(do_sample=False)``, and the tokens fed to the model to get them (a row's first
    token needs none: it comes from the forward pass before). ``budgets`` caps each row's new
    tokens; ``first_line`` stops a row at the end of its first answer line (a choice answered
    on one line)."""
    import torch

    ends = end_ids(model, tokenizer)
    keyword = cache_keyword(model)
    rows = len(budgets)
    tokens: list[list[int]] = [[] for _ in range(rows)]
    why: list[str | None] = [None] * rows
    active = list(range(rows))  # rows still generating, in the order of the batch's rows
    fed = 0
    logits, cache, mask, positions = state.logits, state.cache, state.mask, state.positions
    while True:
        chosen = logits.argmax(-1).tolist()
        still = []
        for slot, (row, token) in enumerate(zip(active, chosen)):
            if budgets[row] <= 0:
                why[row] = "max_tokens"
            elif token in ends:
                why[row] = "eos"
            else:
                tokens[row].append(token)
                if first_line[row] and ends_first_line(tokenizer, tokens[row]):
                    why[row] = "line"
                elif len(tokens[row]) >= budgets[row]:
                    why[row] = "max_tokens"
                else:
                    still.append(slot)
        if not still:
            return [(t, w or "max_tokens") for t, w in zip(tokens, why)], fed
        if len(still) < len(active):  # finished rows leave the batch
            keep = torch.tensor(still, device=mask.device)
            keep_rows(cache, keep)
            mask, positions = mask[keep], positions[..., keep]
            chosen = [chosen[s] for s in still]
            active = [active[s] for s in still]
        feed = torch.tensor(chosen, dtype=torch.long, device=mask.device)[:, None]
        fed += len(active)
        mask = torch.cat([mask, mask.new_ones(len(active), 1)], dim=1)
        output = model(input_ids=feed, attention_mask=mask, position_ids=positions[..., None], use_cache=True,
                       cache_position=torch.tensor([mask.shape[1] - 1], device=mask.device), **{keyword: cache})
        cache = cache_of(output)
        positions = positions + 1
        logits = output.logits[:, -1].float()


__all__ = ["Continuation", "cache_keyword", "cache_of", "continue_greedy", "end_ids", "keep_rows", "kept_logits",
           "repeat_rows"]
