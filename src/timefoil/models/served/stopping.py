"""Errors that no retry can pass, told apart from a busy server's: the run stops asking at the
first one, says it in one line, and records every request it would have sent with that error,
unsent. A refusal of the key (401, 403), nothing at the address (404), a body the server will
never take (400, 422: a field it refuses), a server without vision shown images (llama-server's
500 "image input is not supported"), and a server that refuses connections for longer than
``connect_window`` seconds. A 400 that names a size (a prompt past the context, too many
images) is that request's alone, as is a 413: the other requests may fit."""
from __future__ import annotations

from dataclasses import dataclass

# What servers say when they are shown images and cannot see: llama-server without --mmproj,
# vLLM serving a text model, hosted models without vision.
NO_VISION = ("image input is not supported", "not a multimodal model", "does not support image",
             "at most 0 image", "image_url is only supported by certain models", "does not support vision")
# Words of a refusal about one request's size: the other requests may fit.
SIZE_WORDS = ("context", "too long", "too many", "too large", "exceed", "maximum", "max_tokens", "length")
STOP_STATUS = {400, 401, 403, 404, 422}


@dataclass(frozen=True)
class Stop:
    """Why the asking stops: ``error``, what each request not answered is recorded with (an HTTP
    error keeps its usual form, the server's words last, where the cut at 300 characters falls),
    and ``said``, the line printed once: the cause and what to do. ``media_only``: only the
    requests that show frames or a clip stop (a server without vision still answers blind ones)."""

    error: str
    said: str
    media_only: bool = False

    def applies(self, shows_media: bool) -> bool:
        return shows_media or not self.media_only


def stop_for(status: int, text: str, shows_media: bool, where: str, key_names: tuple[str, ...]) -> Stop | None:
    """The stop an HTTP error reply calls for (``text``: its body as read, one line), or None
    where it is the request's alone or a retry may pass it."""
    lowered = text.lower()
    error = f"api error: HTTP {status}: {text}" if text else f"api error: HTTP {status}"
    words = f" (HTTP {status}: {text[:160]})" if text else f" (HTTP {status})"
    if shows_media and any(phrase in lowered for phrase in NO_VISION):
        return Stop(error, f"the server at {where} cannot see images{words}: serve a model with vision "
                           "(llama-server: --mmproj), or run --blind", media_only=True)
    if status in (401, 403):
        return Stop(error, f"the server at {where} refuses the key{words}: set {' or '.join(key_names)} to a key "
                           "it takes")
    if status == 404:
        return Stop(error, f"nothing answers at {where}{words}: check the base URL and the model name")
    if status in (400, 422) and not any(word in lowered for word in SIZE_WORDS):
        return Stop(error, f"the server at {where} refuses the requests' form{words}: every request has it; "
                           "check the model-args")
    return None


def refused_stop(seconds: float, last: str, where: str, proxy) -> Stop:
    """The stop for a server that refused connections for ``seconds``."""
    through = f" through {proxy.said()}: is the proxy up? (add the host to NO_PROXY to reach it directly)" \
        if proxy else ": start the server, or check the base URL"
    said = f"no connection to {where} for {seconds:.1f} s ({last}){through}"
    return Stop(f"api error: {said}", said)
