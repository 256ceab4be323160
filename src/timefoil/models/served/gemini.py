"""Gemini's ``generateContent`` (``POST {base}/models/{model}:generateContent``): the key in
``x-goog-api-key`` (never in the URL), frames as inline images, or with ``video_input=file``
the item's window cut into an mp4 and sent inline as ``video/mp4``. Log-probabilities are asked
for (``responseLogprobs``) and read from the first token's top candidates where the reply has
them; otherwise the answer is read from its text (``logprobs=false`` stops asking, for models
that refuse the field)."""
from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any, ClassVar, Literal
from urllib.parse import quote

from ...core.hashing import stable_hash
from ..requests import Request
from ...video.frames import content_key
from ..base import FrameSource
from .clips import CLIP_FORMAT, check_sendable, window_clip
from .frames import Encoded
from .model import ServedModel
from .reading import Reply


@dataclass(eq=False, repr=False)
class Gemini(ServedModel):
    model: str
    base_url: str = "https://generativelanguage.googleapis.com/v1beta"
    video_input: Literal["frames", "file"] = "frames"
    logprobs: bool = True
    top_logprobs: int = 5
    max_tokens: int | None = None
    seed: int | None = 0

    provider: ClassVar[str] = "gemini"

    def __post_init__(self) -> None:
        if self.video_input not in ("frames", "file"):
            raise ValueError(f"model-arg video_input must be frames or file, not {self.video_input!r}")
        self.model = self.model.removeprefix("models/")
        self.logprobs, self.top_logprobs = bool(self.logprobs), int(self.top_logprobs)
        super().__post_init__()

    def fingerprint(self) -> dict:  # the key is deliberately absent
        shown = {"video_input": "file", "clip": CLIP_FORMAT} if self.video_input == "file" else \
            {"video_input": "frames", **self.shown_fingerprint()}
        return {"name": "gemini", "model": self.model, "base_url": self.base_url, **shown,
                "logprobs": self.logprobs, "top_logprobs": self.top_logprobs,
                "max_tokens": self.max_tokens, "seed": self.seed}

    def path(self) -> str:
        return f"/models/{quote(self.model, safe='/-._~')}:generateContent"

    def key_names(self) -> tuple[str, ...]:
        return ("GEMINI_API_KEY", "GOOGLE_API_KEY")

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
        config: dict[str, Any] = {"temperature": 0, "maxOutputTokens": self.max_tokens or request.max_tokens}
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
        text = "".join(part.get("text", "") for part in parts)
        steps = (candidate.get("logprobsResult") or {}).get("topCandidates") or []
        # proto3 JSON leaves out a field at its default: a token without logProbability has log-probability 0
        alternatives = [(entry.get("token"), entry.get("logProbability", 0.0))
                        for entry in (steps[0].get("candidates") or [])] if steps else []
        return Reply(text, candidate.get("finishReason"), alternatives)
