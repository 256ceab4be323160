"""Terminal tables from stored runs: sections as rows, metrics as columns, as the papers lay
them out; bold where significantly above chance, each number with its own chance and 95% CI."""
from __future__ import annotations

import re
from collections import OrderedDict
from dataclasses import dataclass, replace

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..benchmarks import get_benchmark
from ..protocols import OWN_WORDING, PROTOCOLS
from ..protocols.readings import MEANT, READINGS
from ..execution.stored import load_run, score_run
from ..scoring import ScoreReport, cut_line
from ..measures.stats import MetricValue, unread_of, unread_words
from ..core.outside import terminal_line
from .fit import make_console, print_table, say
from .headline import ABOVE, BELOW, RULE, headline, mark_of, with_marks
from .shapes import COVERAGE, Shaped, shaped_tables, shown_sources

__all__ = ["make_console"]  # where the commands have always found it


@dataclass
class ScoredRun:
    run_dir: str
    label: str
    sampling: str
    report: ScoreReport
    ran_on: str = ""  # device · dtype · attention · forward, where a local model said (run.json's model notes)


def load_scored(run_dir: str, reading: str = MEANT) -> ScoredRun:
    """A run scored under ``reading`` ("meant" or "released"), the other reading's numbers beside."""
    meta, records = load_run(run_dir)
    config = meta["config"]
    sampling = config.get("sampling") or {}
    label = f"{sampling['frames']}f" if sampling.get("frames") else f"{sampling.get('fps')}fps"
    if sampling.get("single_frame"):
        label += " single"
    if sampling.get("order", "natural") != "natural":
        label += f" {sampling['order']}"
    if config.get("blind"):
        label = "blind"
    elif (meta.get("model_notes") or {}).get("text_only"):  # a text LM sees no frames, --blind or not
        label = "text only"
    worded = prompts_label(config, meta.get("prompts"), records)
    placed = (meta.get("model_notes") or {}).get("ran_on")
    # what ran the suffixes and decoding steps (eager or compiled), where the run said
    ran_on = " · ".join([str(placed.get(k, "?")) for k in ("device", "dtype", "attention")]
                        + ([str(placed["forward"])] if "forward" in placed else [])) if isinstance(placed, dict) else ""
    return ScoredRun(run_dir, f"{config['model']} · {label}" + (f" · {worded}" if worded else ""), label,
                     with_marks(score_run(run_dir, reading=reading)), ran_on)


PUBLISHED = "published questions"


def prompts_label(config: dict, source: str | None = None, records: list[dict] | None = None) -> str:
    """The run's prompt variant, marked where the wording is timefoil's own or where every
    question was a published one asked verbatim (the records say which: a source may name both,
    TemporalBench's published questions and its own wording for entailment); nothing for the
    default prompts of a paper or for a protocol that scores texts without asking. ``source``:
    where the wording came from, as stored in run.json when the run was made."""
    variant = config.get("variant")
    try:
        asks = PROTOCOLS.find(config.get("protocol") or "").prompted
        source = source or get_benchmark(config["benchmark"]).prompts_for(variant).source
    except ValueError:  # a benchmark, protocol or variant this version does not declare
        return variant or ""
    if asks and records and all(r["request"].get("published") for r in records):
        return f"{variant} ({PUBLISHED})" if variant else PUBLISHED
    own = asks and OWN_WORDING in source
    if not asks or not (variant or own):
        return variant or ""
    return f"{variant or 'default prompts'}" + (f" ({OWN_WORDING})" if own else "")


def split_name(name: str) -> tuple[str, str]:
    section, _, metric = name.rpartition("/")
    return section, metric


def format_difference(points: float | None) -> str:
    return "" if points is None else f"{points:+.1f}"


def format_p(p_value: float | None) -> str:
    return "" if p_value is None else f"{p_value:.3g}"


