"""Fake Gemini (generateContent) and Anthropic (Messages) servers on 127.0.0.1. Each checks
every request against the API's documented shape (path, headers, body fields) and answers in
the documented reply shape; a request that breaks the shape is answered 400 and listed in
``violations``, which a test expects empty. Answers depend only on the question's text."""
from __future__ import annotations

import base64
import hashlib
import json
import math
import time
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

IMAGE_TYPES = {"image/jpeg", "image/png", "image/webp", "image/gif"}


def answer_for(text: str) -> tuple[str, float]:
    """The answer to a question, and the probability of Yes (or of A)."""
    u = int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) / 16**8
    if "option's letter" in text:  # a choice question
        return ("A" if u > 0.5 else "B"), u
    return ("Yes" if u > 0.5 else "No"), u


def decodable(data) -> bool:
    try:
        return isinstance(data, str) and len(base64.b64decode(data, validate=True)) > 0
    except ValueError:
        return False


def gemini_violations(path: str, headers, body: dict, model: str, key: str) -> list[str]:
    wrong = []
    parts = urlsplit(path)
    if parts.path != f"/v1beta/models/{model}:generateContent" or parts.query:
        wrong.append(f"path {path}")
    if headers.get("x-goog-api-key") != key:
        wrong.append("x-goog-api-key")
    if "authorization" in {name.lower() for name in headers} or "x-api-key" in {n.lower() for n in headers}:
        wrong.append("a header of another provider")
    if not headers.get("content-type", "").startswith("application/json"):
        wrong.append("content-type")
    if set(body) - {"contents", "generationConfig", "systemInstruction"}:
        wrong.append(f"fields {sorted(body)}")
    contents = body.get("contents")
    if not (isinstance(contents, list) and len(contents) == 1 and contents[0].get("role") == "user"):
        return wrong + ["contents"]
    *media, question = contents[0].get("parts") or [{}]
    if set(question) != {"text"} or not isinstance(question["text"], str):
        wrong.append("the last part is not the question's text")
    for part in media:
        inline = part.get("inlineData") or {}
        if set(part) != {"inlineData"} or set(inline) != {"mimeType", "data"} or not decodable(inline.get("data")) \
                or inline.get("mimeType") not in IMAGE_TYPES | {"video/mp4"}:
            wrong.append("an inlineData part")
    config = body.get("generationConfig") or {}
    if set(config) - {"temperature", "maxOutputTokens", "seed", "responseLogprobs", "logprobs", "thinkingConfig"} or \
            config.get("temperature") != 0 or not isinstance(config.get("maxOutputTokens"), int):
        wrong.append(f"generationConfig {config}")
    thinking = config.get("thinkingConfig", {"thinkingBudget": 0})
    if set(thinking) != {"thinkingBudget"} or not isinstance(thinking["thinkingBudget"], int) or \
            thinking["thinkingBudget"] < 0:
        wrong.append(f"thinkingConfig {thinking}")
    if ("logprobs" in config) != (config.get("responseLogprobs") is True):
        wrong.append("logprobs without responseLogprobs")
    if "systemInstruction" in body and not isinstance(body["systemInstruction"]["parts"][0]["text"], str):
        wrong.append("systemInstruction")
    return wrong


NO_TEMPERATURE = ("claude-opus-4-7", "claude-opus-4-8")  # they answer 400 "temperature is deprecated for this model"


def anthropic_violations(path: str, headers, body: dict, model: str, key: str,
                         version: str = "2023-06-01") -> list[str]:
    wrong = []
    if path != "/v1/messages":
        wrong.append(f"path {path}")
    if headers.get("x-api-key") != key or headers.get("anthropic-version") != version:
        wrong.append("x-api-key or anthropic-version")
    if "temperature" in body and any(name in model for name in NO_TEMPERATURE):
        wrong.append("temperature is deprecated for this model")
    if "authorization" in {name.lower() for name in headers} or "x-goog-api-key" in {n.lower() for n in headers}:
        wrong.append("a header of another provider")
    if set(body) - {"model", "max_tokens", "messages", "system", "temperature"} or body.get("model") != model:
        wrong.append(f"fields {sorted(body)}")
    if not (isinstance(body.get("max_tokens"), int) and body["max_tokens"] >= 1):
        wrong.append("max_tokens (required)")
    if not 0 <= body.get("temperature", 1) <= 1 or not isinstance(body.get("system", ""), str):
        wrong.append("temperature or system")
    messages = body.get("messages")
    if not (isinstance(messages, list) and len(messages) == 1 and messages[0].get("role") == "user"):
        return wrong + ["messages"]
    *images, question = messages[0].get("content") or [{}]
    if question != {"type": "text", "text": question.get("text")} or not isinstance(question["text"], str):
        wrong.append("the last block is not the question's text")
    for block in images:
        source = block.get("source") or {}
        if block.get("type") != "image" or set(source) != {"type", "media_type", "data"} or \
                source["type"] != "base64" or source["media_type"] not in IMAGE_TYPES or not decodable(source["data"]):
            wrong.append("an image block")
    if len(images) > 100:
        wrong.append(f"{len(images)} images (the API takes 100)")
    return wrong


