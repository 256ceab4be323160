"""A run's progress, on stderr (stdout keeps the tables, and may go to a file while the terminal
watches): a bar where stderr is a terminal; elsewhere (a log, nohup, a Slurm job, CI) a line every
so often and one when the benchmark ends, e.g. ``velociti · entailment: 1,200 / 17,584 (7%) ·
35 req/s · eta 8 min``; nothing when turned off; and, on a resumed run, one line saying how many
answers it kept."""
from __future__ import annotations

import sys
import time

from ..core.environment import seconds

LINE_SECONDS = 30.0  # a log gets a line at most this often (TIMEFOIL_PROGRESS_SECONDS), and a last one


def progress_mode(enabled: bool | str) -> str | None:
    """"bar", "lines" or None: True picks the bar on a terminal and lines elsewhere."""
    if enabled is True:
        return "bar" if sys.stderr.isatty() else "lines"
    return enabled or None


class progress:
    """Context manager giving ``advance(n)``: a rich bar with items/s and ETA, or log lines."""

    def __init__(self, enabled: bool | str, total: int, completed: int, label: str):
        self.mode, self.total, self.completed, self.label = progress_mode(enabled), total, completed, label
        self.done = 0
        # the last line waits for finish(note) where the caller has something to add once the
        # answers are scored (how many could not be read)
        self.hold_last, self.ended = False, None

    def __enter__(self):
        self.started = time.perf_counter()
        if self.mode and self.completed:  # a resumed run: what it kept, before it asks the rest
            print(f"{self.label}: resuming, {self.completed:,} answers kept, {self.total:,} to ask", file=sys.stderr,
                  flush=True)
        if self.mode == "lines":
            return self._line_advance()
        if self.mode != "bar":
            return lambda n: None
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TextColumn("{task.fields[rate]}"), TimeRemainingColumn(), transient=True,
                            console=Console(stderr=True))
        self.bar.__enter__()
        task = self.bar.add_task(self.label, total=self.total + self.completed, completed=self.completed,
                                 rate="")

        def advance(n: int) -> None:
            self.done += n
            rate = self.done / max(1e-9, time.perf_counter() - self.started)
            self.bar.update(task, advance=n, rate=f"{rate:.1f} req/s")

        return advance

    def _line_advance(self):
        every = seconds("TIMEFOIL_PROGRESS_SECONDS")
        every = LINE_SECONDS if every is None else every  # 0: a line at every answer
        last = [self.started]

        def advance(n: int) -> None:
            self.done += n
            now = time.perf_counter()
            if now - last[0] >= every:
                last[0] = now
                self._say(now)

        return advance

    def _say(self, now: float, last: bool = False, note: str | None = None) -> None:
        seconds = now - self.started
        rate = self.done / max(1e-9, seconds)
        left = self.total - self.done
        whole, answered = self.total + self.completed, self.done + self.completed
        said = [f"{self.label}: {answered:,} / {whole:,} ({100 * answered / max(1, whole):.0f}%)"]
        if self.done:
            said.append(f"{rate:,.0f} req/s" if rate >= 10 else f"{rate:.1f} req/s")
        if last:
            said.append(f"done in {_duration(seconds)}")
        elif rate > 0 and left > 0:
            said.append(f"eta {_duration(left / rate)}")
        if note:
            said.append(note)
        print(" · ".join(said), file=sys.stderr, flush=True)

    def __exit__(self, *exc):
        if self.mode == "bar":
            self.bar.__exit__(*exc)  # the bar goes; the line below stays on the terminal
        if self.mode in ("bar", "lines") and exc[0] is None:
            self.ended = time.perf_counter()
            if not self.hold_last:
                self._say(self.ended, last=True)  # the last line: where the benchmark ended
        return False

    def finish(self, note: str | None = None) -> None:
        """The held last line, with ``note`` at its end (e.g. "84 / 84 answers unread")."""
        if self.hold_last and self.ended is not None:
            self._say(self.ended, last=True, note=note)


def _duration(seconds: float) -> str:
    """Seconds in words a log reader takes in at a glance: 45 s, 8 min, 2 h 05 min."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes = int(seconds / 60 + 0.5)
    return f"{minutes // 60} h {minutes % 60:02d} min" if minutes >= 60 else f"{minutes} min"