def other_reading(metric: MetricValue | None) -> tuple[str, dict] | None:
    """(reading, its number) where the other reading of the answers gives another number."""
    for name in READINGS:
        if metric is not None and isinstance(metric.extra.get(name), dict):
            return name, metric.extra[name]
    return None


def reading_line(report: ScoreReport) -> str | None:
    """How the answers were read and what the released rule changes, where it changes anything."""
    released = report.released
    if not released or (report.reading == MEANT and not released["read_differently"] and not released["dropped"]):
        return None
    return (f"read as {report.reading} · released rule: {released['read_differently']} answers read otherwise than "
            f"meant, {released['dropped']} items dropped ({released['source']})")


def value_text(metric: MetricValue) -> Text:
    """The value with its mark: ▲ (and bold) above chance, ▼ (and red) below; a mark that
    survives where bold and colour do not (a log, a file). A metric whose answers are mostly
    unread is no score: "— (84 / 84 unread)" stands in its place."""
    counts = unread_of(metric)
    if counts:
        return Text(unread_words(counts), style="red")
    mark = mark_of(metric)
    text = Text(f"{metric.value:.1f}", style="bold" if mark == ABOVE else "red" if mark == BELOW else "")
    if mark in (ABOVE, BELOW):
        text.append("▲" if mark == ABOVE else "▼", style="bold" if mark == ABOVE else "red")
    return text


def metric_cell(metric: MetricValue | None, n: int | None = None) -> Text:
    """Value, CI half-width, the metric's own chance, and its n where it differs from ``n``."""
    if metric is None or metric.value is None:
        return _with_other_reading(Text("–", style="dim"), metric)
    text = value_text(metric)
    if unread_of(metric):  # no interval, chance or n beside a number that is not shown
        return _with_other_reading(text, metric)
    if metric.ci95:
        text.append(f" ±{(metric.ci95[1] - metric.ci95[0]) / 2:.1f}", style="dim")
    if metric.extra.get("warning"):
        text.append(" !", style="red")
    below = [f"c {metric.chance:.1f}"] if metric.chance is not None else []
    if metric.extra.get("paper_chance") is not None:  # the paper marks its table against this one
        below.append(f"paper c {metric.extra['paper_chance']:.1f}")
    if n is not None and metric.n != n:
        below.append(f"n {metric.n}")
    if below:  # a second line: this number's own chance (and n), not the overall one
        text.append("\n" + " · ".join(below), style="italic dim")
    return _with_other_reading(text, metric)


def _with_other_reading(text: Text, metric: MetricValue | None) -> Text:
    """``text`` and, where the other reading of the answers gives another number, that number
    with its reading's name and n: also under a "–" (a test the released reading drops whole)."""
    other = other_reading(metric)
    if other is not None:
        name, alt = other
        shown = "–" if alt["value"] is None else f"{alt['value']:.1f}"
        text.append(f"\n{name} {shown} · n {alt['n']}", style="magenta")
    return text


def run_table(run: ScoredRun, named: bool = True) -> Table:
    """The run's sections as rows, its metrics as columns; ``named`` False: its title leaves out
    the model, named once above every run's table."""
    report = run.report
    label = run.label if named else run.label.removeprefix(f"{report.model} · ")
    by_section: OrderedDict[str, dict[str, MetricValue]] = OrderedDict()
    columns: list[str] = []
    for metric in report.metrics:
        section, name = split_name(metric.name)
        by_section.setdefault(section, {})[name] = metric
        if name not in columns:
            columns.append(name)
    table = Table(title=f"{report.benchmark} · {report.protocol} · {label}", title_justify="left")
    table.add_column("section", no_wrap=True)
    table.add_column("n", justify="right", no_wrap=True)
    for name in columns:
        table.add_column(name, justify="right", no_wrap=True)
    for section, metrics in by_section.items():
        for label, part in _overall_rows(section, metrics):
            first = next(iter(part.values()))
            left_out = next((m.extra["excludes"] for m in part.values() if m.extra.get("excludes")), None)
            label = f"{label} (without {left_out})" if left_out else label
            table.add_row(label, str(first.n), *[metric_cell(part.get(c), first.n) for c in columns])
    shown = shown_sources(report.benchmark, report.protocol)  # those rows stand under the paper's tables
    for row in [r for r in quoted_rows(report.benchmark, report.protocol, [f"overall/{c}" for c in columns])
                if r.source not in shown]:
        table.add_row(Text(f"{row.origin} · {row.label}", style="italic cyan"), "",
                      *[Text(f"{row.values[f'overall/{c}']:.1f}" if f"overall/{c}" in row.values else "",
                             style="italic cyan") for c in columns])
    return table


