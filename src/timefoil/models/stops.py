"""Why a reply ended before it answered, from what its model stored: a served model's finish
reason (the provider refused or blocked it, or it ran out of tokens: a thinking model can spend
them all before a word of answer), or a local model's own stop (``"stopped": "max_tokens"``
when its answer reached the token budget; "eos" and "line" are answers that ended). Such a reply
is neither an answer nor one off format, so it is counted apart from parse failures, the same
for every kind of model."""
from __future__ import annotations

from typing import Any

# finish reasons as each wire format writes them: Gemini's finishReason, OpenAI's finish_reason,
# Anthropic's stop_reason; a Gemini prompt blocked outright is stored as "blocked: <reason>"
REFUSED = {"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY", "LANGUAGE",
           "content_filter", "refusal"}
OUT_OF_TOKENS = {"MAX_TOKENS", "length", "max_tokens", "model_context_window_exceeded"}
LOCAL_OUT_OF_TOKENS = "max_tokens"  # a local generative model's meta["stopped"] at its budget


def stopped(meta: dict[str, Any] | None) -> str | None:
    """"refused" or "out of tokens" where an answer's meta says its reply ended so; else None."""
    if (meta or {}).get("stopped") == LOCAL_OUT_OF_TOKENS:
        return "out of tokens"
    reason = (meta or {}).get("finish_reason")
    if not isinstance(reason, str):
        return None
    if reason.startswith("blocked") or reason in REFUSED:
        return "refused"
    return "out of tokens" if reason in OUT_OF_TOKENS else None
