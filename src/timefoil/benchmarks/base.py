"""What a benchmark declares: how to load its items and how its paper asks and reports."""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Callable

from ..core.items import Item, VideoRef
from ..protocols import PROTOCOLS, Prompts
from ..protocols.readings import ReadingRule
from ..scoring import SummarySpec
from ..video.sampling import Sampling


MAX_SECONDS = 1e6  # a time beyond 11 days is no place in any benchmark's video
MAX_INDEX = 10_000  # more options than this is no question

# Labels of the rows in which a paper quotes its chance baseline (ViLMA's "random").
CHANCE_LABELS = ("random", "chance", "random chance")


class DataError(ValueError):
    """A benchmark file that cannot be used; the message names file, record and field."""


@dataclass(frozen=True)
class PaperRow:
    """A row quoted from the paper: whose, asked how, where, and its numbers by the metric
    names timefoil reports ("overall/group", "overall/average StrictVLE")."""

    label: str
    protocol: str
    source: str
    values: dict[str, float]
    origin: str = "paper"  # one of ORIGINS: the paper's table, or the benchmark's repository

    @property
    def cited(self) -> str:
        """Where its numbers come from, as every table labels them: "paper, Table 2", "released README"."""
        return self.origin if self.source in ("", "paper", self.origin) else f"{self.origin}, {self.source}"

    @property
    def quoted_from(self) -> str:
        """The same in a sentence: "the paper (Table 2)", "the released README"."""
        where = self.origin if self.source in ("", "paper", self.origin) else f"{self.origin} ({self.source})"
        return f"the {where}"

    def describe(self) -> str:
        """Its overall numbers (a number per test stands in its paper table); a row the paper
        gives per test only (VELOCITI's Table 10) with every number, each named by its test."""
        overall = {k: v for k, v in self.values.items() if k.startswith("overall/")}
        shown = overall or self.values
        return f"{self.label} " + ", ".join(f"{k.removeprefix('overall/')} {v}" for k, v in shown.items()
                                            if v is not None)


# Where a quoted number comes from: the paper, or the benchmark's released repository (its
# README, or its code). A number timefoil computed is labelled "run".
ORIGINS = ("paper", "released README", "released code")


def paper_rows(protocol: str, source: str, metrics: tuple[str, ...], rows: dict[str, tuple[float | None, ...]],
               origin: str = "paper") -> tuple[PaperRow, ...]:
    """Rows of one quoted table: each label's numbers in the order of ``metrics``; None where the
    paper prints none ("-"). ``origin``: where the table is printed (ORIGINS)."""
    if origin not in ORIGINS:
        raise ValueError(f"{source}: origin {origin!r} is none of {ORIGINS}")
    for label, values in rows.items():
        if len(values) != len(metrics):
            raise ValueError(f"{source} row {label!r}: {len(values)} numbers for {len(metrics)} columns")
    return tuple(PaperRow(label, protocol, source, {m: v for m, v in zip(metrics, values) if v is not None}, origin)
                 for label, values in rows.items())


AVG = "Avg"  # a paper table's column of the average over tests: the metric "overall/average <metric>"


@dataclass(frozen=True)
class PaperShape:
    """One of the paper's tables as timefoil prints it for runs of ``protocol``: the runs as
    rows, and for each of ``sections`` in the paper's order (tests, then ``AVG``), or for each
    category of ``kind`` in the paper's order, the ``metrics`` in the paper's order. The quoted
    rows whose source is ``source`` ("Table 2") stand under it, in the order of the labels in
    ``order`` (others after)."""

    protocol: str
    source: str
    metrics: tuple[str, ...]
    sections: tuple[str, ...] = ()
    kind: str = ""  # a kind of category (SummarySpec.category_kinds): its categories are the sections
    what: str = ""  # what it shows, after its source in its title ("StrictVLE by test")
    order: tuple[str, ...] = ()

    def keys(self, section: str) -> tuple[str, ...]:
        """The metric names of a section's columns ("chrono/StrictVLE", "overall/average StrictVLE")."""
        return tuple(f"overall/average {m}" if section == AVG else f"{section}/{m}" for m in self.metrics)

    @property
    def columns(self) -> tuple[str, ...]:
        """Every column's metric name, in the paper's order: the order of its quoted rows' numbers."""
        return tuple(key for section in self.sections for key in self.keys(section))

    def rows(self, rows: dict[str, tuple[float | None, ...]]) -> tuple[PaperRow, ...]:
        """The paper's rows of this table, each label's numbers in the order of its columns."""
        return paper_rows(self.protocol, self.source, self.columns, rows)