def _overall_rows(section: str, metrics: dict[str, MetricValue]) -> list[tuple[str, dict[str, MetricValue]]]:
    """A section's rows: the overall section in two where it holds averages over tests beside
    numbers pooled over the items, each row named for what it holds."""
    averages = {name: m for name, m in metrics.items() if name.startswith("average ")}
    if section != "overall" or not averages or len(averages) == len(metrics):
        return [(section, metrics)]
    return [("average over tests", averages),
            ("pooled", {name: m for name, m in metrics.items() if name not in averages})]


def missing_tests(report: ScoreReport) -> list[str]:
    """The paper's tests this run has no items of."""
    try:
        expected = get_benchmark(report.benchmark).summary.tests
    except ValueError:
        return []
    present = {split_name(m.name)[0].split("/")[0] for m in report.metrics}
    if len(present - {"overall"}) <= 1 and "overall" in present:  # one test: scoring names no test sections
        return []
    return [t for t in expected if t not in present]


def quoted_rows(benchmark: str, protocol: str, names: list[str]):
    """The paper's rows for this benchmark and protocol that have a number in one of ``names``."""
    try:
        declared = get_benchmark(benchmark)
    except ValueError:
        return []
    return [row for row in declared.quoted if row.protocol == protocol and set(row.values) & set(names)]


def nominal_chance(benchmark: str, protocol: str, name: str) -> float | None:
    """The chance level the paper states for a metric, where it quotes one."""
    try:
        return get_benchmark(benchmark).paper_chance(protocol, name)
    except ValueError:
        return None


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def same_model_rows(benchmark: str, protocol: str, model: str, names: list[str]):
    """The paper's rows for the model a run used: every word of the row's model name (before a
    comma or parenthesis: "LLaVA-OneVision-7B, 1 frame") is a word of the run's model spec
    ("hf:llava-hf/llava-onevision-qwen2-7b-ov-hf"), so 7B does not match 72B."""
    spec = _words(model)
    return [row for row in quoted_rows(benchmark, protocol, names)
            if (words := _words(re.split(r"[,(]", row.label)[0])) and words <= spec]


def paper_numbers(benchmark: str, protocol: str, model: str, name: str) -> list[tuple[object, float]]:
    """(row, number) of each paper row for the same model that quotes metric ``name``; an
    average over fewer tests than the paper's stands beside the paper's average."""
    name = COVERAGE.sub("", name)
    return [(row, row.values[name]) for row in same_model_rows(benchmark, protocol, model, [name])
            if name in row.values]


