"""Each extra, installed alone in its own environment, runs its feature.

    python tests/smoke/extras.py core|api|hf|build|ray

Run with the interpreter of that environment (``.ci/run`` makes one per extra). Standard library
only, so that it runs where nothing but timefoil and the extra are installed. Every command is
bounded in time; a failure prints what the command said and exits 1."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TIMEOUT_S = 600
KEY = "sk-smoke-5f1e0c9a7b3d-never-stored"


def timefoil(*args: str, expect: int = 0, env: dict | None = None) -> subprocess.CompletedProcess:
    environment = {**os.environ, "TIMEFOIL_THREADS": "1", "OMP_NUM_THREADS": "1", **(env or {})}
    result = subprocess.run([sys.executable, "-m", "timefoil.cli", *args], capture_output=True, text=True,
                            timeout=TIMEOUT_S, env=environment)
    if result.returncode != expect or "Traceback" in result.stderr:
        sys.exit(f"timefoil {' '.join(args)}: exit {result.returncode}, expected {expect}\n"
                 f"{result.stdout[-2000:]}\n{result.stderr[-3000:]}")
    return result


def records(run_dir: str) -> list[dict]:
    with open(os.path.join(run_dir, "items.jsonl"), encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def answered_without_errors(run_dir: str, at_least: int) -> int:
    done = records(run_dir)
    errors = [r["answer"]["error"] for r in done if r["answer"].get("error")]
    if len(done) < at_least or errors:
        sys.exit(f"{run_dir}: {len(done)} records (expected {at_least} or more), errors: {errors[:3]}")
    return len(done)


def torch_free(extra: str) -> None:
    if importlib.util.find_spec("torch") is not None:
        sys.exit(f"the {extra} extra installed alone must not bring torch")


class FakeChatServer:
    """/v1/chat/completions on 127.0.0.1: always "Yes", with the key checked."""

    def __init__(self):
        self.calls = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.calls += 1
                if self.headers.get("Authorization") != f"Bearer {KEY}":
                    return self._send(401, {"error": "bad key"})
                text = "Yes" if body["messages"] else ""
                self._send(200, {"choices": [{"message": {"role": "assistant", "content": text},
                                              "finish_reason": "stop"}]})

            def _send(self, status, data):
                payload = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def core(root: str, suite: str) -> str:
    torch_free("core")
    run_dir = os.path.join(root, "bof")
    timefoil("run", "synth", "--model", "bag-of-frames", "--data", suite, "--out", run_dir, "--no-progress")
    answered_without_errors(run_dir, 20)
    html = os.path.join(root, "report.html")
    timefoil("report", run_dir, "--html", html)
    with open(html, encoding="utf-8") as handle:
        if "<html" not in handle.read(2000).lower():
            sys.exit(f"{html} is not an HTML report")
    refused = timefoil("run", "synth", "--model", "openai:m@http://127.0.0.1:9/v1", "--data", suite, "--out",
                       os.path.join(root, "served"), expect=1)
    if "pip install 'timefoil[api]'" not in refused.stderr.strip().splitlines()[-1]:
        sys.exit(f"a served model without the api extra should name it: {refused.stderr}")
    return "a reference model ran, a report was written, a served model named its extra"


def api(root: str, suite: str) -> str:
    torch_free("api")
    server = FakeChatServer()
    try:
        run_dir = os.path.join(root, "served")
        timefoil("run", "synth", "--model", f"openai:fake@{server.url}", "--data", suite, "--limit", "4",
                 "--protocol", "entailment",
                 "--out", run_dir, "--no-progress", env={"OPENAI_API_KEY": KEY})
        count = answered_without_errors(run_dir, 4)
    finally:
        server.close()
    for folder, _, files in os.walk(root):
        for name in files:
            with open(os.path.join(folder, name), "rb") as handle:
                if KEY.encode() in handle.read():
                    sys.exit(f"the API key was written to {os.path.join(folder, name)}")
    return f"{count} requests served by a local server (JPEG frames), the key in no file"


def hf(root: str, suite: str) -> str:
    run_dir = os.path.join(root, "blind")
    timefoil("run", "synth", "--model", "blind-lm", "--blind", "--data", suite, "--limit", "2", "--out", run_dir,
             "--no-progress")
    return f"blind-lm answered {answered_without_errors(run_dir, 2)} requests"


def build(root: str, suite: str) -> str:
    torch_free("build")
    with open(os.path.join(suite, "synth.jsonl"), encoding="utf-8") as handle:
        items = [json.loads(line) for line in handle]
    pairs = [{"id": i["id"], "video": os.path.join(suite, i["videos"][0]["path"]), "caption": i["texts"][i["target"]]}
             for i in items if i["test"] == "order" and i["options_are"] == "texts"]
    with open(os.path.join(root, "pairs.jsonl"), "w", encoding="utf-8") as handle:
        handle.writelines(json.dumps(p) + "\n" for p in pairs)
    with open(os.path.join(root, "recipe.yaml"), "w", encoding="utf-8") as handle:
        handle.write("name: smoke\nsource: pairs.jsonl\nsteps:\n  - generate: rules\n    rules: [swap-events]\n"
                     "  - filter: same-words\n")
    out = os.path.join(root, "built")
    timefoil("build", "run", os.path.join(root, "recipe.yaml"), "--out", out)
    run_dir = os.path.join(root, "on-built")
    timefoil("run", "items", "--model", "bag-of-frames", "--data", os.path.join(out, "benchmark"), "--out", run_dir,
             "--no-progress")
    return f"a YAML recipe built {len(pairs)} pairs into a benchmark; {answered_without_errors(run_dir, 1)} answered"


def ray(root: str, suite: str) -> str:
    run_dir = os.path.join(root, "ray")
    timefoil("run", "synth", "--model", "bag-of-frames", "--data", suite, "--limit", "3", "--out", run_dir,
             "--executor", "ray", "--workers", "1", "--no-progress")
    return f"one Ray worker answered {answered_without_errors(run_dir, 3)} requests"


SMOKES = {"core": core, "api": api, "hf": hf, "build": build, "ray": ray}


def main() -> None:
    if len(sys.argv) != 2 or sys.argv[1] not in SMOKES:
        sys.exit(f"usage: python tests/smoke/extras.py {'|'.join(SMOKES)}")
    extra = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix=f"timefoil-smoke-{extra}-") as root:
        os.environ["TIMEFOIL_CACHE"] = os.path.join(root, "cache")
        suite = os.path.join(root, "suite")
        timefoil("generate", "synth", "--out", suite, "--per-family", "1", "--seed", "0")
        print(f"smoke {extra}: {SMOKES[extra](root, suite)}")


if __name__ == "__main__":
    main()
