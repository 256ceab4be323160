"""From stored records to the metrics of a run: one generic routine for every benchmark.

Sections are "overall", each test, each test/subtest and each category. In every section:
item-level metrics of the protocol, "P" on proficiency items, all-correct scores per role
(Vinoground text/video), over all main items of a group (group score, MBA), and with
proficiency ("P+T"); the benchmark declares names and the headline average.
"""
from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Sequence

from .measures import metrics as M
from .measures.chance import event_proportion
from .protocols import Outcome, Protocol, get_protocol
from .protocols.base import group_event
from .protocols.readings import MEANT, ReadingRule
from .measures.stats import MetricValue

DEGENERATE = "joined videos sampled with fewer than 3 frames: video scores are meaningless"
# Requests asked in several tests (VELOCITI asks 54 positive captions in two tests): each test
# counts them as the paper does; a pooled section (overall, a category) enumerates them once; a
# mean over tests takes the tests as independent and says how many requests they share.
SHARED_POLICY = "each part counts its shared requests; the mean takes the parts as independent"


@dataclass(frozen=True)
class SummarySpec:
    group_metric: str = "group"  # name of the all-main-items-correct score ("MBA" for TemporalBench)
    # metric(s) averaged over tests ("average X"), or per protocol
    average: str | tuple[str, ...] | dict[str, str | tuple[str, ...]] | None = None
    average_excludes: tuple[str, ...] = ()  # tests left out of averages and of "overall" (VELOCITI's control)
    facets: dict[str, tuple[str, ...]] = field(default_factory=dict)  # "facet:<name>": the mean of these tests
    tests: tuple[str, ...] = ()  # every test of the paper: an average over fewer says so in its name
    rename: dict[str, str] = field(default_factory=dict)  # e.g. {"accuracy": "T"}
    multichoice_rename: dict[str, str] | None = None  # used instead where every item has 3+ options
    categories: bool = True
    # the paper's headline metric per protocol where it is not the first averaged one (VITATECS's
    # retrieval table leads with R@10 of all queries)
    headline: dict[str, str] = field(default_factory=dict)
    # kinds of category, each with its values in the paper's order (TemporalBench's source datasets
    # and its categories): each kind is a table of its own, its sections in that order
    category_kinds: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def category_kind(self, category: str) -> tuple[str, int] | None:
        """(kind, place in the paper's order) of a category value, matched without case or
        punctuation ("Movie_Description" is "Movie Description"); None for a value no kind names."""
        wanted = category_key(category)
        for kind, values in self.category_kinds.items():
            for place, value in enumerate(values):
                if category_key(value) == wanted:
                    return kind, place
        return None


def category_key(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())


def category_order(spec: SummarySpec, names: Iterable[str]) -> list[str]:
    """Category sections ("category:<value>") as the paper orders them: each kind's values in
    its order, kind after kind, then the values no kind names, sorted."""
    def place(name: str) -> tuple:
        found = spec.category_kind(name.removeprefix("category:"))
        kinds = list(spec.category_kinds)
        return (kinds.index(found[0]), found[1], name) if found else (len(kinds), 0, name)

    return sorted(names, key=place)


@dataclass
class ScoreReport:
    benchmark: str
    model: str
    protocol: str
    items: int
    errors: int
    parse_failures: int
    ties: int
    metrics: list[MetricValue]
    failures: list[tuple[str, str]]  # (item id, error message)
    unanswered: int = 0
    answers: int = 0  # stored answers read (errors included): what parse failures are counted among
    stopped: int = 0  # answers refused, blocked or out of tokens (not counted as parse failures)
    other_shards: int = 0  # a shard's items whose other requests were answered by other shards (not scored here)
    corrupt_lines: list[int] = field(default_factory=list)  # items.jsonl lines that are not records
    reading: str = MEANT  # "meant" or "released": how the answers were read
    # the released rule beside it: its source, answers it reads otherwise, items it drops
    released: dict[str, Any] | None = None
    headline: list[str] = field(default_factory=list)  # headline_names: the headline, then the figures beside it
    texts_cut: dict[str, int] | None = None  # cut_texts: texts cut to a contrastive model's text limit

    def to_json(self) -> dict[str, Any]:
        return {"benchmark": self.benchmark, "model": self.model, "protocol": self.protocol,
                "items": self.items, "answers": self.answers, "errors": self.errors,
                "parse_failures": self.parse_failures,
                "stopped": self.stopped, "ties": self.ties, "unanswered": self.unanswered,
                "metrics": [m.to_json() for m in self.metrics],
                "failures": [{"id": i, "error": e} for i, e in self.failures],
                "headline": self.headline, "reading": self.reading,
                **({"released": self.released} if self.released else {}),
                **({"corrupt_lines": self.corrupt_lines} if self.corrupt_lines else {}),
                **({"other_shards": self.other_shards} if self.other_shards else {}),
                **({"texts_cut": self.texts_cut} if self.texts_cut else {})}

    def get(self, name: str) -> MetricValue:
        for metric in self.metrics:
            if metric.name == name:
                return metric
        raise KeyError(f"no metric {name!r}; have {[m.name for m in self.metrics]}")