def gemini_reply(body: dict) -> dict:
    text = body["contents"][0]["parts"][-1]["text"]
    said, u = answer_for(text)
    candidate = {"content": {"parts": [{"text": said}], "role": "model"}, "finishReason": "STOP", "index": 0}
    if body["generationConfig"].get("responseLogprobs"):
        top = [{"token": "Yes", "tokenId": 1, "logProbability": math.log(max(u, 1e-6))},
               {"token": " no", "tokenId": 2, "logProbability": math.log(max(1 - u, 1e-6))},
               {"token": "A", "tokenId": 3, "logProbability": math.log(max(u, 1e-6))},
               {"token": "B", "tokenId": 4, "logProbability": math.log(max(1 - u, 1e-6))}]
        candidate["logprobsResult"] = {"topCandidates": [{"candidates": top}],
                                       "chosenCandidates": [{"token": said, "logProbability": -0.1}]}
    return {"candidates": [candidate], "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 1,
                                                         "totalTokenCount": 11}, "modelVersion": "m"}


def anthropic_reply(body: dict) -> dict:
    said, _ = answer_for(body["messages"][0]["content"][-1]["text"])
    return {"id": "msg_01", "type": "message", "role": "assistant", "model": body["model"],
            "content": [{"type": "text", "text": said}], "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 1}}


SHAPES = {"gemini": (gemini_violations, gemini_reply, "/v1beta"),  # check, reply, the base URL's path
          "anthropic": (anthropic_violations, anthropic_reply, "")}


class JsonHandler(BaseHTTPRequestHandler):
    """A quiet handler that answers JSON bytes, with extra headers; a client that hung up is no error."""

    def log_message(self, *args):
        pass

    def send(self, status, data, headers=()):
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass


def error_body(code: int, message: str, kind: str) -> bytes:
    """An error as OpenAI-compatible servers write it: an object, not a string."""
    return json.dumps({"error": {"code": code, "message": message, "type": kind}}).encode()


class ProviderServer:
    """One provider's fake on loopback. ``script(handler, body, call)``, when set, answers in
    place of the documented reply (a test's misbehaving server); the shape is checked first."""

    def __init__(self, kind: str, key: str, model: str = "m", script=None, **expected):
        check, reply, prefix = SHAPES[kind]  # expected: what the check takes besides (anthropic's version)
        self.kind, self.script, self.lock = kind, script, threading.Lock()
        self.calls, self.violations, self.bodies = 0, [], []
        outer = self

        class Handler(JsonHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                wrong = check(self.path, self.headers, body, model, key, **expected)
                with outer.lock:
                    outer.calls += 1
                    call = outer.calls
                    outer.violations += wrong
                    outer.bodies.append(body)
                if wrong:
                    return self.send(400, json.dumps({"error": {"message": "; ".join(wrong)}}).encode())
                if outer.script is not None:
                    return outer.script(self, body, call)
                self.send(200, json.dumps(reply(body)).encode())

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}{prefix}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)


def llama_listing(path: str, size: int = 100_000_000) -> dict:
    """``GET /v1/models`` as llama-server answers it for the file at ``path``: its id is the path,
    ``created`` the time of asking, and ``meta`` the file's facts (the slot context beside them)."""
    return {"object": "list", "data": [{
        "id": path, "aliases": [path], "tags": [], "object": "model", "created": int(time.time()),
        "owned_by": "llamacpp", "meta": {"vocab_type": 2, "n_vocab": 49152, "n_ctx": 4096, "n_ctx_train": 8192,
                                         "n_embd": 576, "n_params": 134515008, "size": size, "ftype": "Q4_1"}}]}


