"""Terminal tables that keep every column and every cell whole. A table wider than the
terminal is stacked: its metric columns go under each other, a row per (row, column) that holds
a number, under one title, so no label is repeated and no figure stands beside another row's
label; where even that does not fit, each row becomes a record of its own. Piped output (a log,
CI, a file) gets every table whole, however wide."""
from __future__ import annotations

import sys
from dataclasses import fields
from typing import IO

from rich.console import Console, RenderableType
from rich.measure import Measurement
from rich.table import Column, Table
from rich.text import Text

PIPED = 1000  # columns of piped output: wider than any table, so none is split or cut
PROSE = 120  # prose lines wrap here even in a log
# what a part of a table keeps of the whole
KEPT = ("title_justify", "box", "padding", "show_header", "show_edge", "show_lines", "header_style", "style",
        "pad_edge", "collapse_padding", "leading", "row_styles", "border_style", "title_style")


def make_console(file: IO[str] | None = None) -> Console:
    """The terminal's width on a terminal; anywhere else every table whole."""
    target = file if file is not None else sys.stdout
    tty = bool(getattr(target, "isatty", None) and target.isatty())
    return Console(file=file, width=None if tty else PIPED)


def say(console: Console, text: str | Text, style: str = "", markup: bool = True) -> None:
    """A line of prose, wrapped at PROSE columns or the terminal's width."""
    console.print(text, style=style, markup=markup, width=min(console.width, PROSE))


def needed_width(console: Console, table: Table) -> int:
    """Columns the table needs with no cell cut: the widest line of each no-wrap column, the
    longest word of each column that wraps, plus borders and padding."""
    options = console.options.update_width(PIPED * 10)
    whole = Measurement.get(console, options, table).maximum
    natural, least = 0, 0
    for column in table.columns:
        cells = [column.header, *column.cells] if table.show_header else list(column.cells)
        sizes = [Measurement.get(console, options, cell) for cell in cells] or [Measurement(1, 1)]
        widest = max(m.maximum for m in sizes)
        if column.max_width is not None:
            widest = min(widest, column.max_width)
        natural += widest
        least += widest if column.no_wrap else min(widest, max(m.minimum for m in sizes))
    return whole - natural + least


def _empty(column: Column) -> Column:
    """The column's settings, without its cells."""
    return Column(**{f.name: getattr(column, f.name) for f in fields(Column) if not f.name.startswith("_")})


def _part(table: Table, columns: list[int], title: str | Text | None) -> Table:
    part = Table(*[_empty(table.columns[i]) for i in columns], title=title,
                 **{name: getattr(table, name) for name in KEPT})
    cells = [list(table.columns[i].cells) for i in columns]
    for row, values in zip(table.rows, zip(*cells)):
        part.add_row(*values, style=row.style, end_section=row.end_section)
    return part


def _records(table: Table, keep: int) -> list[Table]:
    """Each row as a table of its own: the metric's name, then its cell."""
    cells = [list(column.cells) for column in table.columns]
    records = []
    for index in range(len(table.rows)):
        label = " · ".join(" ".join(_plain(c[index]).split()) for c in cells[:keep])
        record = Table(title=f"{_plain(table.title)} · {label}".strip(" ·"), title_justify="left",
                       show_header=False, box=table.box)
        record.add_column(no_wrap=True)
        record.add_column(justify="right", no_wrap=True)
        for column, values in zip(table.columns[keep:], cells[keep:]):
            record.add_row(column.header, values[index])
        records.append(record)
    return records


def _plain(text) -> str:
    """A title's or cell's characters (a string cell is markup)."""
    if text is None:
        return ""
    if isinstance(text, Text):
        return text.plain
    return Text.from_markup(text).plain if isinstance(text, str) else str(text)


STACKED = ("metric", "value")  # the two columns a stacked table's metric columns become


def stacked(table: Table, keep: int) -> Table:
    """The table with its columns after the first ``keep`` (the row labels) stacked: each row's
    cells that hold something, one under the other, each beside its column's name; a row's labels
    on its first line only. A column empty in every row is named once, with "–"."""
    part = Table(*[_empty(table.columns[i]) for i in range(keep)], title=table.title,
                 **{name: getattr(table, name) for name in KEPT})
    for column in part.columns:  # a label may wrap: every line of it stays beside its own figures
        column.no_wrap = False
    part.add_column(STACKED[0])
    part.add_column(STACKED[1], justify="right", no_wrap=True)
    cells = [list(column.cells) for column in table.columns]
    held = [[index for index in range(keep, len(table.columns)) if not _blank(cells[index][row])]
            for row in range(len(table.rows))]
    never = [index for index in range(keep, len(table.columns)) if not any(index in h for h in held)]
    for row, (source, indices) in enumerate(zip(table.rows, held)):
        indices = indices + (never if row == 0 else [])
        labels = [cells[i][row] for i in range(keep)]
        for k, index in enumerate(indices or [None]):
            name = table.columns[index].header if index is not None else ""
            value = cells[index][row] if index is not None else Text("–", style="dim")
            part.add_row(*(labels if k == 0 else [""] * keep), name, value, style=source.style,
                         end_section=k == max(len(indices), 1) - 1)
    return part


def _blank(cell) -> bool:
    return _plain(cell).strip() in ("", "–")


def fitted(console: Console, table: Table, keep: int = 1) -> list[RenderableType]:
    """``table`` as it fits ``console``: whole, else stacked (``stacked``), else as one record
    per row."""
    width = console.width
    if needed_width(console, table) <= width:
        return [table]
    folded = stacked(table, keep)
    if needed_width(console, folded) <= width:
        return [folded]
    return _records(table, keep)


def print_table(console: Console, table: Table, keep: int = 1) -> None:
    for part in fitted(console, table, keep):
        console.print(part)