def cut_texts(records: Iterable[dict[str, Any]]) -> dict[str, int] | None:
    """Texts a contrastive model read cut to its text limit (CLIP: 77 tokens), from the answers'
    ``text_cut`` facts: how many distinct texts, the limit, and how many items hold two options
    read as the same tokens once cut (their scores are equal: ties); None where none was cut."""
    cut: dict[str, int] = {}  # text -> the limit it was cut to
    read: dict[str, dict[str, str]] = defaultdict(dict)  # item -> text -> digest of the tokens read
    ranked: dict[str, tuple[int, int]] = {}  # candidate set -> (texts cut, the limit)
    for record in records:
        meta = (record.get("answer") or {}).get("meta") or {}
        fact, text = meta.get("text_cut"), record["request"].get("text")
        if isinstance(fact, dict) and isinstance(text, str):
            cut[text] = fact.get("limit", 0)
            read[record["item"]["id"]][text] = str(fact.get("read"))
        if isinstance(meta.get("texts_cut"), int):
            ranked[str(record["request"].get("candidates") or record["request"].get("option_texts"))] = \
                (meta["texts_cut"], meta.get("text_limit") or 0)
    count = len(cut) + sum(n for n, _ in ranked.values())
    if not count:
        return None
    equal = sum(1 for texts in read.values() if len(set(texts.values())) < len(texts))
    return {"texts": count, "limit": max([*cut.values(), *(limit for _, limit in ranked.values())]),
            "pairs_equal": equal}


def cut_line(cut: dict[str, int]) -> str:
    """The one line a run's texts cut to the model's limit are said in."""
    equal = cut.get("pairs_equal", 0)
    return (f"{cut['texts']} caption{'s' if cut['texts'] != 1 else ''} longer than the model's {cut['limit']} "
            f"text tokens {'were' if cut['texts'] != 1 else 'was'} cut; {equal} pair{'s' if equal != 1 else ''} "
            f"became equal after the cut (counted as ties)")


def outcomes_from_records(records: Iterable[dict[str, Any]], protocol: Protocol | str,
                          rule: ReadingRule | None = None) -> list[Outcome]:
    protocol = get_protocol(protocol) if isinstance(protocol, str) else protocol
    by_item: dict[str, list[dict]] = defaultdict(list)
    for record in records:
        by_item[record["item"]["id"]].append(record)
    # in item order, whatever the order of the records (a sharded or streamed run's log is in
    # another): blocks of shared requests are then enumerated the same way, to the last digit
    return [protocol.outcome(by_item[item_id], rule) for item_id in sorted(by_item)]


def _all_correct(name: str, outcomes: Sequence[Outcome], protocol: Protocol, tie_policy: str) -> MetricValue:
    """A group counts only if all its items are right. Its chance enumerates the distinct
    requests of its items (a proficiency caption equal to the main one is asked once)."""
    groups: dict[str, list[Outcome]] = defaultdict(list)
    for o in outcomes:
        groups[o.item["group_id"]].append(o)
    return event_proportion(name, [all(o.correct(tie_policy) for o in os) for os in groups.values()],
                            [group_event(os) for os in groups.values()])


def _has_groups(outcomes: Sequence[Outcome]) -> bool:
    """Whether some group holds more than one main item (then group scores mean something)."""
    sizes: dict[str, int] = defaultdict(int)
    for o in outcomes:
        if not o.is_proficiency:
            sizes[o.item["group_id"]] += 1
    return bool(sizes) and max(sizes.values()) > 1


