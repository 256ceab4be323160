"""A prompt longer than a generative model's context (its config's ``max_position_embeddings``)
is refused, never answered without a word: past its last position a model with learnt position
embeddings fails on an index, and one with rotary positions reads positions it never saw in
training and answers anyway. The refusal is an error: a batch holding such a prompt fails and
is asked one request at a time, so only the prompts too long fail, each with this one line."""
from __future__ import annotations

from typing import Sequence


class ContextExceeded(ValueError):
    """A prompt with more tokens than the model has positions."""


def context_length(model) -> int | None:
    """The positions the model's text part has; None where its config does not say."""
    config = getattr(model, "config", None)
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    limit = getattr(text, "max_position_embeddings", None)
    return limit if isinstance(limit, int) and limit > 0 else None


def refuse_past_context(model, lengths: Sequence[int]) -> None:
    """Raise ``ContextExceeded`` where a prompt of ``lengths`` (tokens, frames' included) has
    more tokens than the model has positions."""
    limit = context_length(model)
    longest = max((int(n) for n in lengths), default=0)
    if limit is not None and longest > limit:
        raise ContextExceeded(f"the prompt is {longest:,} tokens, past the model's context of {limit:,} "
                              "(max_position_embeddings); ask fewer frames or a shorter prompt")


__all__ = ["ContextExceeded", "context_length", "refuse_past_context"]
