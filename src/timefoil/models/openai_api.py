"""Any OpenAI-compatible chat-completions server: hosted APIs, vLLM, SGLang.

Frames are sent as base64 images. Requests run concurrently up to a limit; 429, 5xx,
timeouts, dropped connections and malformed bodies are retried with exponential backoff and
jitter, a bounded number of times, after which the request is recorded as an error. When the
server returns ``logprobs``, Yes/No and option-letter probabilities are read from the first
token's top alternatives; otherwise the greedy answer alone is used (StrictVLE still works).
The API key is read from the environment at call time and is never stored.
"""
from __future__ import annotations

import asyncio
import base64
import os
import random
import sys
import threading
import time
from typing import Any, Sequence
from urllib.parse import urlparse

from ..imaging import png
from ..redaction import redact
from ..requests import Answer, Request
from .base import FrameSource, Model

RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}
LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1", "0.0.0.0"}


class TransientError(Exception):
    pass


def image_url(array, image_format: str) -> str:
    if image_format == "jpeg":
        import io

        from PIL import Image

        buffer = io.BytesIO()
        Image.fromarray(array).save(buffer, format="JPEG", quality=90)
        return "data:image/jpeg;base64," + base64.b64encode(buffer.getvalue()).decode()
    return "data:image/png;base64," + base64.b64encode(png(array)).decode()


def _first_token_probs(choice: dict) -> list[tuple[str, float]]:
    import math

    content = ((choice.get("logprobs") or {}).get("content")) or []
    if not content:
        return []
    first = content[0]
    alternatives = first.get("top_logprobs") or [{"token": first.get("token"), "logprob": first.get("logprob")}]
    return [(str(a["token"]), math.exp(float(a["logprob"]))) for a in alternatives
            if a.get("token") is not None and a.get("logprob") is not None]


