"""Any OpenAI-compatible chat-completions server: hosted APIs, vLLM, SGLang.

Frames are sent as base64 images (JPEG at quality 90 by default; PNG or WebP on request), each
sample encoded once however many requests show it. Requests run concurrently up to a limit; 429, 5xx,
timeouts, dropped connections and malformed bodies are retried with exponential backoff and
jitter, a bounded number of times, after which the request is recorded as an error. When the
server returns ``logprobs``, Yes/No and option-letter probabilities are read from the first
token's top alternatives; otherwise the greedy answer alone is used (StrictVLE still works).

Every request is bounded: ``timeout`` bounds each network read and ``deadline`` (``timeout`` by
default) the whole attempt, a slowly dripped body included; a reply body over
``max_reply_bytes`` (4 MiB by default, which also bounds the stored answer text) is that
request's error. A 429 or 503 with ``Retry-After`` (seconds or an HTTP date) waits as long as the
server asks before the next attempt, but never more than ``max_retry_after`` seconds (60 by
default). Log-probabilities that are not finite numbers are dropped (the answer is read from its
text) and the answer's ``meta`` says so.

The API key is read from the environment at call time and is never stored; a key written in
the base URL (userinfo or query) is used for the requests but cut out of every stored or printed
URL, name and message (so the cache fingerprint does not tell two queries apart).
"""
from __future__ import annotations

import asyncio
import base64
import json
import math
import os
import queue
import random
import sys
import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from datetime import timezone
from email.utils import parsedate_to_datetime
from typing import Any, Iterator, Sequence
from urllib.parse import urlsplit, urlunsplit

from ..hashing import stable_hash
from ..imaging import png
from ..once import OnceEach
from ..redaction import public_url, redact, url_secrets
from ..requests import Answer, Request
from ..video.decode import VideoError
from ..video.frames import content_key
from .base import FrameSource, Model

RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}
RETRY_AFTER_STATUS = {429, 503}  # the statuses whose Retry-After says when to come back
LOGPROB_SLACK = 1e-3  # a log-probability this far above 0 is rounding, read as 0
ERROR_CHARS = 300  # a stored error message's length, cut after redaction
LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1", "0.0.0.0"}


class TransientError(Exception):
    pass


IMAGE_FORMATS = ("jpeg", "png", "webp")


def image_url(array, image_format: str, quality: int = 90) -> str:
    """One frame as a data URL. PNG is lossless; JPEG and WebP are lossy at ``quality``."""
    if image_format == "png":
        return "data:image/png;base64," + base64.b64encode(png(array)).decode()
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(array).save(buffer, format=image_format.upper(), quality=int(quality))
    return f"data:image/{image_format};base64," + base64.b64encode(buffer.getvalue()).decode()


class EncodedFrames:
    """The data URLs of each shown sample, built once per (video, sampling, format) and reused
    by every request that shows it (both option orders, every caption of a video), within a
    memory bound (least recently used out first)."""

    def __init__(self, max_bytes: int = 256 * 1024**2):
        self.max_bytes, self.used = max_bytes, 0
        self.entries: OrderedDict[str, list[str]] = OrderedDict()
        self.building = OnceEach()
        self.lock = threading.Lock()
        self.last_encoded = 0.0  # monotonic time of the latest encoding (when the last sample was ready)
        self.encodes = 0

    def get(self, key: str, build) -> list[str]:
        """The sample's URLs; a thread asking for one another thread is building waits for it."""
        return self._cached(key) or self.building.run(key, lambda: self._cached(key) or self._keep(key, build()))

    def _cached(self, key: str) -> list[str] | None:
        with self.lock:
            if key in self.entries:
                self.entries.move_to_end(key)
                return self.entries[key]
        return None

    def _keep(self, key: str, urls: list[str]) -> list[str]:
        with self.lock:
            self.encodes += 1
            self.last_encoded = time.monotonic()
            self.entries[key] = urls
            self.used += sum(len(u) for u in urls)
            while self.used > self.max_bytes and len(self.entries) > 1:
                _, old = self.entries.popitem(last=False)
                self.used -= sum(len(u) for u in old)
        return urls


def _first_token_probs(choice: dict) -> tuple[list[tuple[str, float]], str | None]:
    """The first token's alternatives as (token, probability), or none and why: a log-probability
    that is not a finite number at most 0 makes every probability of the reply doubtful."""
    content = ((choice.get("logprobs") or {}).get("content")) or []
    if not content:
        return [], None
    first = content[0]
    alternatives = first.get("top_logprobs") or [{"token": first.get("token"), "logprob": first.get("logprob")}]
    read = []
    for alternative in alternatives:
        token, logprob = alternative.get("token"), alternative.get("logprob")
        if token is None or logprob is None:
            continue
        try:
            value = float(logprob)
        except (TypeError, ValueError):
            value = math.nan
        if not math.isfinite(value) or value > LOGPROB_SLACK:
            return [], f"log-probability {logprob!r} of token {str(token)!r} is not a finite number <= 0"
        read.append((str(token), math.exp(min(value, 0.0))))
    return read, None