class FakeServer:
    """Chat completions on 127.0.0.1. A fixed share of calls fails (``failure_rate`` 0.3: calls
    1, 4 and 7 of every 10), cycling through 429, 500, a stall past the client's timeout and a
    malformed body. Successful answers depend only on the prompt."""

    def __init__(self, failure_rate=0.3, logprobs=True):
        self.failure_rate, self.logprobs = failure_rate, logprobs
        self.yes_probability: dict[str, float] = {}  # prompt -> the P(Yes) it was answered with
        self.lock = threading.Lock()
        self.calls, self.failures, self.auth, self.formats = 0, 0, set(), set()
        self.latency, self.in_flight, self.most_in_flight, self.arrivals = 0.0, 0, 0, []
        self.script = None  # a test's own reply: script(handler, body, call number), in place of the above
        self.paths = []
        # GET /v1/models: None answers 404 (a server that lists no model), else this listing
        self.listing: dict | None = None
        self.answers_as: str | None = None  # the model replies name (None: the one asked for)
        self.listings = 0
        outer = self

        class Handler(JsonHandler):
            def do_GET(self):
                self.counted = False  # a listing is no request in flight
                with outer.lock:
                    outer.listings += 1
                if self.path != "/v1/models" or outer.listing is None:
                    return self.send(404, error_body(404, "File Not Found", "not_found_error"))
                self.send(200, json.dumps(outer.listing).encode())

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with outer.lock:
                    outer.arrivals.append(time.monotonic())
                    outer.in_flight += 1
                    outer.most_in_flight = max(outer.most_in_flight, outer.in_flight)
                self.counted = True
                try:
                    time.sleep(outer.latency)
                    self._answer(body)
                finally:
                    self._leave()

            def _leave(self):
                # A request stops counting before its reply is written: once the client has the reply
                # it may send its next request, which must not find this one still counted.
                with outer.lock:
                    outer.in_flight -= self.counted
                    self.counted = False

            def send(self, status, data, headers=()):
                self._leave()
                super().send(status, data, headers)

            def _answer(self, body):
                with outer.lock:
                    outer.calls += 1
                    call = outer.calls
                    outer.paths.append(self.path)
                    outer.auth.add(self.headers.get("Authorization"))
                    outer.formats.update(part["image_url"]["url"].split(";")[0] for part in
                                         body["messages"][-1]["content"] if part.get("type") == "image_url")
                    failing = outer.failure_rate >= 1 or (outer.failure_rate > 0 and outer.calls % 10 in (1, 4, 7))
                    mode = outer.failures % 4
                    outer.failures += failing
                if outer.script is not None:
                    return outer.script(self, body, call)
                if failing:
                    if mode == 0:
                        return self.send(429, error_body(429, "rate limited", "rate_limit_error"))
                    if mode == 1:
                        return self.send(500, error_body(500, "boom", "server_error"))
                    if mode == 2:
                        time.sleep(0.6)  # past the client's timeout
                        return self.send(200, b"{}")
                    return self.send(200, b'{"choices": [')  # malformed
                self.send(200, json.dumps(outer.reply(body)).encode())

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def reply(self, body):
        """A reply in the shape llama.cpp's llama-server gives (tests/models/test_real_server.py
        holds the two side by side): ``index``, ``usage`` and the top-level fields; first-token
        ``top_logprobs`` that are one distribution (they sum to at most 1, most likely first,
        the answer's own token among them), tokens written without a leading space as a reply's
        first token is, each with its ``bytes``; a variant ("no" beside "No") sharing the mass."""
        text = body["messages"][-1]["content"][-1]["text"]
        u = int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) / 16**8
        if "Which caption" in text:
            first = [("A", 0.9 * u), ("B", 0.9 * (1 - u)), ("The", 0.06)]
        else:
            first = [("Yes", 0.9 * u), ("No", 0.7 * (1 - u)), ("no", 0.2 * (1 - u)), ("The", 0.06)]
        first.sort(key=lambda pair: -pair[1])
        said = first[0][0]
        self.yes_probability[text] = 0.9 * u  # p(Yes) (or p(A)) as the reply gives it
        choice = {"index": 0, "message": {"role": "assistant", "content": said}, "finish_reason": "stop"}
        if self.logprobs and body.get("logprobs"):
            listed = [{"token": token, "bytes": list(token.encode()), "logprob": math.log(max(p, 1e-9))}
                      for token, p in first[:body.get("top_logprobs", 20)]]
            choice["logprobs"] = {"content": [{**listed[0], "top_logprobs": listed}]}
        prompt = len(text.split())
        return {"id": f"chatcmpl-{self.calls}", "object": "chat.completion", "created": int(time.time()),
                "model": self.answers_as or body["model"], "choices": [choice],
                "usage": {"prompt_tokens": prompt, "completion_tokens": 1, "total_tokens": prompt + 1}}

    def close(self):
        self.server.shutdown()
        self.server.server_close()
