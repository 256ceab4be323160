"""A served model: its bounds and endpoint checked at load, its frames encoded once per
sample, and the hooks a wire format fills in (where a request goes, with which headers, as
which body, and how a reply reads). Sending is the transport's.

The API key is read from the environment when requests are sent and never stored; a key
written in the base URL (userinfo or query) is used for the requests but cut out of every
stored or printed URL, name and message (so the cache fingerprint does not tell two keys apart).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any, ClassVar, Sequence
from urllib.parse import urlsplit, urlunsplit

from ...core.hashing import stable_hash
from ...core.redaction import SHORTEST_SECRET, public_url, url_secrets
from ..requests import Answer, Request
from ...video.frames import content_key
from ..base import FrameSource, Model
from .frames import IMAGE_FORMATS, Encoded, EncodedFrames, NotSendable, encode_image
from ...core.options import checked_number
from .reading import Reply, first_token_probs
from .stopping import Stop
from .transport import Transport

LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1", "0.0.0.0"}
HEADER_SAFE = re.compile(r"[\x20-\x7e]+")  # printable ASCII: what every header value of a key is sent as
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # what a terminal acts on (tabs, newlines: spaces)
LINE_CHARS = 1000  # a server's words in a printed line, at most
# the body fields that ask for a sampling, whatever the wire format calls them
SAMPLING_FIELDS = ("temperature", "top_p", "seed", "stop", "max_tokens", "cache_prompt")


@dataclass(kw_only=True, eq=False, repr=False)  # no repr: the fields hold the URL as given, key and all
class ServedModel(Transport, Model):
    """A wire format subclasses it as a dataclass whose first fields are ``model`` and
    ``base_url`` (the provider's default), then its own model-args; these are everyone's."""

    image_format: str = "jpeg"
    image_quality: int = 90
    concurrency: int = 8
    max_retries: int = 5
    timeout: float = 120.0
    deadline: float | None = None
    backoff: float = 1.0
    max_backoff: float = 30.0
    max_retry_after: float = 60.0
    max_reply_bytes: int = 4 * 1024**2
    connect_window: float = 15.0  # seconds of refused connections after which no request is sent

    batch_size: ClassVar[int] = 64
    stores_frames: ClassVar[bool] = False  # frames cached on disk are read; none are written
    provider: ClassVar[str] = "served"
    key_required: ClassVar[bool] = True  # a remote server without a key is refused at load (else warned about)

    def __post_init__(self) -> None:
        if self.image_format not in IMAGE_FORMATS:
            raise ValueError(f"image_format must be one of {', '.join(IMAGE_FORMATS)}, not {self.image_format!r}")
        if not 1 <= int(self.image_quality) <= 100:
            raise ValueError(f"image_quality must be 1 to 100, not {self.image_quality}")
        self.image_quality = int(self.image_quality)
        self.concurrency = checked_number("concurrency", self.concurrency, least=1, whole=True)
        self.max_retries = checked_number("max_retries", self.max_retries, least=0, whole=True)
        self.timeout = checked_number("timeout", self.timeout, least=0, above=True)
        self.deadline = self.timeout if self.deadline is None else \
            checked_number("deadline", self.deadline, least=0, above=True)
        self.backoff = checked_number("backoff", self.backoff, least=0)
        self.max_backoff = checked_number("max_backoff", self.max_backoff, least=0)
        self.max_retry_after = checked_number("max_retry_after", self.max_retry_after, least=0)
        self.max_reply_bytes = checked_number("max_reply_bytes", self.max_reply_bytes, least=1, whole=True)
        self.connect_window = checked_number("connect_window", self.connect_window, least=0)
        # The endpoint keeps the URL's userinfo and query (a server may take its key there); every
        # name, fingerprint and message uses the public form without them.
        given = self.base_url.rstrip("/")
        parts = urlsplit(given)
        self.endpoint = urlunsplit(parts._replace(path=parts.path.rstrip("/") + self.path(), fragment=""))
        listing = self.listing_path()
        self.listing = urlunsplit(parts._replace(path=parts.path.rstrip("/") + listing, fragment="")) \
            if listing else None
        self.url_secrets = url_secrets(given)
        self.base_url = public_url(given).rstrip("/")
        self.name = f"{self.provider}:{self.model}@{self.base_url}"
        self.encoded = EncodedFrames()
        self.stats = {"http_requests": 0, "retries": 0}
        self._warned = False
        self.stopped = None  # the error no retry passes, once one came: later requests are not sent
        self.waiting: set = set()  # waits before a retry, woken when the asking stops
        self.refused_since: float | None = None  # when connections began to be refused (none since)
        self.identity: dict | None = None  # the served model, as the server lists it (identify)
        self.identity_note = "not asked"  # why there is none
        self.answering: str | None = None  # the model replies name, once the first one came
        self.sampled: dict[str, list[dict]] = {}  # each request kind's sampling, as sent
        if self.key_required and not self.api_key() and not self._local():
            raise ValueError(f"no API key for {self.name}: set {' or '.join(self.key_names())}")
        held = next((name for name in self.key_names() if os.environ.get(name)), None)
        if held is not None and len(os.environ[held]) < SHORTEST_SECRET:  # it could not be cut out of messages
            raise ValueError(f"the key in {held} is {len(os.environ[held])} characters long; a key shorter than "
                             f"{SHORTEST_SECRET} cannot be told apart from answer text: unset {held} for a "
                             "server that takes no key")
        if held is not None and not HEADER_SAFE.fullmatch(os.environ[held]):  # every request would fail to encode
            raise ValueError(f"the key in {held} holds a character an HTTP header cannot carry (beyond ASCII, or a "
                             f"control character such as a newline): set {held} to the key alone")

    # -- the wire format's part ---------------------------------------------------------------
    def path(self) -> str:
        """Where requests go, after the base URL's path."""
        raise NotImplementedError

    def key_names(self) -> tuple[str, ...]:
        """The environment variables the key is read from, the first one set winning."""
        raise NotImplementedError

    def headers(self, key: str) -> dict[str, str]:
        """Every request's headers; ``key`` is empty where none is set (a local server)."""
        raise NotImplementedError

    def body(self, request: Request, shown: list[Encoded], logprobs: bool) -> dict:
        """The request's JSON body; ``logprobs``: whether its kind is read from log-probabilities."""
        raise NotImplementedError

    def reply(self, data: Any) -> Reply:
        """The reply's text (and first-token alternatives); a KeyError, IndexError, TypeError or
        AttributeError says the body is malformed (retried)."""
        raise NotImplementedError

    def asked_delay(self, body: bytes) -> float:
        """Seconds a refused request's body (429, 503) asks to wait, where no Retry-After
        header says it; 0 where the wire format puts none there or it cannot be read."""
        return 0.0

    def image_limit(self) -> int | None:
        """The most images one request may show; None: no limit of the provider's."""
        return None

    def listing_path(self) -> str | None:
        """Where the server lists the models it serves, after the base URL's path; None: nowhere."""
        return None

    def replied_model(self, data: Any) -> str | None:
        """The model a successful reply names."""
        named = data.get("model") if isinstance(data, dict) else None
        return named if isinstance(named, str) else None

    def sampling(self, payload: dict) -> dict:
        """What a request body asks of the sampling (temperature, seed, stop, token budget); a
        request sent without a stop says so (``"stop": None``) rather than leaving it out."""
        return {"stop": None, **{k: payload[k] for k in SAMPLING_FIELDS if k in payload}}

    # -- the served model's identity -------------------------------------------------------------
    def identify(self) -> None:
        """Read once, when the model loads, which model the server serves (``identity``); raises
        ValueError (one line) where the server refuses the key or cannot be reached."""
        if self.listing is None:
            self.identity_note = f"{self.provider} lists no model: answers are keyed by the spec alone"
            return
        from .identity import read_listing

        self.identity, why = read_listing(self)
        self.identity_note = "" if self.identity else f"{why}: answers are keyed by the spec alone"

    def served_fingerprint(self) -> dict:
        """The served model's identity, for the fingerprint: nothing where the server names none
        (the key stays what it was before servers were asked)."""
        return {"served": self.identity} if self.identity else {}

    def other_answerer(self, named: str | None) -> Stop | None:
        """The stop for a reply named by another model than the one the run is keyed by: the
        listed one where the server answers any name with it, else the first reply's."""
        if not named:
            return None
        expected = self.identity.get("id") if self.identity and self.identity.get("answers_any_name") \
            else self.answering
        if expected is None:
            self.answering = named
            return None
        if named == expected:
            return None
        said = (f"the server at {self.base_url} now answers as {named!r}, not {expected!r} which this run is "
                "keyed by (another model was started there); serve that model again, or start a new --out")
        return Stop(f"api error: {said}", said)

    def note_sampling(self, kind: str, payload: dict) -> None:
        asked = self.sampling(payload)
        seen = self.sampled.setdefault(kind, [])
        if asked not in seen and len(seen) < 8:
            seen.append(asked)

    @property
    def notes(self) -> dict:
        """For run.json: the served model (or why none is named) and the sampling each request
        kind asked, as sent."""
        served = {"served_model": self.identity or f"not named ({self.identity_note})"}
        if self.answering:
            served["replies_named"] = self.answering
        sampled = {kind: seen[0] if len(seen) == 1 else seen for kind, seen in sorted(self.sampled.items())}
        return {**served, **({"sampling": sampled} if sampled else {})}

    def clean_text(self, text: str) -> str:
        """A server's words as a message holds them: keys cut out, one line."""
        from ...core.redaction import redact

        return " ".join(CONTROL.sub("", redact(text, self.api_key(), *self.url_secrets)).split())[:LINE_CHARS]

    def shown(self, request: Request, frames: FrameSource) -> list[Encoded]:
        """The request's frames as images, encoded once per sample."""
        key = stable_hash([content_key(request.video), request.sampling.to_json() if request.sampling else None,
                           self.image_format, self.image_quality])

        def build() -> list[Encoded]:
            shown = frames(request.video, request.sampling).array
            limit = self.image_limit()
            if limit is not None and len(shown) > limit:
                raise NotSendable(f"{self.provider} takes at most {limit} images per request (max_images); "
                                  f"this request shows {len(shown)} frames: sample fewer (--frames, --max-frames)")
            return [encode_image(frame, self.image_format, self.image_quality) for frame in shown]

        return self.encoded.get(key, build)

    def shown_fingerprint(self) -> dict:
        return {"image_format": self.image_format,
                **({"image_quality": self.image_quality} if self.image_format != "png" else {})}

    # -- the transport ---------------------------------------------------------------------------
    def api_key(self) -> str:
        return next((os.environ[name] for name in self.key_names() if os.environ.get(name)), "")

    def _local(self) -> bool:
        return urlsplit(self.endpoint).hostname in LOCAL_HOSTS

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

    def _read(self, request: Request, result: Reply | Answer, read_probs) -> Answer:
        if isinstance(result, Answer):
            return result
        meta = {"attempts": result.attempts, "finish_reason": result.finish_reason}
        answer = Answer(raw=result.text, latency=result.latency, meta=meta)
        alternatives, unreadable = first_token_probs(result.alternatives)
        if unreadable:  # said in the record; the answer is read from its text
            meta["logprobs_dropped"] = unreadable
        if alternatives and read_probs is not None:
            read_probs(request, alternatives, answer)
        return answer
