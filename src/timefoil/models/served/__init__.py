"""Models served over HTTP: one transport (``transport``), frames encoded once per sample
(``frames``, ``clips``), and one module per wire format: ``openai`` (chat completions, any
compatible server), ``gemini`` (generateContent) and ``anthropic`` (Messages)."""
from __future__ import annotations

from ...core.options import typed_options

WIRE_FORMATS = {"openai": ("openai", "OpenAICompatible"), "gemini": ("gemini", "Gemini"),
                "anthropic": ("anthropic", "Anthropic")}  # spec prefix: (module, class)


def load(provider: str, arg: str | None, options: dict, cache_dir: str | None = None):
    """``<provider>:<model>[@<base url>]`` with its model-args; refused in one line, naming the
    extra to install, where httpx (or Pillow, for JPEG and WebP frames) is missing."""
    import importlib

    from .. import require

    module, name = WIRE_FORMATS[provider]
    model, _, base_url = (arg or "").partition("@")
    if not model:
        raise ValueError(f"{provider} models are named {provider}:<model>[@<base url>]")
    # PNG frames and mp4 clips are written without Pillow; JPEG and WebP (the default is JPEG) need it
    images = options.get("image_format") != "png" and options.get("video_input") != "file"
    require("api", "httpx", *(("PIL",) if images else ()))
    adapter = getattr(importlib.import_module(f".{module}", __name__), name)
    given = [base_url] if base_url else []  # else the provider's own, the class's default
    served = adapter(model, *given, **typed_options(adapter, options))
    served.identify()  # which model answers: part of every cache key, read once
    return served
