"""What every protocol shares: prompt templates, planned requests, per-item outcomes built
from stored records, and the ``Protocol`` interface the runner, scoring and report call."""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Sequence

from ..measures.chance import Event, Within, probability
from ..core.items import Item, VideoRef
from ..measures.parsing import Parsed
from ..models.requests import Answer, Request
from ..models.stops import stopped
from ..measures.stats import MetricValue
from ..video.sampling import Sampling
from .readings import ReadingRule

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
OWN_WORDING = "timefoil's wording"  # how a prompt that is not a paper's nor a released script's is labelled
ORDER_POLICIES = ("balanced", "both")


@dataclass(frozen=True)
class Prompts:
    """A benchmark's prompt templates; the defaults are timefoil's own wording, for
    benchmarks that publish none. Choice templates see {c1}, {c2}, ... (also {d1}, ...),
    {options} (one "A. text" line each) and {caption}; video choice sees {caption} and
    {gap} (seconds of black between the segments); entailment sees {caption}.

    ``prefix`` and ``suffix`` are added to every question, published ones included (a
    released script's lead-in, a chain-of-thought instruction). ``reasoning`` marks answers
    that reason before answering: they are asked as free generation with ``answer_tokens``
    to spend, read from their final answer, and every one of them goes to the judge when
    there is one. ``source`` says where the wording comes from (`timefoil list` and the
    report show it); ``protocols``, when given, are the only ones it was written for."""

    choice: str = "Which caption best describes this video?\n{options}\nAnswer with the option's letter."
    video_choice: str = ("The video shows two segments, one after the other, separated by {gap:g} seconds of "
                         "black. Which segment does this caption describe? {caption}\nA. The first segment\n"
                         "B. The second segment\nAnswer with the option's letter.")
    entailment: str = "Here is a caption: {caption}\nDoes the video match the caption? Answer Yes or No."
    generation: str = ("Describe this video in detail: every action in the order it happens, how often, in "
                       "which direction and by whom.")
    system: str | None = None
    concat_gap: float = 2.0
    max_tokens: int = 512  # dense captions are long
    prefix: str = ""
    suffix: str = ""
    reasoning: bool = False
    answer_tokens: int = 16  # a letter or Yes/No; chain of thought needs about a thousand
    source: str = OWN_WORDING
    protocols: tuple[str, ...] = ()


def asked_kind(kind: str, prompts: Prompts) -> str:
    """The request kind a question of ``kind`` is asked as: free generation when it reasons."""
    return "generation" if prompts.reasoning else kind


@dataclass(frozen=True)
class PlanContext:
    """How a run asks: the benchmark's prompts, the sampling, option order and blindness."""

    prompts: Prompts = Prompts()
    sampling: Sampling = Sampling(frames=8)
    order_policy: str = "balanced"
    seed: int = 0
    blind: bool = False
    max_tokens: int | None = None  # overrides the prompts' answer budget (--max-tokens)

    @property
    def reasoning(self) -> dict[str, bool]:
        """Stored beside a reasoning request, so its answer is read from its conclusion."""
        return {"reasoning": True} if self.prompts.reasoning else {}

    @property
    def answer_tokens(self) -> int:
        return self.max_tokens or self.prompts.answer_tokens

    def question(self, kind: str, text: str, ref: VideoRef | None, **fields) -> Request:
        """A question as asked: prefix and suffix added; a reasoning question is free generation."""
        prompts = self.prompts
        return Request(asked_kind(kind, prompts), self.video(ref), prompts.prefix + text + prompts.suffix,
                       self.shown_sampling, system=prompts.system, max_tokens=self.answer_tokens, **fields)

    def video(self, ref: VideoRef | None) -> VideoRef | None:
        return None if self.blind else ref

    @property
    def shown_sampling(self) -> Sampling | None:
        return None if self.blind else self.sampling


@dataclass(frozen=True)
class PlannedRequest:
    id: str
    request: Request
    info: dict[str, Any]  # stored beside the request: "option": j, or "position"/"order" for choice
    expected: int  # how many requests the item has in all


@dataclass
class Outcome:
    """One item's result, rebuilt from its stored records; protocols extend it."""

    item: dict[str, Any]
    errors: list[str] = field(default_factory=list)
    parse_failures: int = 0
    stopped: int = 0  # answers that do not parse because the reply was refused, blocked or out of tokens
    unanswered: int = 0
    degenerate: bool = False
    request_keys: list[str] = field(default_factory=list)  # the distinct requests its answers came from
    rule: ReadingRule | None = None  # a released scorer's reading of the answers; None: the meant one
    read_differently: int = 0  # answers the rule reads otherwise than the meant reading
    unread: bool = False  # an answer the rule cannot read, where the rule drops such items

    @property
    def target(self) -> int:
        return self.item["target"]

    @property
    def n_options(self) -> int:
        return self.item["n_options"]

    @property
    def is_proficiency(self) -> bool:
        return self.item["role"] == "proficiency"

    def correct(self, tie_policy: str = "strict") -> bool:
        """Whether the item counts as right in group scores."""
        return False

    def event(self) -> Event:
        """What ``correct()`` asks of the random model's one draw per distinct request (see
        chance.py): items that ask the same request share its draw. Never right by default."""
        return (Within(("never", self.item["id"]), ()),)

    def chance(self) -> float:
        return probability(self.event())

    def tie(self) -> bool:
        return False

    def scatter_point(self) -> tuple[float, float, bool] | None:
        """(score of the true option, best other score, right) for a scatter plot, if any."""
        return None