def checked_number(name: str, value: Any, *, least: float, above: bool = False, whole: bool = False) -> Any:
    """A numeric model-arg, or a ValueError (one line) naming it and what it may be: a bad
    value is refused before any request (``concurrency=0`` would wait for ever)."""
    try:
        number = math.nan if isinstance(value, bool) else float(value)
    except (TypeError, ValueError, OverflowError):
        number = math.nan
    fits = math.isfinite(number) and (number > least if above else number >= least)
    if not fits or (whole and not number.is_integer()):
        kind = "a whole number" if whole else "a finite number"
        bound = f"above {least:g}" if above else f"of {least:g} or more"
        raise ValueError(f"model-arg {name} must be {kind} {bound}, not {value!r}")
    return int(number) if whole else number


class ReplyTooLarge(Exception):
    pass


def retry_after_seconds(value: str | None) -> float:
    """What a ``Retry-After`` header asks: delay-seconds or an HTTP date; 0 when absent or unreadable."""
    if not value:
        return 0.0
    try:
        seconds = float(value.strip())
    except ValueError:
        try:
            when = parsedate_to_datetime(value.strip())
        except (TypeError, ValueError, IndexError):
            return 0.0
        if when.tzinfo is None:
            when = when.replace(tzinfo=timezone.utc)
        seconds = when.timestamp() - time.time()
    return max(0.0, seconds) if math.isfinite(seconds) else 0.0


