"""A served model's key reaches no file and no output, and a remote server without one is warned about once."""
import json
import os
import pytest
from helpers import cli


def test_a_key_echoed_by_the_server_reaches_no_file_and_no_output(tmp_path):
    """The fake server echoes the Authorization header in its error bodies (400, then 500s)."""
    pytest.importorskip("httpx")
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from timefoil.synth import generate

    key = "sk-live-abcdef0123456789-never-stored"

    class Echo(BaseHTTPRequestHandler):
        count = 0

        def log_message(self, *args):
            pass

        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            Echo.count += 1
            body = json.dumps({"error": "denied", "you sent": {"Authorization": self.headers["Authorization"]}})
            self.send_response(400 if Echo.count % 2 else 500)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body.encode())

    server = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    suite = str(tmp_path / "suite")
    generate(suite, per_family=1, seed=1)
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    result = cli("run", "synth", "--model", f"openai:m@{url}", "--model-arg", "max_retries=1", "--model-arg",
                 "backoff=0.01", "--data", suite, "--protocol", "choice", "--limit", "2", "--out",
                 str(tmp_path / "run"), "--cache-dir", str(tmp_path / "cache"), "--no-progress",
                 env={**os.environ, "OPENAI_API_KEY": key})
    server.shutdown()
    assert result.returncode == 3 and Echo.count > 0
    assert "[redacted]" in open(tmp_path / "run" / "items.jsonl").read()
    assert key not in result.stdout + result.stderr and key[:16] not in result.stdout + result.stderr
    for folder in (tmp_path / "run", tmp_path / "cache"):
        for root, _, files in os.walk(folder):
            for name in files:
                assert key.encode() not in open(os.path.join(root, name), "rb").read(), name


def test_a_remote_server_without_a_key_is_warned_about_once(capsys, monkeypatch):
    pytest.importorskip("httpx")
    from timefoil.models.served.openai import OpenAICompatible
    from timefoil.models.requests import Request

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    model = OpenAICompatible("m", "http://192.0.2.1:9/v1", max_retries=0, timeout=0.2)  # TEST-NET: never answers
    answers = model.answer([Request("generation", None, "hi"), Request("generation", None, "ho")], None)
    assert all(a.error for a in answers)
    model.answer([Request("generation", None, "again")], None)
    warned = capsys.readouterr().err
    assert warned.count("no API key in OPENAI_API_KEY for http://192.0.2.1:9/v1") == 1
    local = OpenAICompatible("m", "http://127.0.0.1:9/v1", max_retries=0, timeout=0.2)
    local.answer([Request("generation", None, "hi")], None)
    assert "no API key" not in capsys.readouterr().err


def test_an_answer_loses_the_keys_values_only_and_a_cut_key_loses_its_start():
    """The model's words stay as written ("the bearer of", a URL it quotes); a key's value
    goes wherever it is; an error is redacted by pattern too, before its cut; a body cut at a
    length limit that ends in a key's start loses that start, however short."""
    from timefoil.core.redaction import without_cut_secret
    from timefoil.models.requests import Answer
    from timefoil.models.served.limits import clean

    key = "sk-test-0123456789abcdef"
    raw = f"Yes: the bearer of the flag, see https://h.io/a?b=c; {key}"
    answer = clean(Answer(raw=raw, error=f"Bearer {key[:5]}zz " + "x" * 400), [key, "es"])
    assert answer.raw == "Yes: the bearer of the flag, see https://h.io/a?b=c; [redacted]"
    assert answer.error == "Bearer [redacted] " + "x" * 282 and len(answer.error) == 300
    assert without_cut_secret("body ending in sk-te", key) == "body ending in "
    assert without_cut_secret("body ending in s", key) == "body ending in "
    assert without_cut_secret("body ending in sk-tx", key) == "body ending in sk-tx"


