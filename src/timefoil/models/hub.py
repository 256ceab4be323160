"""What ``hf:<name>`` and ``clip:<name>`` name, checked before torch and the weights load: a folder
here, or a hub id that is in the local Hugging Face cache or can be downloaded now. A name that is
neither is refused in one line naming both readings, at once, instead of transformers' retries
and its message about repo ids (a mistyped folder read as a hub id)."""
from __future__ import annotations

import os
import socket
from urllib.parse import urlsplit

from ..core.environment import http_url, switch

PROXIES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")


class SpecError(ValueError):
    """A model spec that names nothing that can be loaded: a usage error (exit 2)."""


def check_source(kind: str, name: str, revision: str | None = None) -> None:
    """``name`` is a folder, or a hub id whose files are cached or can be fetched; else SpecError."""
    if os.path.isdir(name):
        return
    spec = f"{kind}:{name}"
    if os.path.exists(name):
        raise SpecError(f"{spec}: {name} is a file; give the folder that holds the model's config.json")
    shown_path = name.startswith(("/", "./", "../", "~")) or name.count("/") > 1
    if not _valid_hub_id(name):
        raise SpecError(f"{spec}: no folder {name} here, and {name!r} is no hub id (owner/name, e.g. "
                        "Qwen/Qwen2-VL-7B-Instruct)" + (": is the path right?" if shown_path else ""))
    if _cached(name, revision):
        return
    where = f"no folder {name} here, and the hub id {name} is not in the local Hugging Face cache"
    if switch("HF_HUB_OFFLINE"):
        raise SpecError(f"{spec}: {where} while HF_HUB_OFFLINE is set; download it once with network, or give "
                        "its folder")
    host = urlsplit(http_url("HF_ENDPOINT") or "https://huggingface.co").hostname or "huggingface.co"
    if not any(os.environ.get(v) for v in PROXIES) and not _reachable(host):
        raise SpecError(f"{spec}: {where}, and {host} cannot be reached (no network?); give its folder, or run "
                        "where the hub can be reached")


def _valid_hub_id(name: str) -> bool:
    try:
        from huggingface_hub.utils import validate_repo_id
    except ImportError:  # no hub client: transformers will say what it can
        return True
    try:
        validate_repo_id(name)
    except Exception:
        return False
    return True


def _cached(name: str, revision: str | None) -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return False
    for filename in ("config.json", "model_index.json", "open_clip_config.json"):
        found = try_to_load_from_cache(name, filename, revision=revision)
        if isinstance(found, str):
            return True
    return False


def _reachable(host: str, timeout: float = 3.0) -> bool:
    try:
        socket.create_connection((host, 443), timeout=timeout).close()
    except OSError:
        return False
    return True


__all__ = ["SpecError", "check_source"]