def option_pairs(item: Item) -> list[tuple[int, VideoRef, str]]:
    """(option, video, caption) for each option: the item's video with each caption, or its
    caption with each video."""
    if item.options_are == "videos":
        return [(j, ref, item.texts[0]) for j, ref in enumerate(item.videos)]
    return [(j, item.videos[0], text) for j, text in enumerate(item.texts)]


def count_unread(outcome: Outcome, answer: Answer) -> None:
    """An answer that does not parse: a stopped reply (refused, blocked, out of tokens) is
    counted as such, anything else as a parse failure."""
    if stopped(answer.meta):
        outcome.stopped += 1
    else:
        outcome.parse_failures += 1


def judge_verdict(record: dict[str, Any]) -> dict[str, Any] | None:
    """The judge's verdict stored beside a record's answer. Records written before verdicts
    had a place of their own carried it inside the answer; those are read as they were."""
    if "judge" in record:
        return record["judge"]
    return (record.get("answer") or {}).get("meta", {}).get("judge")


SHAPE_WORDS = {"texts": "text options", "videos": "video options", "references": "reference texts"}


class Protocol(ABC):
    """One way of asking: ``kind`` names the model method that answers its requests
    (``answer_<kind>``). Subclasses implement ``plan_item``, ``new_outcome``, ``take`` and
    ``item_metrics``; the rest has defaults."""

    name: str = ""
    kind: str = ""
    description: str = ""
    metrics: dict[str, str] = {}  # metric name -> meaning, for `timefoil list`
    # The item shapes (``Item.options_are``) this protocol can ask; a benchmark offers every
    # protocol that accepts one of its shapes, unless it opts one out.
    accepts: frozenset[str] = frozenset({"texts", "videos"})
    reasons: bool = False  # asks through PlanContext.question, so a reasoning variant asks for generation
    prompted: bool = False  # asks in words (a benchmark's prompts), not by scoring texts

    # -- planning -----------------------------------------------------------------------
    def plan(self, items: Sequence[Item], context: PlanContext) -> list[tuple[Item, PlannedRequest]]:
        self.check(items)
        return [(item, planned) for item in items for planned in self.plan_item(item, context)]

    def check(self, items: Sequence[Item]) -> None:
        for item in items:
            if item.options_are not in self.accepts:
                wanted = " or ".join(SHAPE_WORDS[shape] for shape in sorted(self.accepts))
                raise ValueError(f"item {item.id}: the {self.name} protocol needs {wanted}; "
                                 f"this item has {SHAPE_WORDS[item.options_are]}")

    @abstractmethod
    def plan_item(self, item: Item, context: PlanContext) -> list[PlannedRequest]:
        """The requests of one item."""

    def request_kinds(self, prompts: Prompts) -> set[str]:
        """The request kinds a model must answer for this protocol asked with ``prompts``."""
        return {asked_kind(self.kind, prompts) if self.reasons else self.kind}

    # -- reading answers ----------------------------------------------------------------
    def read(self, request: dict[str, Any], answer: Answer, verdict: dict[str, Any] | None = None) -> Parsed | None:
        """The parser's reading of a stored answer (None where nothing is parsed)."""
        return None

    def judge_request(self, request: dict[str, Any], answer: Answer) -> Request | None:
        """What to ask a judge model about an answer that does not parse (None: nothing)."""
        return None

    # -- outcomes and metrics -----------------------------------------------------------
    def new_outcome(self, item: dict[str, Any]) -> Outcome:
        return Outcome(item)

    def take(self, outcome: Outcome, request: dict[str, Any], answer: Answer, verdict: dict | None) -> None:
        """Add one stored answer to the item's outcome (errors are already counted)."""

    def outcome(self, records: Sequence[dict[str, Any]], rule: ReadingRule | None = None) -> Outcome:
        """One item's outcome from its stored records (the last record per request id wins),
        its answers read by ``rule`` where one is given."""
        latest = {r["id"]: r for r in records}
        first = next(iter(latest.values()))
        out = self.new_outcome(first["item"])
        out.rule = rule
        out.unanswered = max(0, first["expected"] - len(latest))
        for record in latest.values():
            answer = Answer.from_json(record["answer"])
            out.degenerate = out.degenerate or self.degenerate(record)
            out.request_keys.append(record["request"].get("key"))
            if answer.error:
                out.errors.append(answer.error)
            self.take(out, record["request"], answer, judge_verdict(record))
        return out

    def degenerate(self, record: dict[str, Any]) -> bool:
        """Whether the frames a record was answered on cannot show what the question asks."""
        return bool((record.get("frames") or {}).get("degenerate"))

    @abstractmethod
    def item_metrics(self, outcomes: Sequence[Outcome], tie_policy: str) -> list[MetricValue]:
        """The protocol's metrics over main items (proficiency and group scores are generic)."""

    def group_chance(self, outcomes: Sequence[Outcome]) -> float:
        """Chance that every outcome of a group is right: items that ask the same request (a
        ViLMA proficiency caption equal to the main one, a TemporalBench positive asked with
        each negative) share its one random answer."""
        return probability(group_event(outcomes))


def group_event(outcomes: Sequence[Outcome]) -> Event:
    """Every outcome of a group right."""
    return tuple(c for o in outcomes for c in o.event())