@dataclass(frozen=True)
class Benchmark:
    """A benchmark's declaration. ``load(data_dir, **options)`` reads the published files;
    ``variants`` are alternative prompt sets (chain of thought, closed-model suffixes)."""

    name: str
    description: str
    load: Callable[..., list[Item]]
    shapes: frozenset[str] = frozenset({"texts"})  # the shapes of its items (Item.options_are)
    opt_out: dict[str, str] = field(default_factory=dict)  # protocol -> why this benchmark is not asked so
    default_protocol: str = "similarity"
    default_sampling: Sampling = Sampling(frames=8)
    prompts: Prompts = Prompts()
    variants: dict[str, Prompts] = field(default_factory=dict)
    order_policy: str = "balanced"
    summary: SummarySpec = field(default_factory=SummarySpec)
    unit: str = "groups"  # what `inspect` counts: "groups" or "items" (main items)
    table: dict[str, tuple[str, ...]] = field(default_factory=dict)  # protocol -> metrics of the paper table
    quoted: tuple[PaperRow, ...] = ()  # the paper's published rows, shown under a run's tables
    reference: str = ""  # what to expect where there is no paper (the synthetic suite)
    survey: Callable[[str], dict] | None = None  # what `inspect` adds: records filtered out, files ignored
    hub_dataset: str | None = None  # the Hugging Face dataset repository `prepare` downloads
    obtain: str = ""  # where the files come from when `prepare` cannot download them
    released: ReadingRule | None = None  # how its released scorer reads answers (`--reading released`)
    # the paper's tables of runs (VELOCITI's Table 2: StrictVLE per test and its average), which
    # the terminal, the HTML report and the exports print; the paper's column names of tests
    paper_shapes: tuple[PaperShape, ...] = ()
    test_labels: dict[str, str] = field(default_factory=dict)
    # (variant, the variant keeping the default prompts): how the paper asked the models that answer
    # only in writing (its closed, API models), used for such a model where no variant is given
    written_variant: tuple[str, str] | None = None
    # loader option -> (the words it takes, what else it takes: "a file of item ids", or None):
    # a value that is neither is a usage error naming them, before anything loads
    option_values: dict[str, tuple[tuple[str, ...], str | None]] = field(default_factory=dict)

    @property
    def protocols(self) -> tuple[str, ...]:
        """Every registered protocol that accepts one of the benchmark's item shapes (a protocol
        defined outside timefoil included), less those it opts out of."""
        return tuple(name for name, protocol in PROTOCOLS.items()
                     if protocol.accepts & self.shapes and name not in self.opt_out)

    def refusal(self, protocol: str) -> str:
        """Why ``protocol`` cannot be asked of this benchmark, in one line."""
        reason = f" ({self.opt_out[protocol]})" if protocol in self.opt_out else ""
        return f"{self.name} has no {protocol!r} protocol{reason}; choose from {', '.join(self.protocols)}"

    @property
    def paper_numbers(self) -> str:
        """The quoted rows in one line (`timefoil list`)."""
        if not self.quoted:
            return self.reference
        by_table: dict[tuple[str, str], list[str]] = {}
        for row in self.quoted:
            by_table.setdefault((row.cited, row.protocol), []).append(row.describe())
        return "; ".join(f"{source} ({protocol}): {', '.join(rows)}" for (source, protocol), rows in by_table.items())

    def paper_chance(self, protocol: str, name: str) -> float | None:
        """The chance the paper states for a metric ("overall/group"), where a quoted row labelled
        random or chance gives one; the same figure holds for the metric in every section."""
        metric = name.rpartition("/")[2]
        for row in self.quoted:
            if row.protocol == protocol and row.label.lower() in CHANCE_LABELS:
                for quoted, value in row.values.items():
                    if quoted.rpartition("/")[2] == metric:
                        return value
        return None

    def prompts_for(self, variant: str | None, protocol: str | None = None) -> Prompts:
        """A variant's prompts; one written for other protocols than ``protocol`` is refused
        (VELOCITI's chain of thought asks for a Yes/No verdict, never a letter)."""
        if not variant:
            return self.prompts
        if variant not in self.variants:
            raise ValueError(f"{self.name} has no prompt variant {variant!r}; "
                             f"choose from {', '.join(sorted(self.variants)) or 'none'}")
        prompts = self.variants[variant]
        if protocol and prompts.protocols and protocol not in prompts.protocols:
            raise ValueError(f"{self.name}'s prompt variant {variant!r} is written for the "
                             f"{' and '.join(prompts.protocols)} protocol, not {protocol}")
        return prompts

    def prompt_sources(self) -> dict[str, str]:
        """Where each variant's wording comes from, the default first (`timefoil list`)."""
        named = {"(default)": self.prompts, **{f"--variant {n}": p for n, p in self.variants.items()}}
        return {name: prompts.source for name, prompts in named.items()}


