"""Protocol registry: each module declares one ``Protocol``; the runner, scoring, the CLI
(``--protocol``), ``list`` and the report read this table and nothing else names one."""
from __future__ import annotations

from . import choice, entailment, generation, similarity
from .base import ORDER_POLICIES, Outcome, PlanContext, PlannedRequest, Prompts, Protocol, judge_verdict

PROTOCOLS: dict[str, Protocol] = {m.PROTOCOL.name: m.PROTOCOL for m in (similarity, entailment, choice, generation)}


def get_protocol(name: str) -> Protocol:
    if name not in PROTOCOLS:
        raise ValueError(f"unknown protocol {name!r}; available: {', '.join(PROTOCOLS)}")
    return PROTOCOLS[name]


def register(protocol: Protocol) -> Protocol:
    """Add a protocol defined outside timefoil (a plugin, a notebook, a test)."""
    PROTOCOLS[protocol.name] = protocol
    return protocol


__all__ = ["ORDER_POLICIES", "Outcome", "PROTOCOLS", "PlanContext", "PlannedRequest", "Prompts", "Protocol",
           "get_protocol", "judge_verdict", "register"]
