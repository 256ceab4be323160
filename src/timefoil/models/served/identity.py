"""Which model a server answers with, read once when the model loads: a server such as
llama-server answers any model name with the one file it serves, so the spec alone cannot say
whose answers a cache entry or a run holds. ``GET {base}/models`` lists what the server serves;
the entry named as the spec names it (else the only one listed) is the served model: its ``id``
and what tells one file from another where given (``root``, ``parent``, ``path``, ``digest``,
and llama-server's ``meta``: parameters, size, type, vocabulary). A server that lists none (no
such endpoint, or no entry for the name among many) names no model: answers are keyed by the
spec alone, as before, and run.json says so."""
from __future__ import annotations

import json
from typing import Any

# What identifies a listed model; everything else (``created``: the time of the listing on
# llama-server, ``aliases``, the slot context ``n_ctx``) changes no answer.
IDENTIFYING = ("id", "root", "parent", "path", "digest", "owned_by")
META_IGNORED = {"n_ctx"}
NOT_LISTED = {404, 405, 501}  # no listing endpoint: the server names no model


def served_identity(listing: Any, asked: str) -> dict | None:
    """The served model's identity from a ``/models`` reply, or None where it names none."""
    entries = listing.get("data") if isinstance(listing, dict) else None
    if not isinstance(entries, list):
        return None
    entries = [entry for entry in entries if isinstance(entry, dict) and isinstance(entry.get("id"), str)]
    named = [entry for entry in entries if entry["id"] == asked]
    chosen = named[0] if named else entries[0] if len(entries) == 1 else None
    if chosen is None:
        return None
    identity = {key: chosen[key] for key in IDENTIFYING if isinstance(chosen.get(key), (str, int, float))}
    meta = chosen.get("meta")
    if isinstance(meta, dict):
        identity["meta"] = {k: v for k, v in sorted(meta.items()) if k not in META_IGNORED}
    if not named:  # any name asked is answered by this one model (llama-server)
        identity["answers_any_name"] = True
    return identity


def described(identity: dict | None) -> str:
    """A served model in a few words: its id, with its size and parameters where listed."""
    if not identity:
        return "a model the server did not name"
    meta = identity.get("meta") or {}
    facts = [f"{meta['n_params']:,} parameters" if isinstance(meta.get("n_params"), int) else "",
             f"{meta['size']:,} bytes" if isinstance(meta.get("size"), int) else "",
             f"digest {identity['digest']}" if identity.get("digest") else ""]
    facts = [fact for fact in facts if fact]
    return f"{identity.get('id')!r}" + (f" ({', '.join(facts)})" if facts else "")


def read_listing(model) -> tuple[dict | None, str]:
    """(identity or None, why none) from ``GET {base}/models``, with the requests' retries for a
    busy or loading server; a key refused, or no server for longer than ``connect_window``, is
    raised as one line (ValueError): nothing could be asked of it."""
    import time

    import httpx

    from .proxies import client_options, proxy_for
    from .stopping import refused_stop, stop_for

    url = model.listing
    where = model.base_url
    last, refused_since = "no attempt", None
    with httpx.Client(timeout=model.timeout, headers=model.headers(model.api_key()),
                      **client_options(url)) as client:
        for attempt in range(model.max_retries + 1):
            if attempt:
                time.sleep(min(model.max_backoff, model.backoff * 2 ** (attempt - 1)))
            try:
                reply = client.get(url)
            except httpx.ConnectError as exc:
                refused_since = refused_since or time.monotonic()
                last = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
                waited = time.monotonic() - refused_since
                if waited >= model.connect_window:
                    raise ValueError(refused_stop(waited, last, where, proxy_for(url)).said) from None
                continue
            except httpx.HTTPError as exc:
                last = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
                continue
            refused_since = None
            text = model.clean_text(reply.content[:4096].decode("utf-8", "replace"))
            if reply.status_code in (429, 503, 502, 504, 500):  # busy or loading: asked again
                last = f"HTTP {reply.status_code}: {text}" if text else f"HTTP {reply.status_code}"
                continue
            if reply.status_code in NOT_LISTED or reply.status_code >= 300:
                stop = stop_for(reply.status_code, text, False, where, model.key_names()) \
                    if reply.status_code in (401, 403) else None
                if stop is not None:
                    raise ValueError(stop.said)
                return None, f"GET {where}/models answered HTTP {reply.status_code}"
            try:
                identity = served_identity(json.loads(reply.content), model.model)
            except ValueError:
                return None, f"GET {where}/models answered no JSON"
            return identity, "" if identity else f"GET {where}/models lists no model named {model.model!r}"
    raise ValueError(f"the server at {where} did not say which model it serves after "
                     f"{model.max_retries + 1} attempts ({last}); wait for it to load, or raise max_retries")