def resolve_video(root: str, relative: str, where: str) -> VideoRef:
    """A video path inside the dataset root. An annotation that names a path out of it
    (absolute, or with "..") is refused; symbolic links the user put inside the folder are
    followed (a videos/ folder on another disk is the usual layout for large datasets)."""
    parts = relative.replace("\\", "/").split("/")
    # An absolute path, "..", or an absolute field glued after a prefix ("videos//etc/x").
    if os.path.isabs(relative) or ".." in parts or "" in parts[:-1] or "\0" in relative:
        raise DataError(f"{where}: video path {relative!r} leaves the dataset directory")
    return VideoRef.file(os.path.join(root, relative))


def need(record: dict, names: str | tuple[str, ...], where: str):
    """A required field, under any of its accepted names."""
    names = (names,) if isinstance(names, str) else names
    if not isinstance(record, dict):
        raise DataError(f"{where}: expected an object, found {type(record).__name__}")
    for name in names:
        if name in record and record[name] is not None:
            return record[name]
    accepted = " or ".join(repr(n) for n in names)
    raise DataError(f"{where}: missing field {accepted}")


def need_text(record: dict, names: str | tuple[str, ...], where: str) -> str:
    """A required non-empty string."""
    value = need(record, names, where)
    if not isinstance(value, str) or not value.strip():
        raise DataError(f"{where}: field {_name(names)} must be a non-empty string, found {_shown(value)}")
    return value


def need_texts(record: dict, names: str | tuple[str, ...], where: str) -> tuple[str, ...]:
    """A required non-empty list of non-empty strings (a lone string is not a list of one)."""
    value = need(record, names, where)
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v.strip() for v in value):
        raise DataError(f"{where}: field {_name(names)} must be a non-empty list of non-empty strings, "
                        f"found {_shown(value)}")
    return tuple(value)


def need_key(record: dict, names: str | tuple[str, ...], where: str) -> str:
    """A required identifier: a non-empty string, or an integer (published ids are either)."""
    value = need(record, names, where)
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str) or not value.strip():
        raise DataError(f"{where}: field {_name(names)} must be a non-empty string or an integer, "
                        f"found {_shown(value)}")
    return value


def need_number(record: dict, names: str | tuple[str, ...], where: str, low: float = -math.inf,
                high: float = math.inf) -> float:
    """A required finite number in [low, high] (not a boolean, not a numeric string)."""
    value = need(record, names, where)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            (isinstance(value, float) and not math.isfinite(value)):
        raise DataError(f"{where}: field {_name(names)} must be a finite number, found {_shown(value)}")
    if not low <= value <= high:  # compared exactly: an integer too large for a float is refused, not raised
        raise DataError(f"{where}: field {_name(names)} must lie in [{low:g}, {high:g}], found {_shown(value)}")
    return value