def section_metrics(outcomes: Sequence[Outcome], protocol: Protocol, spec: SummarySpec, tie_policy: str,
                    grouped: bool | None = None) -> list[MetricValue]:
    """``grouped``: whether the whole run has groups; a section's groups may all be of size one
    (MBA in a category where each video has one question) and still count."""
    main = [o for o in outcomes if not o.is_proficiency]
    proficiency = [o for o in outcomes if o.is_proficiency]
    result: list[tuple[MetricValue, Sequence[Outcome]]] = []  # each metric with the items it covers
    if main:
        result += [(m, main) for m in protocol.item_metrics(main, tie_policy)]
    if proficiency:
        result.append((event_proportion("P", [o.correct(tie_policy) for o in proficiency],
                                        [o.event() for o in proficiency]), proficiency))
    roles = sorted({o.item["role"] for o in main})
    roles_in_group: dict[str, set] = defaultdict(set)
    for o in main:
        roles_in_group[o.item["group_id"]].add(o.item["role"])
    if len(roles) > 1 and all(len(r) > 1 for r in roles_in_group.values()):  # e.g. Vinoground text/video
        for role in roles:
            members = [o for o in main if o.item["role"] == role]
            result.append((_all_correct(role, members, protocol, tie_policy), members))
    if main and (_has_groups(outcomes) if grouped is None else grouped):
        result.append((_all_correct(spec.group_metric, main, protocol, tie_policy), main))
    if proficiency and main:
        result.append((_all_correct("P+T", outcomes, protocol, tie_policy), outcomes))
    failures = sum(o.parse_failures for o in outcomes)
    stopped = sum(o.stopped for o in outcomes)
    errors = sum(bool(o.errors) or bool(o.unanswered) for o in outcomes)
    answers = sum(len(o.request_keys) for o in outcomes)  # what the unread share is of (stats.unread_of)
    rename = spec.rename
    if spec.multichoice_rename is not None and all(o.n_options > 2 for o in outcomes):
        rename = spec.multichoice_rename
    out = []
    for metric, covered in result:
        extra = dict(metric.extra, parse_failures=failures, stopped=stopped, errors=errors, answers=answers)
        if any(o.degenerate for o in covered):  # the text score, which shows no joined video, stays valid
            extra["warning"] = DEGENERATE
        out.append(MetricValue(rename.get(metric.name, metric.name), metric.value, metric.n,
                               metric.chance, metric.ci95, metric.p_value, extra))
    return out


def summarize(outcomes: Sequence[Outcome], protocol: Protocol | str, spec: SummarySpec = SummarySpec(),
              tie_policy: str = "strict", by_test: bool | None = None) -> list[MetricValue]:
    """``by_test``: name each test's section and the averages over tests even where one test is
    left (a reading that dropped the others whole); by default only where several are present."""
    protocol = get_protocol(protocol) if isinstance(protocol, str) else protocol
    if not outcomes:
        return []
    # "overall" pools the tests the paper pools: a control test stays out (and says so)
    pooled = [o for o in outcomes if o.item["test"] not in spec.average_excludes] or list(outcomes)
    sections: dict[str, list[Outcome]] = {"overall": pooled}
    tests: dict[str, list[Outcome]] = defaultdict(list)
    subtests: dict[str, list[Outcome]] = defaultdict(list)
    categories: dict[str, list[Outcome]] = defaultdict(list)
    for o in outcomes:
        tests[o.item["test"]].append(o)
        if o.item.get("subtest"):
            subtests[f"{o.item['test']}/{o.item['subtest']}"].append(o)
        for c in o.item.get("categories") or ():
            categories[f"category:{c}"].append(o)
    by_test = len(tests) > 1 if by_test is None else by_test
    for test, outs in sorted(tests.items()):  # each test, then its subtests
        if by_test:
            sections[test] = outs
        sections.update(sorted((k, v) for k, v in subtests.items() if k.split("/")[0] == test))
    if spec.categories:
        sections.update((name, categories[name]) for name in category_order(spec, categories))
    left_out = sorted({o.item["test"] for o in outcomes} - {o.item["test"] for o in pooled})
    result = []
    grouped = _has_groups(outcomes)
    for section, outs in sections.items():
        for metric in section_metrics(outs, protocol, spec, tie_policy, grouped):
            if section == "overall" and left_out:
                metric = replace(metric, extra=dict(metric.extra, excludes=", ".join(left_out)))
            result.append(_named(metric, f"{section}/{metric.name}"))
    if by_test:
        averaged = sorted(t for t in tests if t not in spec.average_excludes)
        averages = _means(result, tests, averaged, spec, protocol,
                          lambda wanted, n: f"overall/average {wanted}{_coverage(spec, n)}")
        for facet, members in spec.facets.items():  # the paper's facets: unweighted means of their tests
            present = [t for t in members if t in tests]
            if present:
                result += _means(result, tests, present, spec, protocol, lambda wanted, n, facet=facet, members=members:
                                 f"facet:{facet}/{wanted}" + (f" ({n} of {len(members)} tests)" if n < len(members)
                                                              else ""))
        result[:0] = averages
    return result


