"""Anthropic's Messages API (``POST {base}/v1/messages``): the key in ``x-api-key``, the API
version in ``anthropic-version``, frames as base64 image blocks before the question. The API
gives no log-probabilities, so answers are read from their text. A request may show at most
``max_images`` images (100, the API's documented limit per request); one that shows more is
refused as that request's error, never cut short. ``temperature`` (0) is sent only to models
that take it: Claude Opus 4.7 and 4.8 answer 400 "temperature is deprecated for this model",
so they are sent none (``temperature=none`` leaves it out for any other model that refuses it).
``api_version`` is the ``anthropic-version`` header."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ..requests import Request
from ..stops import ANSWER_TOKENS, answer_budget
from .frames import Encoded
from ...core.options import checked_number
from .model import ServedModel
from .reading import Reply

API_VERSION = "2023-06-01"
MAX_IMAGES = 100  # per request, for the API (claude.ai takes 20)
NO_TEMPERATURE = ("claude-opus-4-7", "claude-opus-4-8")  # models that answer 400 to any temperature


@dataclass(eq=False, repr=False)
class Anthropic(ServedModel):
    model: str
    base_url: str = "https://api.anthropic.com"
    max_tokens: int | None = None  # None: the request's own budget (the API requires one)
    max_images: int = MAX_IMAGES
    temperature: float | None = 0.0  # None: not sent
    api_version: str = API_VERSION

    provider: ClassVar[str] = "anthropic"

    def __post_init__(self) -> None:
        self.max_images = checked_number("max_images", self.max_images, least=1, whole=True)
        if self.max_tokens is not None:
            self.max_tokens = checked_number("max_tokens", self.max_tokens, least=1, whole=True)
        if self.temperature is not None:
            self.temperature = checked_number("temperature", self.temperature, least=0)
        super().__post_init__()

    @property
    def sent_temperature(self) -> float | None:
        """The temperature requests carry: none for a model that refuses the field."""
        return None if any(name in self.model for name in NO_TEMPERATURE) else self.temperature

    def fingerprint(self) -> dict:  # the key is deliberately absent; max_images only refuses, it changes no answer
        sent = self.sent_temperature
        return {"name": "anthropic", "model": self.model, "base_url": self.base_url, "api_version": self.api_version,
                **self.shown_fingerprint(), "max_tokens": self.max_tokens, "answer_tokens": ANSWER_TOKENS,
                **({"temperature": sent} if sent != 0 else {})}  # 0, the default, left out: older runs keep their key

    def path(self) -> str:
        return "/v1/messages"

    def key_names(self) -> tuple[str, ...]:
        return ("ANTHROPIC_API_KEY",)

    def headers(self, key: str) -> dict[str, str]:
        return {**({"x-api-key": key} if key else {}), "anthropic-version": self.api_version}

    def image_limit(self) -> int | None:
        return self.max_images

    def body(self, request: Request, shown: list[Encoded], logprobs: bool) -> dict:
        content: list[dict[str, Any]] = [
            {"type": "image", "source": {"type": "base64", "media_type": medium.mime, "data": medium.data}}
            for medium in shown]
        content.append({"type": "text", "text": request.text})
        payload: dict[str, Any] = {"model": self.model,
                                   "max_tokens": self.max_tokens or answer_budget(request.kind, request.max_tokens),
                                   "messages": [{"role": "user", "content": content}]}
        if self.sent_temperature is not None:
            payload["temperature"] = self.sent_temperature
        if request.system:
            payload["system"] = request.system
        return payload

    def reply(self, data: Any) -> Reply:
        blocks = data["content"]
        if not isinstance(blocks, list):
            raise TypeError("content is not a list of blocks")
        text = "".join(block["text"] for block in blocks if block.get("type") == "text")
        return Reply(text, data.get("stop_reason"))
