"""The bounds a served model keeps: a server's Retry-After read, and every text of an answer
stripped of credentials before it is cut."""
from __future__ import annotations

import math
import time
from datetime import timezone
from email.utils import parsedate_to_datetime
from typing import Any, Sequence

from ...core.redaction import redact, redact_values
from ..requests import Answer

ERROR_CHARS = 300  # a stored error message's length, cut after redaction


class TransientError(Exception):
    pass


class ReplyTooLarge(Exception):
    pass


def retry_after_seconds(value: str | None) -> float:
    """What a ``Retry-After`` header asks: delay-seconds or an HTTP date; 0 when absent or unreadable."""
    if not value:
        return 0.0
    try:
        seconds = float(value.strip())
    except ValueError:
        try:
            when = parsedate_to_datetime(value.strip())
        except (TypeError, ValueError, IndexError):
            return 0.0
        if when.tzinfo is None:
            when = when.replace(tzinfo=timezone.utc)
        seconds = when.timestamp() - time.time()
    return max(0.0, seconds) if math.isfinite(seconds) else 0.0


def clean(answer: Answer, secrets: Sequence[str]) -> Answer:
    """Every text of an answer (the server's words, in any field) without a credential, the
    error cut to one line afterwards: a key cut in two by the limit could not be found. The
    answer's own text loses the keys' values only: a pattern that finds a credential in an
    error body ("Bearer x") would otherwise change what the model said."""
    def redacted(value: Any) -> Any:
        if isinstance(value, str):
            return redact(value, *secrets)
        if isinstance(value, dict):
            return {redacted(k): redacted(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [redacted(v) for v in value]
        return value

    answer.raw, answer.meta = redact_values(answer.raw, *secrets), redacted(answer.meta)
    if answer.error:
        answer.error = " ".join(redacted(answer.error).split())[:ERROR_CHARS]
    return answer