def _means(result: list[MetricValue], tests: dict[str, list[Outcome]], members: list[str], spec: SummarySpec,
           protocol: Protocol, named) -> list[MetricValue]:
    """The unweighted mean of the member tests' values of each averaged metric, ``named(metric,
    parts)``; the tests are taken as independent (SHARED_POLICY)."""
    shared = _shared_requests([tests[t] for t in members])
    means = []
    for wanted in averaged_metrics(spec, protocol.name):
        parts = [m for t in members for m in result if m.name == f"{t}/{wanted}"]
        if parts:
            name = named(wanted, len(parts))
            extra = {"shared_requests": shared, "shared_policy": SHARED_POLICY} if shared else {}
            # the parts' answers and unread answers: an average of unread tests is unread too
            extra.update({count: sum(p.extra.get(count) or 0 for p in parts) for count in UNREAD_COUNTS})
            means.append(M.mean_of(name, parts, tests=", ".join(members), **extra))
    return means


UNREAD_COUNTS = ("parse_failures", "stopped", "answers")


def _shared_requests(parts: list[list[Outcome]]) -> int:
    """Distinct requests asked in more than one of ``parts``."""
    seen: dict[str, int] = defaultdict(int)
    for outcomes in parts:
        for key in {k for o in outcomes for k in o.request_keys if k}:
            seen[key] += 1
    return sum(count > 1 for count in seen.values())


def _coverage(spec: SummarySpec, parts: int) -> str:
    """" (k of N tests)" when an average covers fewer tests than the paper's."""
    expected = len([t for t in spec.tests if t not in spec.average_excludes])
    return f" ({parts} of {expected} tests)" if parts < expected else ""


def averaged_metrics(spec: SummarySpec, protocol: str) -> tuple[str, ...]:
    """The (renamed) metrics the benchmark averages over its tests for ``protocol``."""
    average = spec.average.get(protocol) if isinstance(spec.average, dict) else spec.average
    names = (average,) if isinstance(average, str) else tuple(average or ())
    return tuple(spec.rename.get(name, name) for name in names)


# Asked in both orders, a choice run has these beside its accuracy: an accuracy at chance can
# hide a model that always answers the same letter (bias -100, A∧B 0).
ORDER_FIGURES = ("A∧B", "bias")


def headline_names(names: Sequence[str], protocol: str, spec: SummarySpec) -> list[str]:
    """The overall numbers every summary of a run shows (the terminal, the HTML summary and
    leaderboard, ``score --json``), the headline first. The headline is the benchmark's headline
    metric, the one it averages over tests (pooled where the run has one test); else its group
    score (TemporalBench's MBA); else the protocol's first metric; a benchmark may declare it per
    protocol (``SummarySpec.headline``). Beside it: the protocol's first
    metric where the headline is another, and a choice's A∧B and bias; each averaged over tests
    where the benchmark averages it, as the headline is."""
    overall = [name for name in names if name.startswith("overall/")]

    def found(metric: str | None) -> str | None:
        averaged = f"overall/average {metric}"  # "(k of N tests)" may follow
        return next((n for n in overall if n == averaged or n.startswith(f"{averaged} (")), None) \
            or next((n for n in overall if n == f"overall/{metric}"), None)

    first = next((n.removeprefix("overall/") for n in overall if not n.startswith("overall/average ")), None)
    averages = averaged_metrics(spec, protocol)
    declared = spec.headline.get(protocol)
    headline = next((name for metric in (declared, *averages[:1], spec.group_metric, first)
                     if metric and (name := found(metric))), None)
    if headline is None:
        return []
    beside = [found(metric) for metric in (first, *ORDER_FIGURES)]
    return [headline, *dict.fromkeys(name for name in beside if name and name != headline)]


def _named(metric: MetricValue, name: str) -> MetricValue:
    return MetricValue(name, metric.value, metric.n, metric.chance, metric.ci95, metric.p_value, metric.extra)


