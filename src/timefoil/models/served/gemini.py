"""Gemini's ``generateContent`` (``POST {base}/models/{model}:generateContent``): the key in
``x-goog-api-key`` (never in the URL), frames as inline images, or with ``video_input=file``
the item's window cut into an mp4 and sent inline as ``video/mp4``. Log-probabilities are asked
for (``responseLogprobs``) and read from the first token's top candidates where the reply has
them; otherwise the answer is read from its text (``logprobs=false`` stops asking, for models
that refuse the field). A thinking model's thought parts (``"thought": true``) are not its
answer; ``thinking_budget=N`` caps its thinking and adds N to ``maxOutputTokens``, which
counts thinking too, so the answer keeps its own budget. A base URL without an API version
(``http://host:port``) gets ``/v1beta``, the documented one. A 429 without Retry-After waits
the ``RetryInfo.retryDelay`` its body gives."""
from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass
from typing import Any, ClassVar, Literal
from urllib.parse import quote, urlsplit, urlunsplit

from ...core.hashing import stable_hash
from ...core.options import checked_count
from ..requests import Request
from ..stops import ANSWER_TOKENS, answer_budget
from ...video.frames import content_key
from ..base import FrameSource
from .clips import CLIP_FORMAT, check_sendable, window_clip
from .frames import Encoded
from ...core.options import checked_number
from .model import ServedModel
from .reading import Reply

API_VERSION = "/v1beta"  # what a base URL naming no version is given
_VERSION = re.compile(r"^v\d+(?:alpha|beta)?\d*$")  # a path segment naming an API version: v1, v1beta, v1alpha2
_DURATION = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)s\s*$")  # protobuf's Duration in JSON: "17s", "1.5s"


@dataclass(eq=False, repr=False)
class Gemini(ServedModel):
    model: str
    base_url: str = "https://generativelanguage.googleapis.com/v1beta"
    video_input: Literal["frames", "file"] = "frames"
    logprobs: bool = True
    top_logprobs: int = 5
    max_tokens: int | None = None
    seed: int | None = 0
    thinking_budget: int | None = None  # None: the model's own (not sent)

    provider: ClassVar[str] = "gemini"

    def __post_init__(self) -> None:
        if self.video_input not in ("frames", "file"):
            raise ValueError(f"model-arg video_input must be frames or file, not {self.video_input!r}")
        self.model = self.model.removeprefix("models/")
        if self.thinking_budget is not None:
            self.thinking_budget = checked_number("thinking_budget", self.thinking_budget, least=0, whole=True)
        self.base_url = versioned(self.base_url)
        self.logprobs = bool(self.logprobs)
        self.top_logprobs = checked_count("top_logprobs", self.top_logprobs, least=0)
        self.max_tokens = checked_count("max_tokens", self.max_tokens, optional=True)
        super().__post_init__()

    def fingerprint(self) -> dict:  # the key is deliberately absent
        shown = {"video_input": "file", "clip": CLIP_FORMAT} if self.video_input == "file" else \
            {"video_input": "frames", **self.shown_fingerprint()}
        return {"name": "gemini", "model": self.model, "base_url": self.base_url, **shown,
                "logprobs": self.logprobs, "top_logprobs": self.top_logprobs,
                "max_tokens": self.max_tokens, "answer_tokens": ANSWER_TOKENS, "seed": self.seed,
                **({"thinking_budget": self.thinking_budget} if self.thinking_budget is not None else {})}

    def path(self) -> str:
        return f"/models/{quote(self.model, safe='/-._~')}:generateContent"

    def key_names(self) -> tuple[str, ...]:
        return ("GEMINI_API_KEY", "GOOGLE_API_KEY")

    def replied_model(self, data: Any) -> str | None:
        named = data.get("modelVersion") if isinstance(data, dict) else None
        return named if isinstance(named, str) else None

    def sampling(self, payload: dict) -> dict:
        config = payload.get("generationConfig") or {}
        return {k: v for k, v in config.items() if k not in ("responseLogprobs", "logprobs")}

    def headers(self, key: str) -> dict[str, str]:
        return {"x-goog-api-key": key} if key else {}

    def shown(self, request: Request, frames: FrameSource) -> list[Encoded]:
        if self.video_input == "frames":
            return super().shown(request, frames)
        check_sendable(request.video, request.sampling)  # the clip below may be one made for a natural-order request
        key = stable_hash([content_key(request.video), request.sampling.resize if request.sampling else None, "clip"])

        def clip() -> list[Encoded]:
            return [Encoded("video/mp4", base64.b64encode(window_clip(request.video, request.sampling)).decode())]

        return self.encoded.get(key, clip)

    def body(self, request: Request, shown: list[Encoded], logprobs: bool) -> dict:
        parts: list[dict[str, Any]] = [{"inlineData": {"mimeType": medium.mime, "data": medium.data}}
                                       for medium in shown]
        parts.append({"text": request.text})
        answer_tokens = self.max_tokens or answer_budget(request.kind, request.max_tokens)
        config: dict[str, Any] = {"temperature": 0, "maxOutputTokens": answer_tokens + (self.thinking_budget or 0)}
        if self.thinking_budget is not None:
            config["thinkingConfig"] = {"thinkingBudget": self.thinking_budget}
        if self.seed is not None:
            config["seed"] = self.seed
        if self.logprobs and logprobs:
            config.update(responseLogprobs=True, logprobs=self.top_logprobs)
        payload: dict[str, Any] = {"contents": [{"role": "user", "parts": parts}], "generationConfig": config}
        if request.system:
            payload["systemInstruction"] = {"parts": [{"text": request.system}]}
        return payload

    def reply(self, data: Any) -> Reply:
        if "candidates" not in data and "blockReason" in (data.get("promptFeedback") or {}):
            return Reply("", f"blocked: {data['promptFeedback']['blockReason']}")  # an answer: no retry changes it
        candidate = data["candidates"][0]
        parts = (candidate.get("content") or {}).get("parts") or []
        text = "".join(part.get("text", "") for part in parts if not part.get("thought"))
        steps = (candidate.get("logprobsResult") or {}).get("topCandidates") or []
        # A candidate without logProbability is left out (read as unknown, not as certain): were
        # two of them read as 0, Yes and No would each have probability 1.
        alternatives = [(entry.get("token"), entry.get("logProbability"))
                        for entry in (steps[0].get("candidates") or [])] if steps else []
        return Reply(text, candidate.get("finishReason"), alternatives)

    def asked_delay(self, body: bytes) -> float:
        """``error.details[].retryDelay`` of the body's RetryInfo ("17s"), in seconds."""
        try:
            details = json.loads(body)["error"]["details"]
            delays = [d["retryDelay"] for d in details if isinstance(d, dict) and "retryDelay" in d]
        except (ValueError, KeyError, TypeError):
            return 0.0
        read = [float(m.group(1)) for d in delays if isinstance(d, str) and (m := _DURATION.match(d))]
        return max(read, default=0.0)


def versioned(base_url: str) -> str:
    """``base_url`` with ``/v1beta`` after it where no segment of its path names an API version."""
    parts = urlsplit(base_url.rstrip("/"))
    if any(_VERSION.match(segment) for segment in parts.path.split("/")):
        return base_url
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + API_VERSION))
