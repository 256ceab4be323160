"""Keys never reach a file or a terminal: credential values are cut out of every stored
message (error bodies may echo the request's Authorization header)."""
from __future__ import annotations

import os
import re

_CREDENTIAL = re.compile(r"(?i)(bearer\s+|authorization[\"']?\s*[:=]\s*[\"']?(?:bearer\s+)?)(?!\[redacted\])"
                         r"[^\s\"',}\]]+")
_SECRET_NAMES = re.compile(r"(?i)(api_?key|token|secret|password)")


def environment_secrets() -> list[str]:
    """Values of environment variables whose names say they hold a credential."""
    return [v for k, v in os.environ.items() if _SECRET_NAMES.search(k) and len(v) >= 8]


def redact(text: str | None, secret: str | None = None) -> str | None:
    """``text`` without any Authorization or Bearer value, ``secret``, or a credential held in
    the environment."""
    if not text:
        return text
    text = _CREDENTIAL.sub(lambda m: m.group(1) + "[redacted]", text)
    for value in ([secret] if secret else []) + environment_secrets():
        text = text.replace(value, "[redacted]")
    return text