PIECE_KEY = "sk-live-Qm7Zr2Xv9Tn4Lp8Wd3Hc6Jb5"  # 31 characters


def test_a_piece_of_the_key_in_a_reply_or_an_error_reaches_no_file(tmp_path, monkeypatch):
    """The fake server's odd calls answer with the key's first 20 characters and its last 12
    in the reply's text, its even calls fail with a 400 whose body holds 10 from its middle:
    each piece is cut out of the stored answer, the error and the cache, and the words around
    it are kept as written."""
    pytest.importorskip("httpx")
    from provider_fakes import FakeServer

    from timefoil import RunConfig, run
    from timefoil.execution.store import RunLog
    from timefoil.synth import generate

    start, end, middle = PIECE_KEY[:20], PIECE_KEY[-12:], PIECE_KEY[10:20]
    said = f"Yes. The key starts {start} and ends {end}; the man opens the door."

    def script(handler, body, call):
        if call % 2:
            return handler.send(200, json.dumps({"choices": [{"message": {"role": "assistant", "content": said},
                                                              "finish_reason": "stop"}]}).encode())
        handler.send(400, json.dumps({"error": f"key {middle} is not allowed"}).encode())

    server = FakeServer(failure_rate=0.0)
    server.script = script
    suite = str(tmp_path / "suite")
    generate(suite, per_family=1, seed=4, families=("order",))
    monkeypatch.setenv("OPENAI_API_KEY", PIECE_KEY)
    config = RunConfig("synth", f"openai:m@{server.url}", data_dir=suite, protocol="entailment", blind=True,
                       model_args={"max_retries": 0, "concurrency": 1})
    try:
        run(config, str(tmp_path / "run"), cache_dir=str(tmp_path / "cache"), progress=False)
    finally:
        server.close()
    answers = [r["answer"] for r in RunLog(str(tmp_path / "run")).read()]
    assert server.calls >= 2 and {a["raw"] for a in answers if not a["error"]} == \
        {"Yes. The key starts [redacted] and ends [redacted]; the man opens the door."}
    assert {a["error"] for a in answers if a["error"]} == \
        {'api error: HTTP 400: {"error": "key [redacted] is not allowed"}'}
    stored = [os.path.join(root, name) for folder in ("run", "cache") for root, _, files in os.walk(tmp_path / folder)
              for name in files]
    assert any(name.endswith("responses.sqlite") for name in stored)
    pieces = [piece.encode() for piece in (start, end, middle, PIECE_KEY[:8], PIECE_KEY[-8:])]
    for name in stored:
        data = open(name, "rb").read()
        assert not [piece for piece in pieces if piece in data], name


def test_a_run_of_8_characters_of_a_key_is_cut_and_ordinary_words_are_kept(monkeypatch):
    """Any 8 consecutive characters of a key go (its start, its end, a piece between, each run
    as long as it goes); 7 stay. A credential in the environment that is a path or a word
    takes its whole value, and any run of 16 of its characters, but not a word or two of it."""
    from timefoil.core.redaction import redact_values

    key = PIECE_KEY
    assert redact_values(f"starts {key[:8]}, ends {key[-8:]}, holds {key[11:19]}", key) == \
        "starts [redacted], ends [redacted], holds [redacted]"
    assert redact_values(f"{key[:7]} or {key[-7:]}: seven", key) == f"{key[:7]} or {key[-7:]}: seven"
    assert redact_values(f"{key[:20]}{key[24:]}", key) == "[redacted][redacted]"  # two runs, each cut
    monkeypatch.setenv("HF_TOKEN_PATH", "/home/someone/.cache/huggingface/token")
    monkeypatch.setenv("DB_PASSWORD", "Correct Horse Battery")
    words = "Yes: the huggingface logo, a correct horse and a battery; the token is shown."
    assert redact_values(words) == words
    assert redact_values("it read .cache/huggingface/token and Correct Horse Battery") == \
        "it read [redacted] and [redacted]"
