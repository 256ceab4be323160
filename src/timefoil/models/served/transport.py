"""What every served model shares, whatever its wire format: requests sent concurrently up
to a limit from an event loop of their own, answers streamed back as they arrive, retries,
deadlines, Retry-After and a cap on replies.

429, 5xx, timeouts, dropped connections and malformed bodies are retried with exponential
backoff and jitter, a bounded number of times, after which the request is recorded as an
error; the body of a retried 500, 502, 504 (or 408, 409, 425) is read and ends that error,
since it may say why the server will never answer (llama-server without a vision projector: "image input is not
supported"). ``timeout`` bounds each network read and ``deadline`` (``timeout`` by default) the
whole attempt, a slowly dripped body included; a reply body over ``max_reply_bytes`` (4 MiB by
default, which also bounds the stored answer text) is that request's error. An error body is
read up to ``ERROR_READ`` bytes whatever ``max_reply_bytes`` says, so its key is found whole
and cut out before the stored message is cut. A 429 or 503 with ``Retry-After`` (seconds or an
HTTP date), or a body that says when to come back (the wire format's ``asked_delay``), waits as
long as the server asks before the next attempt, but never more than ``max_retry_after``
seconds (60 by default). A redirect (3xx) is its request's error at once: the request is not
sent on to an address the user did not give. Every answer is stripped of the key (and of the
URL's) before it leaves.
"""
from __future__ import annotations

import asyncio
import json
import os
import queue
import random
import sys
import threading
import time
from typing import Any, Iterator, Sequence

from ..requests import Answer, Request
from ...video.decode import VideoError
from ...core.redaction import without_cut_secret
from ..base import FrameSource
from .frames import NotSendable
from .limits import ReplyTooLarge, TransientError, clean, retry_after_seconds
from .reading import READERS, Reply

# 529: a provider overloaded (Anthropic's word for a 503)
RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504, 529}
RETRY_AFTER_STATUS = {429, 503, 529}  # the statuses whose Retry-After says when to come back
ERROR_READ = 64 * 1024  # bytes of an error body read: far past the stored message, which is cut after redaction


def samples_in_order(requests: Sequence[Request]) -> list[list[int]]:
    """The indices of the requests that show each sample (video and sampling), samples in the
    order their first request comes; a request without a video is a sample of its own."""
    groups: dict[Any, list[int]] = {}
    for index, request in enumerate(requests):
        sample = (request.video, request.sampling) if request.video is not None else ("blind", index)
        groups.setdefault(sample, []).append(index)
    return list(groups.values())