def need_index(record: dict, names: str | tuple[str, ...], where: str) -> int:
    """A required option index or count: an integer, not a boolean (its range is the item's to check)."""
    value = need(record, names, where)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < MAX_INDEX:
        raise DataError(f"{where}: field {_name(names)} must be an integer from 0 to {MAX_INDEX - 1}, "
                        f"found {_shown(value)}")
    return value


def need_object(record: dict, names: str | tuple[str, ...], where: str) -> dict:
    """A required JSON object."""
    value = need(record, names, where)
    if not isinstance(value, dict):
        raise DataError(f"{where}: field {_name(names)} must be an object, found {_shown(value)}")
    return value


def need_flag(record: dict, names: str | tuple[str, ...], where: str) -> bool:
    """A required yes/no: true/false, 1/0, or those words as text (as CSV and parquet spell them)."""
    value = need(record, names, where)
    spelled = value.strip().lower() if isinstance(value, str) else value
    for truth, spellings in ((True, (True, 1, "true", "1")), (False, (False, 0, "false", "0"))):
        if any(spelled == s and type(spelled) is type(s) for s in spellings):
            return truth
    raise DataError(f"{where}: field {_name(names)} must be true or false, found {_shown(value)}")


def optional(record: dict, names: str | tuple[str, ...], check: Callable, where: str, default=None):
    """``check(record, names, where)`` when the field is given (and not null), else ``default``."""
    if not isinstance(record, dict):
        raise DataError(f"{where}: expected an object, found {type(record).__name__}")
    names = (names,) if isinstance(names, str) else names
    if any(record.get(name) is not None for name in names):
        return check(record, names, where)
    return default


def one_of(value: str, allowed: tuple[str, ...], field: str, where: str) -> str:
    if value not in allowed:
        raise DataError(f"{where}: field {field!r} must be one of {', '.join(allowed)}, found {_shown(value)}")
    return value


def window(record: dict, start: str, end: str, where: str) -> tuple[float | None, float | None]:
    """Optional [start, end] seconds: numbers in [0, MAX_SECONDS] with start < end when both are given."""
    low = optional(record, start, lambda r, n, w: need_number(r, n, w, 0, MAX_SECONDS), where)
    high = optional(record, end, lambda r, n, w: need_number(r, n, w, 0, MAX_SECONDS), where)
    if low is not None and high is not None and not low < high:
        raise DataError(f"{where}: {start} ({low}) must come before {end} ({high})")
    return low, high


def make_item(where: str, **fields) -> Item:
    """An ``Item``; its own checks (options, target, labels) refused with the place named."""
    try:
        return Item(**fields)
    except ValueError as exc:
        raise DataError(f"{where}: {exc}") from None


def distinct(items: list[tuple[str, Item]], source: str) -> list[Item]:
    """The items of ``(where, item)`` pairs: none if no id repeats and there is at least one."""
    if not items:
        raise DataError(f"{source}: no items to evaluate (every record was left out)")
    first: dict[str, str] = {}
    for where, item in items:
        if item.id in first:
            raise DataError(f"{where}: id {item.id!r} is already used ({first[item.id]})")
        first[item.id] = where
    return [item for _, item in items]


def _name(names: str | tuple[str, ...]) -> str:
    return " or ".join(repr(n) for n in ((names,) if isinstance(names, str) else names))


def _shown(value) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text[:40] + '...' if len(text) > 40 else text}"


def find_file(data_dir: str, names: tuple[str, ...], what: str) -> str:
    """The first of ``names`` present in ``data_dir`` (or its data/ folder)."""
    for folder in (data_dir, os.path.join(data_dir, "data")):
        for name in names:
            path = os.path.join(folder, name)
            if os.path.exists(path):
                return path
    raise DataError(f"{data_dir}: no {what} found (looked for {', '.join(names)})")
