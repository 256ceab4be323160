"""Protocol registry: each module declares one ``Protocol``; the runner, scoring, the CLI
(``--protocol``), ``list`` and the report read this table and nothing else names one."""
from __future__ import annotations

from ..core.registry import Registry
from . import choice, entailment, generation, retrieval, similarity
from .base import ORDER_POLICIES, OWN_WORDING, Outcome, PlanContext, PlannedRequest, Prompts, Protocol, judge_verdict

PROTOCOLS: Registry[Protocol] = Registry("protocol", (m.PROTOCOL for m in (similarity, entailment, choice,
                                                                           generation, retrieval)))
get_protocol = PROTOCOLS.find
register = PROTOCOLS.register

__all__ = ["ORDER_POLICIES", "OWN_WORDING", "Outcome", "PROTOCOLS", "PlanContext", "PlannedRequest", "Prompts",
           "Protocol", "get_protocol", "judge_verdict", "register"]
