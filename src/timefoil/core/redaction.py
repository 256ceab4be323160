"""Keys never reach a file or a terminal: credential values are cut out of every stored
message (error bodies may echo the request's Authorization header), and a URL keeps only its
scheme, host and path (a key may be written in its userinfo or its query)."""
from __future__ import annotations

import os
import re
from urllib.parse import parse_qsl, urlsplit

_CREDENTIAL = re.compile(r"(?i)(bearer\s+|authorization[\"']?\s*[:=]\s*[\"']?(?:bearer\s+)?)(?!\[redacted\])"
                         r"[^\s\"',}\]]+")
_SECRET_NAMES = re.compile(r"(?i)(api_?key|token|secret|password)")
# scheme://[userinfo@]host[path][?query][#fragment]; userinfo holds no '/' (RFC 3986)
_URL = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)(?:[^\s/?#@\"'<>]*@)?([^\s?#\"'<>]*)(?:\?[^\s#\"'<>]*)?"
                  r"(?:#[^\s\"'<>]*)?")
SHORTEST_SECRET = 8  # shorter values are too common to cut out of every text


def environment_secrets() -> list[str]:
    """Values of environment variables whose names say they hold a credential."""
    return [v for k, v in os.environ.items() if _SECRET_NAMES.search(k) and len(v) >= SHORTEST_SECRET]


def url_secrets(url: str) -> list[str]:
    """The values a URL may carry a key in: its user name, password and query values."""
    parts = urlsplit(url)
    values = [parts.username, parts.password] + [v for _, v in parse_qsl(parts.query)]
    return [v for v in values if v and len(v) >= SHORTEST_SECRET]


def public_url(text: str) -> str:
    """Every URL in ``text`` without its userinfo, query and fragment."""
    return _URL.sub(lambda m: m.group(1) + m.group(2), text)


def redact(text: str | None, *secrets: str | None) -> str | None:
    """``text`` without any Authorization or Bearer value, URL userinfo or query, ``secrets``,
    or a credential held in the environment. Redact whole texts, then cut them: a key cut in
    two by a length limit would no longer be found."""
    if not text:
        return text
    return redact_values(public_url(_CREDENTIAL.sub(lambda m: m.group(1) + "[redacted]", text)), *secrets)


def redact_values(text: str | None, *secrets: str | None) -> str | None:
    """``text`` without ``secrets`` or a credential held in the environment, and nothing else
    changed: what a model wrote ("the bearer of the flag", a URL it read) keeps its words. A
    value shorter than ``SHORTEST_SECRET`` is never cut out ("es" would turn "Yes" into "Y")."""
    if not text:
        return text
    values = {s for s in secrets if s and len(s) >= SHORTEST_SECRET} | set(environment_secrets())
    for value in sorted(values, key=len, reverse=True):
        text = text.replace(value, "[redacted]")
    return text


def without_cut_secret(text: str, *secrets: str | None) -> str:
    """``text`` as read up to a length limit, less a tail that is the start of a secret: a
    key cut in two by the limit would not be found by ``redact``, and its first half would
    be kept."""
    for value in {*secrets, *environment_secrets()}:
        if value and len(value) >= SHORTEST_SECRET:
            for length in range(min(len(value) - 1, len(text)), 0, -1):
                if text.endswith(value[:length]):
                    text = text[:-length]
                    break
    return text
