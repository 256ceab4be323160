"""What every served model shares, whatever its wire format: requests sent concurrently up
to a limit from an event loop of their own, answers streamed back as they arrive, retries,
deadlines, Retry-After and a cap on replies.

429, 5xx, timeouts, dropped connections and malformed bodies are retried with exponential
backoff and jitter, a bounded number of times, after which the request is recorded as an
error; the body of a retried status is read and ends that error, since it says why the server
cannot answer yet (llama-server's 503 "Loading model"). ``timeout`` bounds each network read
and ``deadline`` (``timeout`` by default) the whole attempt, a slowly dripped body included; a
reply body over ``max_reply_bytes`` (4 MiB by default, which also bounds the stored answer
text) is that request's error. An error body is
read up to ``ERROR_READ`` bytes whatever ``max_reply_bytes`` says, so its key is found whole
and cut out before the stored message is cut. A 429 or 503 with ``Retry-After`` (seconds or an
HTTP date), or a body that says when to come back (the wire format's ``asked_delay``), waits as
long as the server asks before the next attempt, but never more than ``max_retry_after``
seconds (60 by default). A redirect (3xx) is its request's error at once: the request is not
sent on to an address the user did not give. Every answer is stripped of the key (and of the
URL's) before it leaves.

An error no retry can pass (``stopping``: a key refused, nothing at the address, a form the
server refuses, images shown to a server without vision, no connection for ``connect_window``
seconds, another model answering than the one the run is keyed by) stops the asking: one line
on stderr at the first, and every request not yet answered is recorded with that error, unsent.
The sampling each request kind asked (``sampled``) is kept for run.json.
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
from .proxies import client_options, proxy_for
from .reading import READERS, Reply
from .stopping import Stop, refused_stop, stop_for

# 529: a provider overloaded (Anthropic's word for a 503)
RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504, 529}
RETRY_AFTER_STATUS = {429, 503, 529}  # the statuses whose Retry-After says when to come back
ERROR_READ = 64 * 1024  # bytes of an error body read: far past the stored message, which is cut after redaction


class Stopped(Exception):
    """A request not sent: the asking stopped at an error no retry passes."""


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
            async with httpx.AsyncClient(timeout=self.timeout, headers=self.headers(key),
                                         **client_options(self.endpoint)) as client:
                async def send(index: int, shown: list) -> None:
                    request = requests[index]
                    reader = READERS.get(request.kind, False)
                    try:
                        if reader is False:
                            answered = Answer(error=f"model error: {self.name} cannot answer {request.kind} requests")
                        else:
                            payload = self.body(request, shown, reader is not None)
                            self.note_sampling(request.kind, payload)
                            async with in_flight:
                                result = await self._post(client, payload, bool(shown))
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
                            if self.stopped is not None and self.stopped.applies(first.video is not None):
                                raise Stopped(self.stopped.error)  # nothing built for requests never sent
                            shown = [] if first.video is None else \
                                await loop.run_in_executor(builders, self.shown, first, frames)
                        except Stopped as exc:
                            failed = Answer(error=str(exc), meta={"attempts": 0})
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

    async def _post(self, client, payload: dict, shows_media: bool = False) -> Reply | Answer:
        """The reply to ``payload``, or the request's error once the retries are spent. Each
        attempt is bounded as a whole by ``deadline``; a server's Retry-After stretches the
        wait before the next one (up to ``max_retry_after``). An error no retry can pass stops
        this request and every later one (``stopped``); a request is not sent once one has."""
        import httpx

        last = "no attempt"
        started = time.perf_counter()
        asked_wait = 0.0
        for attempt in range(self.max_retries + 1):
            if self.stopped is not None and self.stopped.applies(shows_media):
                return Answer(error=self.stopped.error, meta={"attempts": attempt})
            if attempt:
                self.stats["retries"] += 1
                delay = min(self.max_backoff, self.backoff * 2 ** (attempt - 1)) * (0.5 + random.random())
                await self._pause(max(delay, min(asked_wait, self.max_retry_after)))
                if self.stopped is not None and self.stopped.applies(shows_media):
                    return Answer(error=self.stopped.error, meta={"attempts": attempt})
            asked_wait = 0.0
            self.stats["http_requests"] += 1
            try:
                status, body, headers = await asyncio.wait_for(self._exchange(client, payload), self.deadline)
                self.refused_since = None  # the server is there
                text = self._error_text(body) if status >= 300 and body else ""
                stop = stop_for(status, text, shows_media, self.base_url, self.key_names()) if status >= 400 else None
                if stop is not None:
                    return self._stop(stop, attempt + 1)
                if status in RETRY_STATUS:
                    if status in RETRY_AFTER_STATUS:
                        said = headers.get("retry-after")
                        asked_wait = retry_after_seconds(said) if said else self.asked_delay(body)
                    # what the server said is kept for the error once the retries are spent: a 503
                    # says why it cannot answer yet (llama-server: "Loading model")
                    raise TransientError(f"HTTP {status}: {text}" if text else f"HTTP {status}")
                if 300 <= status < 400:  # never retried: the same request gets the same answer
                    return Answer(error=f"api error: HTTP {status}: a redirect, not followed (give the address it "
                                        f"names as the base URL): {headers.get('location') or 'no address given'}",
                                  meta={"attempts": attempt + 1})
                if status >= 400:  # the body is cut when stored, after redaction
                    return Answer(error=f"api error: HTTP {status}: {text}", meta={"attempts": attempt + 1})
                data = json.loads(body)
                read = self.reply(data)  # a malformed body raises here, and is retried
                read.attempts, read.latency = attempt + 1, time.perf_counter() - started
                read.model = self.replied_model(data)
                other = self.other_answerer(read.model)
                return read if other is None else self._stop(other, attempt + 1)
            except ReplyTooLarge:
                return Answer(error=f"api error: reply larger than {self.max_reply_bytes} bytes (max_reply_bytes)",
                              meta={"attempts": attempt + 1})
            except asyncio.TimeoutError:
                last = f"no whole reply within the deadline of {self.deadline:g} s"
            except httpx.ConnectError as exc:
                last = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
                now = time.monotonic()
                self.refused_since = self.refused_since or now
                if now - self.refused_since >= self.connect_window:
                    return self._stop(refused_stop(now - self.refused_since, last, self.base_url,
                                                   proxy_for(self.endpoint)), attempt + 1)
            except (TransientError, httpx.TimeoutException, httpx.TransportError) as exc:
                last = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
                last = f"malformed response ({type(exc).__name__})"
        proxy = proxy_for(self.endpoint)
        if proxy is not None and last.startswith(("ConnectError", "ProxyError", "ConnectTimeout")):
            last += f" (through {proxy.said()})"
        return Answer(error=f"api error after {self.max_retries + 1} attempts: {last}",
                      meta={"attempts": self.max_retries + 1})

    def _stop(self, stop: Stop, attempts: int) -> Answer:
        """The first error no retry passes: said once, kept for every later request."""
        if self.stopped is None or (self.stopped.media_only and not stop.media_only):
            self.stopped = stop
            scope = "that show frames " if stop.media_only else ""
            print(f"timefoil: {self.clean_text(stop.said)}; the requests {scope}not answered yet are recorded "
                  "with this error, unsent (ask them again with --retry-errors)", file=sys.stderr, flush=True)
        for waiting in self.waiting:
            waiting.set()
        return Answer(error=stop.error, meta={"attempts": attempts})

    async def _pause(self, seconds: float) -> None:
        """A wait before the next attempt, cut short once the asking stops."""
        woken = asyncio.Event()
        self.waiting.add(woken)
        try:
            await asyncio.wait_for(woken.wait(), seconds)
        except asyncio.TimeoutError:
            pass
        finally:
            self.waiting.discard(woken)

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
