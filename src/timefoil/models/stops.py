"""Why a reply ended before it answered, from what its model stored: a served model's finish
reason (the provider refused or blocked it, or it ran out of tokens: a thinking model can spend
them all before a word of answer), or a local model's own stop (``"stopped": "max_tokens"``
when its answer reached the token budget; "eos" and "line" are answers that ended). Such a reply
is neither an answer nor one off format, so it is counted apart from parse failures, the same
for every kind of model.

A reply that may have been cut before its writer finished (``cut``: it ran out of tokens, or it
ended where a stop string sent with it matched) is read only where the part received decides
its answer (measures/grammar.py, ``decided``); unread, it is counted as cut, with the stopped."""
from __future__ import annotations

from typing import Any

# finish reasons as each wire format writes them: Gemini's finishReason, OpenAI's finish_reason,
# Anthropic's stop_reason; a Gemini prompt blocked outright is stored as "blocked: <reason>"
REFUSED = {"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY", "LANGUAGE",
           "content_filter", "refusal"}
OUT_OF_TOKENS = {"MAX_TOKENS", "length", "max_tokens", "model_context_window_exceeded"}
LOCAL_OUT_OF_TOKENS = "max_tokens"  # a local generative model's meta["stopped"] at its budget


AT_STOP = "stop"  # OpenAI's finish reason for a reply ended at its end token or at a stop string sent with it
# The least token limit a served letter or Yes/No answer is sent with (a run's larger
# --max-tokens is kept; a served model's own max_tokens model-arg sets the limit outright): room
# for the reasoning a chat model may write before its answer, which the meant reading reads
# whole. Its cost on llama-server with SmolLM2: docs/models.md, "Serving a model".
ANSWER_TOKENS = 256


def answer_budget(kind: str, asked: int) -> int:
    """The token limit a served letter or Yes/No answer is sent with: at least ``ANSWER_TOKENS``
    (a budget of a few tokens cuts a reasoning-first reply before its answer); what the request
    asks for every other kind."""
    return max(asked, ANSWER_TOKENS) if kind in ("choice", "entailment") else asked


def stopped(meta: dict[str, Any] | None) -> str | None:
    """"refused", "out of tokens" or "cut at a stop" where an answer's meta says its reply ended
    so; else None."""
    meta = meta or {}
    if meta.get("stopped") == LOCAL_OUT_OF_TOKENS:
        return "out of tokens"
    reason = meta.get("finish_reason")
    if not isinstance(reason, str):
        return None
    if reason.startswith("blocked") or reason in REFUSED:
        return "refused"
    if reason in OUT_OF_TOKENS:
        return "out of tokens"
    # ended at a stop string that was sent (vLLM names the one that matched in ``stop_reason``, and
    # gives None there for a reply that ended at its end token: that one is whole)
    at_string = reason == AT_STOP and meta.get("stop") and meta.get("stop_reason", "unknown") is not None
    return "cut at a stop" if at_string else None


def cut(meta: dict[str, Any] | None) -> bool:
    """Whether the reply may go on past what was received: it ran out of tokens or ended at a
    stop string (a refusal is no reply to read)."""
    return stopped(meta) in ("out of tokens", "cut at a stop")