def score_records(records: Sequence[dict[str, Any]], *, benchmark: str, model: str, protocol: str,
                  spec: SummarySpec = SummarySpec(), tie_policy: str = "strict",
                  elsewhere: dict[str, int] | None = None, rule: ReadingRule | None = None) -> ScoreReport:
    """``elsewhere`` (a shard's): item id -> its requests placed on other shards. An item whose
    own part is all answered is complete here and scored only once the shards are merged; one
    whose part here is missing answers stays incomplete. ``rule``: a released scorer's reading
    (its answer mapping, its tie rule, the items it drops); None reads as meant."""
    outcomes, other_shards = [], 0
    for outcome in outcomes_from_records(records, protocol, rule):
        placed_elsewhere = (elsewhere or {}).get(outcome.item["id"], 0)
        if placed_elsewhere:
            outcome.unanswered = max(0, outcome.unanswered - placed_elsewhere)
            if not outcome.unanswered:
                other_shards += 1
                continue
        outcomes.append(outcome)
    released, by_test = None, None
    if rule is not None:
        by_test = len({o.item["test"] for o in outcomes}) > 1  # as the meant reading names them
        read_differently = sum(o.read_differently for o in outcomes)
        if rule.tie_policy and rule.tie_policy != tie_policy:  # a tie is read otherwise: right, not wrong
            tie_policy, read_differently = rule.tie_policy, read_differently + sum(o.tie() for o in outcomes)
        kept = [o for o in outcomes if not o.unread or o.errors or o.unanswered]  # an error stays an error
        released = {"source": rule.source, "read_differently": read_differently,
                    "dropped": len(outcomes) - len(kept)}
        outcomes = kept
    failures = [(o.item["id"], e) for o in outcomes for e in dict.fromkeys(o.errors)]
    failures += [(o.item["id"], f"{o.unanswered} request(s) not answered (run incomplete)")
                 for o in outcomes if o.unanswered]
    metrics = summarize(outcomes, protocol, spec, tie_policy, by_test)
    return ScoreReport(
        benchmark=benchmark, model=model, protocol=protocol, items=len(outcomes),
        errors=sum(bool(o.errors) or bool(o.unanswered) for o in outcomes),
        parse_failures=sum(o.parse_failures for o in outcomes), stopped=sum(o.stopped for o in outcomes),
        answers=sum(len(o.request_keys) for o in outcomes), ties=sum(o.tie() for o in outcomes),
        unanswered=sum(o.unanswered for o in outcomes),
        metrics=metrics, failures=failures, other_shards=other_shards,
        reading="released" if rule is not None else MEANT, released=released,
        headline=headline_names([m.name for m in metrics], protocol, spec), texts_cut=cut_texts(records))


_COVERAGE = re.compile(r" \(\d+ of \d+ tests\)$")  # an average's coverage, which the readings may differ in


def beside(shown: ScoreReport, other: ScoreReport) -> ScoreReport:
    """``shown`` with the other reading's number in each metric where the two differ (value or
    n), under the other reading's name, with its own n, chance and p-value. A number only one
    reading gives is reported under both: a test the released rule drops whole (every answer
    unread) stands in the shown reading with no value and the other's number beside, and a
    metric the other reading lacks carries that reading's empty number. Averages pair by
    metric whatever the number of tests each reading covers."""
    def key(name: str) -> str:
        return _COVERAGE.sub("", name)

    others = {key(m.name): m for m in other.metrics}
    metrics = list(shown.metrics)
    for at, metric in enumerate(other.metrics):  # numbers only the other reading gives, in its order
        if key(metric.name) not in {key(m.name) for m in metrics}:
            before = {key(m.name) for m in other.metrics[:at]}
            place = max((i + 1 for i, m in enumerate(metrics) if key(m.name) in before), default=len(metrics))
            metrics.insert(place, replace(metric, value=None, n=0, ci95=None, p_value=None, extra={}))
    result = []
    for metric in metrics:
        alt = others.get(key(metric.name))
        if alt is None:
            alt = MetricValue(metric.name, None, 0, metric.chance, None, None)
        if (alt.n != metric.n or (alt.value is None) != (metric.value is None)
                or (alt.value is not None and abs(alt.value - metric.value) > 1e-9)):
            metric = replace(metric, extra={**metric.extra, other.reading: {
                "value": alt.value, "n": alt.n, "chance": alt.chance, "p_value": alt.p_value,
                "ci95": list(alt.ci95) if alt.ci95 else None}})
        result.append(metric)
    return replace(shown, metrics=result, released=shown.released or other.released)
