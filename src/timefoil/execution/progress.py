"""The terminal's progress bar for a run."""
from __future__ import annotations

import time


class progress:
    """A rich progress bar with items/s and ETA; silent when disabled."""

    def __init__(self, enabled: bool, total: int, completed: int, label: str):
        self.enabled, self.total, self.completed, self.label = enabled, total, completed, label

    def __enter__(self):
        if not self.enabled:
            return lambda n: None
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TextColumn("{task.fields[rate]}"), TimeRemainingColumn(), transient=True)
        self.bar.__enter__()
        task = self.bar.add_task(self.label, total=self.total + self.completed, completed=self.completed,
                                 rate="")
        started = time.perf_counter()
        counted = [0]

        def advance(n: int) -> None:
            counted[0] += n
            rate = counted[0] / max(1e-9, time.perf_counter() - started)
            self.bar.update(task, advance=n, rate=f"{rate:.1f} req/s")

        return advance

    def __exit__(self, *exc):
        if self.enabled:
            self.bar.__exit__(*exc)
        return False
