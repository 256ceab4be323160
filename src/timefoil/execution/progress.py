"""A run's progress: a bar on a terminal, a line every so often in a log (piped output, CI), nothing
when turned off; and, on a resumed run, one line saying how many answers it kept."""
from __future__ import annotations

import os
import sys
import time

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

    def __enter__(self):
        self.started = time.perf_counter()
        if self.mode and self.completed:  # a resumed run: what it kept, before it asks the rest
            print(f"{self.label}: resuming, {self.completed} answers kept, {self.total} to ask", file=sys.stderr,
                  flush=True)
        if self.mode == "lines":
            return self._line_advance()
        if self.mode != "bar":
            return lambda n: None
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TextColumn("{task.fields[rate]}"), TimeRemainingColumn(), transient=True)
        self.bar.__enter__()
        task = self.bar.add_task(self.label, total=self.total + self.completed, completed=self.completed,
                                 rate="")

        def advance(n: int) -> None:
            self.done += n
            rate = self.done / max(1e-9, time.perf_counter() - self.started)
            self.bar.update(task, advance=n, rate=f"{rate:.1f} req/s")

        return advance

    def _line_advance(self):
        every = float(os.environ.get("TIMEFOIL_PROGRESS_SECONDS") or LINE_SECONDS)
        last = [self.started]

        def advance(n: int) -> None:
            self.done += n
            now = time.perf_counter()
            if now - last[0] >= every:
                last[0] = now
                self._say(now)

        return advance

    def _say(self, now: float) -> None:
        seconds = now - self.started
        rate = self.done / max(1e-9, seconds)
        left = self.total - self.done
        eta = f", about {_duration(left / rate)} left" if rate > 0 and left > 0 else ""
        whole = self.total + self.completed
        print(f"{self.label}: {self.done + self.completed}/{whole} answered "
              f"({100 * (self.done + self.completed) / max(1, whole):.0f}%), {rate:.1f} req/s{eta}",
              file=sys.stderr, flush=True)

    def __exit__(self, *exc):
        if self.mode == "bar":
            self.bar.__exit__(*exc)
        elif self.mode == "lines" and self.done and exc[0] is None:
            self._say(time.perf_counter())  # the last line: where the run ended
        return False


def _duration(seconds: float) -> str:
    minutes, seconds = divmod(int(seconds + 0.5), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{seconds:02d}s" if minutes else f"{seconds}s"