def failure_lines(run: ScoredRun, limit: int = 10) -> list[str]:
    report = run.report
    lines = [f"{report.items} items · {report.errors} with errors · {report.parse_failures} parse failures · "
             f"{report.stopped} stopped (refused, blocked or out of tokens) · {report.ties} ties"]
    unread = unread_line(report)
    if unread:
        lines.append(f"  {unread}")
    if run.ran_on:
        lines.append(f"  ran on {run.ran_on}")
    read = reading_line(report)
    if read:
        lines.append(f"  {read}")
    if report.corrupt_lines:
        shown = ", ".join(map(str, report.corrupt_lines[:10])) + (" ..." if len(report.corrupt_lines) > 10 else "")
        lines.append(f"  corrupt lines in items.jsonl skipped: {shown} (timefoil check {run.run_dir})")
    if report.texts_cut:  # captions cut to a contrastive model's text limit: never silent
        lines.append(f"  {cut_line(report.texts_cut)}")
    missing = missing_tests(report)
    if missing:
        lines.append(f"  missing or empty tests: {', '.join(missing)} (the averages cover the others, as named)")
    for item_id, error in report.failures[:limit]:
        # an item's name comes from the data and its error from a server or a plugin: shown as one
        # clean line (escape sequences out, the length capped); score --json and items.jsonl hold it whole
        lines.append(f"  error  {terminal_line(item_id, 120)}: {terminal_line(error)}")
    if len(report.failures) > limit:
        lines.append(f"  ... and {len(report.failures) - limit} more (timefoil score --json lists all)")
    return lines


def unread_line(report: ScoreReport) -> str | None:
    """The line naming a run's unread answers, where some of its numbers are shown as unread."""
    if not any(unread_of(m) for m in report.metrics):
        return None
    share = f"{report.parse_failures + report.stopped:,} of {report.answers:,} answers"
    return (f"{report.benchmark} · {report.protocol}: {share} could not be read ({report.parse_failures:,} parse "
            f"failures, {report.stopped:,} stopped); numbers read from fewer than half their answers are shown as "
            f"unread, not as scores")


LEGEND = (f"{RULE} · ±: half-width of the 95% CI · c: that number's chance · paper c: the chance the paper "
          "states, where it differs · n: its own count where it differs from the row's · !: joined videos with "
          "fewer than 3 frames · paper · / released README · / released code ·: quoted from the paper or the "
          "benchmark's repository, not run here · meant / released: the number under the other reading of the "
          "answers, where it differs (under a – where that reading has none) · — (u / n unread): more than half "
          "of that number's n answers could not be read, so it is no score")


def print_runs(runs: list[ScoredRun], console: Console | None = None, headlines: bool = True) -> None:
    """Each run's tables, runs of one benchmark side by side, the paper's tables its benchmark
    declares (runs as rows, the paper's rows under them), then the headline figures of all
    (``headlines`` False: a card printed before them shows those)."""
    console = console or make_console()
    # marked here too: ``score`` swaps in the report it scored itself
    runs = [replace(run, report=with_marks(run.report)) for run in runs]
    models = {run.report.model for run in runs}
    shared = len(runs) > 1 and len(models) == 1  # the model named once, not in every table's title
    if shared:
        say(console, f"model {runs[0].report.model}", style="bold", markup=False)
    for run in runs:
        print_table(console, run_table(run, named=not shared), keep=2)
        for line in failure_lines(run):
            # not markup: an error quotes a server's words, and "[/b]" there would be read as a tag
            console.print(line, style="red" if line.startswith("  error") else "dim", markup=False)
    same_kind: OrderedDict[tuple[str, str], list[ScoredRun]] = OrderedDict()
    for run in runs:
        same_kind.setdefault((run.report.benchmark, run.report.protocol), []).append(run)
    for group in same_kind.values():
        if len(group) > 1:
            print_table(console, comparison_table(group))
        for shaped in shaped_tables(group):
            print_table(console, paper_table(shaped))
    if headlines:
        print_table(console, headline_table([(run.label, f"{run.report.benchmark} · {run.report.protocol}", run)
                                             for run in runs], "headline figures"), keep=3)
    say(console, LEGEND, style="dim")