class OpenAICompatible(Model):
    batch_size = 64

    def __init__(self, model: str, base_url: str = "https://api.openai.com/v1", *,
                 api_key_env: str = "OPENAI_API_KEY", concurrency: int = 8, max_retries: int = 5,
                 timeout: float = 120.0, deadline: float | None = None, backoff: float = 1.0,
                 max_backoff: float = 30.0, max_retry_after: float = 60.0, max_reply_bytes: int = 4 * 1024**2,
                 logprobs: bool = True, top_logprobs: int = 20, image_format: str = "jpeg", image_quality: int = 90,
                 max_tokens: int | None = None, seed: int | None = 0):
        if image_format not in IMAGE_FORMATS:
            raise ValueError(f"image_format must be one of {', '.join(IMAGE_FORMATS)}, not {image_format!r}")
        if not 1 <= int(image_quality) <= 100:
            raise ValueError(f"image_quality must be 1 to 100, not {image_quality}")
        self.concurrency = checked_number("concurrency", concurrency, least=1, whole=True)
        self.max_retries = checked_number("max_retries", max_retries, least=0, whole=True)
        self.timeout = checked_number("timeout", timeout, least=0, above=True)
        self.deadline = self.timeout if deadline is None else checked_number("deadline", deadline, least=0, above=True)
        self.backoff = checked_number("backoff", backoff, least=0)
        self.max_backoff = checked_number("max_backoff", max_backoff, least=0)
        self.max_retry_after = checked_number("max_retry_after", max_retry_after, least=0)
        self.max_reply_bytes = checked_number("max_reply_bytes", max_reply_bytes, least=1, whole=True)
        # The endpoint keeps the URL's userinfo and query (a server may take its key there); every
        # name, fingerprint and message uses the public form without them.
        parts = urlsplit(base_url.rstrip("/"))
        self.endpoint = urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/chat/completions", fragment=""))
        self.url_secrets = url_secrets(base_url)
        self.model, self.base_url = model, public_url(base_url).rstrip("/")
        self.name = f"openai:{model}@{self.base_url}"
        self.api_key_env = api_key_env
        self.logprobs, self.top_logprobs = bool(logprobs), int(top_logprobs)
        self.image_format, self.image_quality = image_format, int(image_quality)
        self.max_tokens, self.seed = max_tokens, seed
        self.encoded = EncodedFrames()
        self.stats = {"http_requests": 0, "retries": 0}
        self._warned = False

    def fingerprint(self) -> dict:  # the key is deliberately absent
        return {"name": "openai", "model": self.model, "base_url": self.base_url, "logprobs": self.logprobs,
                "top_logprobs": self.top_logprobs, "image_format": self.image_format,
                **({"image_quality": self.image_quality} if self.image_format != "png" else {}),
                "max_tokens": self.max_tokens, "seed": self.seed}

    def _payload(self, request: Request, frames: FrameSource, logprobs: bool) -> dict:
        content: list[dict[str, Any]] = []
        if request.video is not None:
            key = stable_hash([content_key(request.video), request.sampling.to_json() if request.sampling else None,
                               self.image_format, self.image_quality])

            def build() -> list[str]:
                shown = frames(request.video, request.sampling).array
                return [image_url(frame, self.image_format, self.image_quality) for frame in shown]

            for url in self.encoded.get(key, build):
                content.append({"type": "image_url", "image_url": {"url": url}})
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
        return self._collect(requests, frames)

    def answer_choice(self, requests: Sequence[Request], frames: FrameSource) -> list[Answer]:
        return self._collect(requests, frames)

    def answer_generation(self, requests: Sequence[Request], frames: FrameSource) -> list[Answer]:
        return self._collect(requests, frames)

    def _collect(self, requests: Sequence[Request], frames: FrameSource) -> list[Answer]:
        answers: list[Answer | None] = [None] * len(requests)
        for arrived in self.stream_answers(requests, frames):
            for index, answer in arrived:
                answers[index] = answer
        return answers  # type: ignore[return-value]

    def stream_answers(self, requests: Sequence[Request], frames: FrameSource) -> Iterator[list[tuple[int, Answer]]]:
        """(index, answer) pairs as the server returns them: each time, all that arrived since
        the last. The requests are sent from an event loop in a thread of its own (so this works
        inside a notebook's loop too); closing the iterator cancels what is still in flight."""
        arrivals: queue.Queue = queue.Queue()
        running: dict[str, Any] = {}
        started = threading.Event()

        def serve() -> None:
            async def main() -> None:
                running["loop"], running["task"] = asyncio.get_running_loop(), asyncio.current_task()
                started.set()
                await self._post_all(requests, frames, arrivals)

            try:
                asyncio.run(main())
            except asyncio.CancelledError:
                pass
            except BaseException as exc:  # a fault of the pipeline itself: raised to the caller
                arrivals.put(exc)
            finally:
                started.set()

        thread = threading.Thread(target=serve, name="timefoil-openai", daemon=True)
        thread.start()
        started.wait()
        remaining = len(requests)
        try:
            while remaining:
                arrived = [arrivals.get()]
                while True:
                    try:
                        arrived.append(arrivals.get_nowait())
                    except queue.Empty:
                        break
                for entry in arrived:
                    if isinstance(entry, BaseException):
                        raise entry
                remaining -= len(arrived)
                yield arrived
        finally:
            if thread.is_alive() and "task" in running:
                running["loop"].call_soon_threadsafe(running["task"].cancel)
            thread.join()

    async def _post_all(self, requests: Sequence[Request], frames: FrameSource, arrivals: queue.Queue) -> None:
        """Workers take requests in order; each builds its payload in a thread (decode, encode
        once per sample), waits for a place among the ``concurrency`` requests on the wire, and
        puts the read answer on ``arrivals``. Twice as many workers as places keep the next
        payloads ready while earlier requests are in flight, and bound the payloads in memory."""
        import httpx

        key = os.environ.get(self.api_key_env, "")
        secrets = [key, *self.url_secrets]
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        if not key and urlsplit(self.endpoint).hostname not in LOCAL_HOSTS and not self._warned:
            self._warned = True
            print(f"timefoil: no API key in {self.api_key_env} for {self.base_url}; requests go unauthenticated",
                  file=sys.stderr)
        in_flight = asyncio.Semaphore(self.concurrency)
        loop = asyncio.get_running_loop()
        queued = iter(enumerate(requests))
        with ThreadPoolExecutor(max_workers=max(1, min(self.concurrency, os.cpu_count() or 1))) as encoders:
            async with httpx.AsyncClient(timeout=self.timeout, headers=headers) as client:
                async def answer(request: Request) -> Answer:
                    reader = READERS.get(request.kind, False)
                    if reader is False:
                        return Answer(error=f"model error: {self.name} cannot answer {request.kind} requests")
                    try:
                        payload = await loop.run_in_executor(encoders, self._payload, request, frames,
                                                             reader is not None)
                    except VideoError as exc:  # the runner records the video's own error for it
                        return Answer(error=str(exc))
                    except Exception as exc:  # a frame that cannot be shown fails its request alone
                        return Answer(error=f"model error: {type(exc).__name__}: {exc}")
                    async with in_flight:
                        result = await self._post(client, payload)
                    return self._read(request, result, reader)

                async def worker() -> None:
                    for index, request in queued:
                        try:
                            answered = await answer(request)
                        except asyncio.CancelledError:
                            raise
                        except Exception as exc:  # an unreadable body fails its request alone
                            answered = Answer(error=f"model error: {type(exc).__name__}: {exc}")
                        arrivals.put((index, clean(answered, secrets)))

                await asyncio.gather(*(worker() for _ in range(min(len(requests), 2 * self.concurrency))))

    async def _post(self, client, payload: dict) -> dict | Answer:
        """The reply to ``payload``, or the request's error once the retries are spent. Each
        attempt is bounded as a whole by ``deadline``; a server's Retry-After stretches the
        wait before the next one (up to ``max_retry_after``)."""
        import httpx

        last = "no attempt"
        started = time.perf_counter()
        asked_wait = 0.0
        for attempt in range(self.max_retries + 1):
            if attempt:
                self.stats["retries"] += 1
                delay = min(self.max_backoff, self.backoff * 2 ** (attempt - 1)) * (0.5 + random.random())
                await asyncio.sleep(max(delay, min(asked_wait, self.max_retry_after)))
            asked_wait = 0.0
            self.stats["http_requests"] += 1
            try:
                status, body, retry_after = await asyncio.wait_for(self._exchange(client, payload), self.deadline)
                if status in RETRY_STATUS:
                    asked_wait = retry_after_seconds(retry_after) if status in RETRY_AFTER_STATUS else 0.0
                    raise TransientError(f"HTTP {status}")
                if status >= 400:  # the body is cut when stored, after redaction
                    return Answer(error=f"api error: HTTP {status}: {body.decode('utf-8', 'replace')}",
                                  meta={"attempts": attempt + 1})
                data = json.loads(body)
                data["choices"][0]["message"]  # a body without a message is malformed
                data["_attempts"], data["_latency"] = attempt + 1, time.perf_counter() - started
                return data
            except ReplyTooLarge:
                return Answer(error=f"api error: reply larger than {self.max_reply_bytes} bytes (max_reply_bytes)",
                              meta={"attempts": attempt + 1})
            except asyncio.TimeoutError:
                last = f"no whole reply within the deadline of {self.deadline:g} s"
            except (TransientError, httpx.TimeoutException, httpx.TransportError) as exc:
                last = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            except (ValueError, KeyError, IndexError, TypeError) as exc:
                last = f"malformed response ({type(exc).__name__})"
        return Answer(error=f"api error after {self.max_retries + 1} attempts: {last}",
                      meta={"attempts": self.max_retries + 1})

    async def _exchange(self, client, payload: dict) -> tuple[int, bytes, str | None]:
        """One HTTP attempt: (status, body, Retry-After). The body is read in pieces and never
        beyond ``max_reply_bytes``: a reply over it raises ReplyTooLarge, an error body is cut
        there (only its start is kept)."""
        async with client.stream("POST", self.endpoint, json=payload) as response:
            if response.status_code in RETRY_STATUS:  # retried: its body is not needed
                return response.status_code, b"", response.headers.get("retry-after")
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > self.max_reply_bytes:
                    if response.status_code >= 400:
                        break
                    raise ReplyTooLarge()
            return response.status_code, bytes(body[:self.max_reply_bytes]), None

    def _read(self, request: Request, result: dict | Answer, read_probs) -> Answer:
        if isinstance(result, Answer):
            return result
        choice = result["choices"][0]
        raw = choice["message"].get("content") or ""
        meta = {"attempts": result["_attempts"], "finish_reason": choice.get("finish_reason")}
        answer = Answer(raw=raw, latency=result["_latency"], meta=meta)
        alternatives, unreadable = _first_token_probs(choice)
        if unreadable:  # said in the record; the answer is read from its text
            meta["logprobs_dropped"] = unreadable
        if alternatives and read_probs is not None:
            read_probs(request, alternatives, answer)
        return answer


