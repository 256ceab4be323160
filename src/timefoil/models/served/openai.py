"""The OpenAI chat-completions wire format: hosted OpenAI, vLLM, SGLang and every server that
speaks it. Frames go as ``image_url`` data URLs (JPEG at quality 90 by default; PNG or WebP on
request). When the server returns ``logprobs``, Yes/No and option-letter probabilities are
read from the first token's top alternatives; otherwise the greedy answer alone is used
(StrictVLE still works). A letter or Yes/No answer is sent with no stop string and a token limit
a reply that reasons before its answer fits in (``stops.answer_budget``): a stop at a line break
or a full stop cuts off a changed mind ("Yes.\nCorrection: no."). ``stop_when_decided=true``
sends the stops of earlier releases (a letter at its first line break, Yes/No also at its first
full stop); a reply that ended at one is then read only where the part received decides it, and
counted as cut where it does not. Chain-of-thought variants are asked for free generation.
Log-probabilities that are not finite numbers are dropped (the answer
is read from its text) and the answer's ``meta`` says so."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any, ClassVar

from ..requests import Answer, Request
from ..stops import ANSWER_TOKENS, answer_budget
from ...core.options import checked_count
from .frames import Encoded
from .model import ServedModel
from .reading import Reply

ENV_NAME = re.compile(r"[A-Z_][A-Z0-9_]*")
LLAMA_CPP = "llamacpp"  # what llama-server's model listing says owns its model


def refuse_key_env(name: object, default: str) -> None:
    """``api_key_env`` names the variable that holds the key, never the key: anything else is
    refused without repeating it (a key given there would be stored in run.json, and sent as
    nothing), and a variable named that is not set is refused too (the default may be unset:
    a server of one's own may take no key)."""
    if not isinstance(name, str) or not ENV_NAME.fullmatch(name):
        raise ValueError("api_key_env must be the name of an environment variable that holds the key (capitals, "
                         "digits and _, as OPENAI_API_KEY), not the key itself; the value given is not shown here")
    if name != default and not os.environ.get(name):
        raise ValueError(f"api_key_env names {name}, which is not set: export {name}=<key> first")


# The stops ``stop_when_decided=true`` sends (the default of earlier releases): SmolLM2 on
# llama-server echoes the options on the lines after a letter and justifies a "No." after its
# full stop, but a changed mind follows a line break or a full stop too.
DECIDED_AT = {"choice": ["\n"], "entailment": ["\n", "."]}


@dataclass(eq=False, repr=False)
class OpenAICompatible(ServedModel):
    model: str
    base_url: str = "https://api.openai.com/v1"
    api_key_env: str = "OPENAI_API_KEY"
    logprobs: bool = True
    top_logprobs: int = 20
    max_tokens: int | None = None
    seed: int | None = 0
    stop_when_decided: bool = False
    cache_prompt: bool | None = None  # None: false where the server is llama-server (see deterministic_cache)

    provider: ClassVar[str] = "openai"
    key_required: ClassVar[bool] = False  # a server of one's own may take none: warned about, not refused

    def __post_init__(self) -> None:
        refuse_key_env(self.api_key_env, type(self).api_key_env)
        self.logprobs = bool(self.logprobs)
        self.stop_when_decided = bool(self.stop_when_decided)
        if self.cache_prompt is not None:
            self.cache_prompt = bool(self.cache_prompt)
        self.top_logprobs = checked_count("top_logprobs", self.top_logprobs, least=0)
        self.max_tokens = checked_count("max_tokens", self.max_tokens, optional=True)
        super().__post_init__()

    def fingerprint(self) -> dict:  # the key is deliberately absent
        cache = self.sent_cache_prompt
        return {"name": "openai", "model": self.model, "base_url": self.base_url, "logprobs": self.logprobs,
                "top_logprobs": self.top_logprobs, **self.shown_fingerprint(),
                "max_tokens": self.max_tokens, "seed": self.seed, "stop_when_decided": self.stop_when_decided,
                # answers cached under another default token limit are asked again
                **self.served_fingerprint(), "answer_tokens": ANSWER_TOKENS,
                **({"cache_prompt": cache} if cache is not None else {})}

    @property
    def sent_cache_prompt(self) -> bool | None:
        """llama-server's ``cache_prompt``, where it is sent: false unless asked otherwise, since
        a reused prompt cache changes answers with what the slot held before (a resumed run then
        differs from an uninterrupted one); None (not sent) to any other server, which may refuse
        a field it does not know."""
        if not (self.identity and self.identity.get("owned_by") == LLAMA_CPP):
            return None
        return False if self.cache_prompt is None else self.cache_prompt

    def path(self) -> str:
        return "/chat/completions"

    def listing_path(self) -> str:
        return "/models"

    def key_names(self) -> tuple[str, ...]:
        return (self.api_key_env,)

    def headers(self, key: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {key}"} if key else {}

    def body(self, request: Request, shown: list[Encoded], logprobs: bool) -> dict:
        content: list[dict[str, Any]] = [{"type": "image_url", "image_url": {"url": medium.url}} for medium in shown]
        content.append({"type": "text", "text": request.text})
        messages = [{"role": "system", "content": request.system}] if request.system else []
        messages.append({"role": "user", "content": content})
        payload: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": 0,
                                   "max_tokens": self.max_tokens or answer_budget(request.kind, request.max_tokens)}
        if self.seed is not None:
            payload["seed"] = self.seed
        if self.stops(request):
            payload["stop"] = self.stops(request)
        if self.logprobs and logprobs:
            payload.update(logprobs=True, top_logprobs=self.top_logprobs)
        if self.sent_cache_prompt is not None:
            payload["cache_prompt"] = self.sent_cache_prompt
        return payload

    def reply(self, data: Any) -> Reply:
        choice = data["choices"][0]
        text = choice["message"].get("content") or ""
        content = ((choice.get("logprobs") or {}).get("content")) or []
        alternatives = []
        if content:
            first = content[0]
            listed = first.get("top_logprobs") or [{"token": first.get("token"), "logprob": first.get("logprob")}]
            alternatives = [(entry.get("token"), entry.get("logprob")) for entry in listed]
        reply = Reply(text, choice.get("finish_reason"), alternatives)
        if "stop_reason" in choice:  # vLLM: the stop string that matched, None at the end token
            reply.stop_reason = choice["stop_reason"]
        return reply

    def stops(self, request: Request) -> list[str]:
        return list(DECIDED_AT[request.kind]) if self.stop_when_decided and request.kind in DECIDED_AT else []

    def _read(self, request: Request, result: Reply | Answer, read_probs) -> Answer:
        """The answer, with the stops it was sent with where a reply may have ended at one: its
        reading knows the reply may go on past them (models/stops.py, ``cut``)."""
        answer = super()._read(request, result, read_probs)
        if isinstance(result, Reply) and self.stops(request):
            answer.meta["stop"] = self.stops(request)
            if hasattr(result, "stop_reason"):
                answer.meta["stop_reason"] = result.stop_reason
        return answer