class OpenAICompatible(Model):
    batch_size = 64

    def __init__(self, model: str, base_url: str = "https://api.openai.com/v1", *,
                 api_key_env: str = "OPENAI_API_KEY", concurrency: int = 8, max_retries: int = 5,
                 timeout: float = 120.0, backoff: float = 1.0, max_backoff: float = 30.0, logprobs: bool = True,
                 top_logprobs: int = 20, image_format: str = "png", max_tokens: int | None = None,
                 seed: int | None = 0):
        self.model, self.base_url = model, base_url.rstrip("/")
        self.name = f"openai:{model}@{self.base_url}"
        self.api_key_env, self.concurrency, self.max_retries = api_key_env, int(concurrency), int(max_retries)
        self.timeout, self.backoff, self.max_backoff = float(timeout), float(backoff), float(max_backoff)
        self.logprobs, self.top_logprobs = bool(logprobs), int(top_logprobs)
        self.image_format, self.max_tokens, self.seed = image_format, max_tokens, seed
        self.stats = {"http_requests": 0, "retries": 0}
        self._warned = False

    def fingerprint(self) -> dict:  # the key is deliberately absent
        return {"name": "openai", "model": self.model, "base_url": self.base_url, "logprobs": self.logprobs,
                "top_logprobs": self.top_logprobs, "image_format": self.image_format,
                "max_tokens": self.max_tokens, "seed": self.seed}

    def _payload(self, request: Request, frames: FrameSource, logprobs: bool) -> dict:
        content: list[dict[str, Any]] = []
        if request.video is not None:
            for frame in frames(request.video, request.sampling).array:
                content.append({"type": "image_url", "image_url": {"url": image_url(frame, self.image_format)}})
        content.append({"type": "text", "text": request.text})
        messages = [{"role": "system", "content": request.system}] if request.system else []
        messages.append({"role": "user", "content": content})
        payload: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": 0,
                                   "max_tokens": self.max_tokens or request.max_tokens}
        if self.seed is not None:
            payload["seed"] = self.seed
        if self.logprobs and logprobs:
            payload.update(logprobs=True, top_logprobs=self.top_logprobs)
        return payload

    def answer_entailment(self, requests: Sequence[Request], frames: FrameSource) -> list[Answer]:
        return self._chat(requests, frames, _yes_no_probs)

    def answer_choice(self, requests: Sequence[Request], frames: FrameSource) -> list[Answer]:
        return self._chat(requests, frames, _letter_probs)

    def answer_generation(self, requests: Sequence[Request], frames: FrameSource) -> list[Answer]:
        return self._chat(requests, frames, None)

    def _chat(self, requests: Sequence[Request], frames: FrameSource, read_probs) -> list[Answer]:
        """``read_probs(request, alternatives, answer)`` reads the first token's alternatives
        into the answer; None asks for no logprobs (free generation)."""
        payloads = [self._payload(r, frames, read_probs is not None) for r in requests]
        coroutine = self._post_all(payloads)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            results = asyncio.run(coroutine)
        else:  # called from inside an event loop (a notebook): run in a thread of its own
            box: list = []
            thread = threading.Thread(target=lambda: box.append(asyncio.run(coroutine)))
            thread.start()
            thread.join()
            results = box[0]
        secret = os.environ.get(self.api_key_env) or None
        return [self._clean(self._read(r, result, read_probs), secret) for r, result in zip(requests, results)]

    @staticmethod
    def _clean(answer: Answer, secret: str | None) -> Answer:
        answer.error, answer.raw = redact(answer.error, secret), redact(answer.raw, secret)
        return answer

    async def _post_all(self, payloads: list[dict]) -> list[dict | Answer]:
        import httpx

        key = os.environ.get(self.api_key_env, "")
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        if not key and urlparse(self.base_url).hostname not in LOCAL_HOSTS and not self._warned:
            self._warned = True
            print(f"timefoil: no API key in {self.api_key_env} for {self.base_url}; requests go unauthenticated",
                  file=sys.stderr)
        limit = asyncio.Semaphore(self.concurrency)
        async with httpx.AsyncClient(timeout=self.timeout, headers=headers) as client:
            async def one(payload):
                async with limit:
                    return await self._post(client, payload)

            return await asyncio.gather(*(one(p) for p in payloads))

    async def _post(self, client, payload: dict) -> dict | Answer:
        import httpx

        last = "no attempt"
        started = time.perf_counter()
        for attempt in range(self.max_retries + 1):
            if attempt:
                self.stats["retries"] += 1
                delay = min(self.max_backoff, self.backoff * 2 ** (attempt - 1)) * (0.5 + random.random())
                await asyncio.sleep(delay)
            self.stats["http_requests"] += 1
            try:
                response = await client.post(f"{self.base_url}/chat/completions", json=payload)
                if response.status_code in RETRY_STATUS:
                    raise TransientError(f"HTTP {response.status_code}")
                if response.status_code >= 400:
                    return Answer(error=f"api error: HTTP {response.status_code}: {response.text[:300]}",
                                  meta={"attempts": attempt + 1})
                data = response.json()
                data["choices"][0]["message"]  # a body without a message is malformed
                data["_attempts"], data["_latency"] = attempt + 1, time.perf_counter() - started
                return data
            except (TransientError, httpx.TimeoutException, httpx.TransportError) as exc:
                last = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            except (ValueError, KeyError, IndexError, TypeError) as exc:
                last = f"malformed response ({type(exc).__name__})"
        return Answer(error=f"api error after {self.max_retries + 1} attempts: {last}",
                      meta={"attempts": self.max_retries + 1})

    def _read(self, request: Request, result: dict | Answer, read_probs) -> Answer:
        if isinstance(result, Answer):
            return result
        choice = result["choices"][0]
        raw = choice["message"].get("content") or ""
        meta = {"attempts": result["_attempts"], "finish_reason": choice.get("finish_reason")}
        answer = Answer(raw=raw, latency=result["_latency"], meta=meta)
        alternatives = _first_token_probs(choice)
        if alternatives and read_probs is not None:
            read_probs(request, alternatives, answer)
        return answer


def _yes_no_probs(request: Request, alternatives: list[tuple[str, float]], answer: Answer) -> None:
    words = [(t.strip().lower(), p) for t, p in alternatives]
    answer.probs = {"yes": sum(p for w, p in words if w == "yes"), "no": sum(p for w, p in words if w == "no")}
    answer.meta["tokens"] = [t for t, _ in alternatives if t.strip().lower() in ("yes", "no")]


def _letter_probs(request: Request, alternatives: list[tuple[str, float]], answer: Answer) -> None:
    letters = [(t.strip().strip("().:").upper(), p) for t, p in alternatives]
    answer.probs = {label: sum(p for w, p in letters if w == label) for label in request.labels}
