"""Keys never reach a file or a terminal: credential values, and any piece of one long enough
to tell it by, are cut out of every stored message and answer (error bodies may echo the
request's Authorization header, a model may repeat the start of a key it was shown), and a URL
keeps only its scheme, host and path (a key may be written in its userinfo or its query)."""
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
SHORTEST_SECRET = 8  # shorter values (and shorter pieces of a value) are too common to cut out of every text
# Words as prose writes them: lower case, Capitalised or in capitals, between spaces and
# sentence punctuation. A piece of a key's random characters reads so only by chance (a digit,
# a '-' or '_', or a capital inside a word breaks it).
_WORD = r"(?:[A-Z]?[a-z]+|[A-Z]+)"
_BETWEEN = r"[\s.,;:!?'\"()]"
_PROSE = re.compile(rf"{_BETWEEN}*(?:{_WORD}(?:{_BETWEEN}+{_WORD})*)?{_BETWEEN}*")


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
    changed: what a model wrote ("the bearer of the flag", a URL it read) keeps its words.

    The rule: a secret of ``SHORTEST_SECRET`` characters or more is cut out whole wherever it
    stands, and so is any run of at least ``SHORTEST_SECRET`` of its consecutive characters (its
    start, its end or a piece between: 8 random characters tell a key apart), each run as
    long as it goes. A run shorter than ``2 * SHORTEST_SECRET`` that reads as prose (words in
    lower case, Capitalised or in capitals, between spaces or punctuation) is kept: a
    credential held in the environment may be a word or a path ("password", "huggingface"), and
    a model's ordinary words keep their letters. A value shorter than ``SHORTEST_SECRET`` is
    never cut out ("es" would turn "Yes" into "Y")."""
    if not text:
        return text
    values = {s for s in secrets if s and len(s) >= SHORTEST_SECRET} | set(environment_secrets())
    runs = sorted(run for value in values for run in _cut_runs(text, value))
    if not runs:
        return text
    kept, end = [], 0
    for start, stop in runs:
        if start >= end:  # a run apart from the last one cut: the text between stays
            kept += [text[end:start], "[redacted]"]
            end = stop
        else:  # overlapping runs (of two secrets, or two alignments of one) are cut as one
            end = max(end, stop)
    return "".join(kept) + text[end:]


def _cut_runs(text: str, secret: str) -> set[tuple[int, int]]:
    """(start, stop) in ``text`` of each longest run of ``secret``'s characters that
    ``redact_values`` cuts: every run of ``SHORTEST_SECRET`` characters or more is found from
    one of the secret's pieces of that length, then grown both ways."""
    runs = set()
    for offset in range(len(secret) - SHORTEST_SECRET + 1):
        at = text.find(secret[offset:offset + SHORTEST_SECRET])
        while at != -1:
            start, first = at, offset
            while start and first and text[start - 1] == secret[first - 1]:
                start, first = start - 1, first - 1
            stop, last = at + SHORTEST_SECRET, offset + SHORTEST_SECRET
            while stop < len(text) and last < len(secret) and text[stop] == secret[last]:
                stop, last = stop + 1, last + 1
            if stop - start == len(secret) or stop - start >= 2 * SHORTEST_SECRET \
                    or not _PROSE.fullmatch(text[start:stop]):
                runs.add((start, stop))
            at = text.find(secret[offset:offset + SHORTEST_SECRET], at + 1)
    return runs


def without_cut_secret(text: str, *secrets: str | None) -> str:
    """``text`` as read up to a length limit, less a tail that is the start of a secret: a
    key cut in two by the limit may leave a start shorter than the runs ``redact`` cuts, and
    it would be kept."""
    for value in {*secrets, *environment_secrets()}:
        if value and len(value) >= SHORTEST_SECRET:
            for length in range(min(len(value) - 1, len(text)), 0, -1):
                if text.endswith(value[:length]):
                    text = text[:-length]
                    break
    return text