def headline_table(rows: list[tuple[str, str, ScoredRun]], title: str, notes: list[str] | None = None,
                   heads: tuple[str, str, str] = ("run", "benchmark · protocol", "shows"),
                   papers: list[tuple[list[str], str]] | None = None) -> Table:
    """One row per (name, where, run): the run's headline figures, a line each (the headline
    first, then accuracy, A∧B and bias where they stand beside it), with interval and chance;
    and a note per run where ``notes`` are given. ``heads``: the names of the first two columns
    and of the notes'. ``papers``: per run, the paper's number beside each figure ("" where it
    quotes none) and whose row it is."""
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, padding=(0, 1), pad_edge=False)
    for name in heads[:2]:  # labels: they may wrap between words, the figures' lines may not
        table.add_column(name)
    table.add_column("metric", no_wrap=True)
    table.add_column("value", justify="right", no_wrap=True)
    table.add_column("chance", justify="right", no_wrap=True)
    if papers is not None:
        table.add_column("published", justify="right", no_wrap=True)
        table.add_column("published row, same model (where)")
    if notes is not None:
        table.add_column(heads[2], max_width=30)
    for index, (name, where, run) in enumerate(rows):
        metrics = {m.name: m for m in run.report.metrics}
        shown = [metrics[n] for n in headline(run.report) if n in metrics]
        values, chances = Text(), Text()
        for k, metric in enumerate(shown):
            if k:
                values.append("\n")
                chances.append("\n")
            if metric.value is None:
                values.append_text(_with_other_reading(Text("–", style="dim"), metric))
            else:
                values.append_text(value_text(metric))
                if metric.ci95 and not unread_of(metric):
                    values.append(f" ±{(metric.ci95[1] - metric.ci95[0]) / 2:.1f}", style="dim")
            chances.append("" if metric.chance is None or unread_of(metric) else f"{metric.chance:.1f}")
        cells = [name, where, "\n".join(split_name(m.name)[1] for m in shown) or "–", values, chances]
        if papers is not None:
            numbers, whose = papers[index]
            cells += ["\n".join(numbers[:len(shown)]), whose]
        table.add_row(*cells, *([notes[index]] if notes is not None else []))
    return table


def paper_table(shaped: Shaped) -> Table:
    """A table of the paper's (``Benchmark.paper_shapes``): runs as rows, the paper's columns in
    its order, and the paper's rows for them in cyan."""
    table = Table(title=shaped.title, title_justify="left")
    table.add_column("run")  # a label: it may wrap between words
    for column in shaped.columns:  # the section's name over the metric's, where it shows several
        head = column.section if len(shaped.shape.metrics) == 1 else f"{column.section}\n{column.metric}"
        table.add_column(head, justify="right", no_wrap=True)
    for run, metrics in shaped.rows:
        table.add_row(run.label, *[metric_cell(metrics.get(c.key)) for c in shaped.columns])
    for row in shaped.quoted:
        table.add_row(Text(f"{row.origin} · {row.label}", style="italic cyan"),
                      *[Text("" if c.key not in row.values else f"{row.values[c.key]:.1f}", style="italic cyan")
                        for c in shaped.columns])
    return table


def comparison_table(runs: list[ScoredRun]) -> Table:
    """The overall metrics of several runs side by side (a frames sweep, or several models)."""
    columns: list[str] = []
    for run in runs:
        for metric in run.report.metrics:
            section, name = split_name(metric.name)
            if section == "overall" and name not in columns:
                columns.append(name)
    first = runs[0].report
    table = Table(title=f"{first.benchmark} · {first.protocol} · overall, side by side", title_justify="left")
    table.add_column("run")  # a label: it may wrap between words
    averaged = {COVERAGE.sub("", name).removeprefix("average ") for name in columns if name.startswith("average ")}
    for name in columns:  # a number pooled over the items, named so beside the average over tests
        table.add_column(f"pooled {name}" if name in averaged else name, justify="right", no_wrap=True)
    for run in runs:
        overall = {split_name(m.name)[1]: m for m in run.report.metrics if split_name(m.name)[0] == "overall"}
        table.add_row(run.label,
                      *[metric_cell(overall.get(c)) for c in columns])
    return table