class Transport:
    """The sending half of ``ServedModel`` (which holds the bounds, the endpoint and the wire
    format's ``headers``, ``shown``, ``body``, ``reply`` and ``_read`` it uses)."""

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

        thread = threading.Thread(target=serve, name=f"timefoil-{self.provider}", daemon=True)
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

    async def _post_all(self, requests: Sequence[Request], frames: FrameSource, arrivals) -> None:
        """Each shown sample (video and sampling) is built once, by one task: decoded and encoded
        in a pool of one thread per core, in the order requests come, so builds of different
        samples run side by side and no thread waits for another's build. A sample's requests
        take a place among the ``concurrency`` on the wire only once its media are ready, so a
        slow build holds no place while quicker samples go out. At most ``2 x concurrency``
        samples (and never fewer than the cores) are admitted at a time, which bounds the media
        built ahead of the wire."""
        from concurrent.futures import ThreadPoolExecutor

        import httpx

        key = self.api_key()
        secrets = [key, *self.url_secrets]
        if not key and not self._local() and not self._warned:
            self._warned = True
            print(f"timefoil: no API key in {' or '.join(self.key_names())} for {self.base_url}; "
                  "requests go unauthenticated", file=sys.stderr)
        cores = max(1, os.cpu_count() or 1)
        in_flight = asyncio.Semaphore(self.concurrency)
        admitted = asyncio.Semaphore(max(2 * self.concurrency, cores))
        loop = asyncio.get_running_loop()
        with ThreadPoolExecutor(max_workers=cores) as builders:
            async with httpx.AsyncClient(timeout=self.timeout, headers=self.headers(key)) as client:
                async def send(index: int, shown: list) -> None:
                    request = requests[index]
                    reader = READERS.get(request.kind, False)
                    try:
                        if reader is False:
                            answered = Answer(error=f"model error: {self.name} cannot answer {request.kind} requests")
                        else:
                            payload = self.body(request, shown, reader is not None)
                            async with in_flight:
                                result = await self._post(client, payload)
                            answered = self._read(request, result, reader)
                    except asyncio.CancelledError:
                        raise
                    except Exception as exc:  # an unreadable body fails its request alone
                        answered = Answer(error=f"model error: {type(exc).__name__}: {exc}")
                    arrivals.put((index, clean(answered, secrets)))

                async def sample(indices: list[int]) -> None:
                    first = requests[indices[0]]
                    try:
                        try:
                            shown = [] if first.video is None else \
                                await loop.run_in_executor(builders, self.shown, first, frames)
                        except VideoError as exc:  # the runner records the video's own error for it
                            failed = Answer(error=str(exc))
                        except NotSendable as exc:  # what this provider cannot be sent, in its own words
                            failed = Answer(error=f"model error: {exc}")
                        except Exception as exc:  # a frame that cannot be shown fails its requests alone
                            failed = Answer(error=f"model error: {type(exc).__name__}: {exc}")
                        else:
                            await asyncio.gather(*(send(index, shown) for index in indices))
                            return
                        for index in indices:
                            arrivals.put((index, clean(failed, secrets)))
                    finally:
                        admitted.release()

                running = []
                for indices in samples_in_order(requests):
                    await admitted.acquire()
                    running.append(asyncio.ensure_future(sample(indices)))
                await asyncio.gather(*running)

    async def _post(self, client, payload: dict) -> Reply | Answer:
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
                status, body, headers = await asyncio.wait_for(self._exchange(client, payload), self.deadline)
                if status in RETRY_STATUS:
                    if status in RETRY_AFTER_STATUS:
                        said = headers.get("retry-after")
                        asked_wait = retry_after_seconds(said) if said else self.asked_delay(body)
                        raise TransientError(f"HTTP {status}")
                    # what the server said is kept for the error once the retries are spent: a 500
                    # may say why it will never answer (llama-server: "image input is not supported")
                    raise TransientError(f"HTTP {status}: {self._error_text(body)}" if body else f"HTTP {status}")
                if 300 <= status < 400:  # never retried: the same request gets the same answer
                    return Answer(error=f"api error: HTTP {status}: a redirect, not followed (give the address it "
                                        f"names as the base URL): {headers.get('location') or 'no address given'}",
                                  meta={"attempts": attempt + 1})
                if status >= 400:  # the body is cut when stored, after redaction
                    return Answer(error=f"api error: HTTP {status}: {self._error_text(body)}",
                                  meta={"attempts": attempt + 1})
                read = self.reply(json.loads(body))  # a malformed body raises here, and is retried
                read.attempts, read.latency = attempt + 1, time.perf_counter() - started
                return read
            except ReplyTooLarge:
                return Answer(error=f"api error: reply larger than {self.max_reply_bytes} bytes (max_reply_bytes)",
                              meta={"attempts": attempt + 1})
            except asyncio.TimeoutError:
                last = f"no whole reply within the deadline of {self.deadline:g} s"
            except (TransientError, httpx.TimeoutException, httpx.TransportError) as exc:
                last = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
                last = f"malformed response ({type(exc).__name__})"
        return Answer(error=f"api error after {self.max_retries + 1} attempts: {last}",
                      meta={"attempts": self.max_retries + 1})

    def _error_text(self, body: bytes) -> str:
        text = body.decode("utf-8", "replace")
        if len(body) >= ERROR_READ:  # cut where it was read: a key may be cut in two there
            text = without_cut_secret(text, self.api_key(), *self.url_secrets)
        return text

    async def _exchange(self, client, payload: dict) -> tuple[int, bytes, Any]:
        """One HTTP attempt: (status, body, headers). A success's body is read in pieces and
        never beyond ``max_reply_bytes``: a reply over it raises ReplyTooLarge. Any other body
        is read up to ``ERROR_READ`` bytes and cut there (only its start is kept), except a
        429/503/529 whose Retry-After header already says when to come back."""
        async with client.stream("POST", self.endpoint, json=payload) as response:
            status = response.status_code
            if status in RETRY_AFTER_STATUS and "retry-after" in response.headers:
                return status, b"", response.headers
            limit = self.max_reply_bytes if status < 300 else ERROR_READ
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > limit:
                    if status >= 300:
                        break
                    raise ReplyTooLarge()
            return status, bytes(body[:limit]), response.headers