def clean(answer: Answer, secrets: Sequence[str]) -> Answer:
    """Every text of an answer (the server's words, in any field) without a credential, the
    error cut to one line afterwards: a key cut in two by the limit could not be found."""
    def redacted(value: Any) -> Any:
        if isinstance(value, str):
            return redact(value, *secrets)
        if isinstance(value, dict):
            return {redacted(k): redacted(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [redacted(v) for v in value]
        return value

    answer.raw, answer.meta = redacted(answer.raw), redacted(answer.meta)
    if answer.error:
        answer.error = " ".join(redacted(answer.error).split())[:ERROR_CHARS]
    return answer


def _yes_no_probs(request: Request, alternatives: list[tuple[str, float]], answer: Answer) -> None:
    words = [(t.strip().lower(), p) for t, p in alternatives]
    answer.probs = {"yes": sum(p for w, p in words if w == "yes"), "no": sum(p for w, p in words if w == "no")}
    answer.meta["tokens"] = [t for t, _ in alternatives if t.strip().lower() in ("yes", "no")]


def _letter_probs(request: Request, alternatives: list[tuple[str, float]], answer: Answer) -> None:
    letters = [(t.strip().strip("().:").upper(), p) for t, p in alternatives]
    answer.probs = {label: sum(p for w, p in letters if w == label) for label in request.labels}


# How each request kind's first-token alternatives are read; None: free generation, no logprobs asked.
READERS = {"entailment": _yes_no_probs, "choice": _letter_probs, "generation": None}
