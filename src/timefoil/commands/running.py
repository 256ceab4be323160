"""What ``timefoil run`` says when it ends: the failures, the command that re-asks them, the exit
code's policy, and the Ray workers' share."""
from __future__ import annotations

import os
import shlex
import sys
import time
from collections import Counter
from typing import Sequence

from ..core.outside import terminal_line
from ..core.redaction import redact
from ..measures.stats import unread_of
from ..scoring import ScoreReport

# Exit codes: 0 done; 1 a run that could not start or a command that failed (one line says why);
# 2 a usage error (click); 3 a run that finished but with failed requests above --max-error-rate.
EXIT_FAILED_REQUESTS = 3


def _reason(error: str) -> str:
    """The kind of an error message, without its paths and details."""
    return terminal_line(error.split(":")[0], 60) or "error"


def failure_summary(reports: Sequence[ScoreReport], retry_command: str) -> str | None:
    """One line: how many items failed, the commonest reasons, and the command that re-asks them."""
    failed, total = sum(r.errors for r in reports), sum(r.items for r in reports)
    if not failed:
        return None
    reasons = Counter(_reason(error) for r in reports for _, error in r.failures).most_common(3)
    said = "; ".join(f"{count} × {reason}" for reason, count in reasons)
    return f"{failed} of {total} items failed ({said}); ask them again with: {retry_command}"


def unread_summary(reports: Sequence[ScoreReport]) -> str | None:
    """One line naming the answers that could not be read, where some run's numbers are shown as
    unread for them (more than half of a number's answers: measures.stats.unread_of)."""
    unread = [r for r in reports if any(unread_of(m) for m in r.metrics)]
    if not unread:
        return None
    said = "; ".join(f"{r.benchmark} · {r.protocol}: {r.parse_failures + r.stopped:,} of {r.answers:,} "
                     f"({r.parse_failures:,} parse failures, {r.stopped:,} stopped)" for r in unread)
    return (f"answers that could not be read: {said}; their numbers are shown as unread, not as scores "
            "(the replies: timefoil report OUT --html FILE, its sample browser)")


def too_many_failed(reports: Sequence[ScoreReport], max_error_rate: float) -> bool:
    """More failed items than ``--max-error-rate`` allows: the run exits with EXIT_FAILED_REQUESTS."""
    return sum(r.errors for r in reports) > max_error_rate * sum(r.items for r in reports)


def retry_command(argv: Sequence[str], retry_errors: bool) -> str:
    """The command line that asks the failed requests again: the user's own, with --retry-errors."""
    program = argv[0] if argv else ""
    as_module = os.path.join("timefoil", "cli", "__main__.py")  # python -m timefoil.cli
    invoked = "timefoil" in os.path.basename(program) or program.endswith(as_module)
    if not invoked:
        return "the same command with --retry-errors"
    return " ".join(["timefoil"] + [shlex.quote(a) for a in argv[1:]] + ([] if retry_errors else ["--retry-errors"]))


def worker_lines(summary: dict) -> list[str]:
    """Requests each Ray worker answered this session, and the workers lost."""
    lines = [f"{label}: {count} requests" for label, count in summary["workers"].items()]
    lines += [f"lost {label}: {reason}" for label, reason in summary["lost"].items()]
    if summary["requeued_batches"]:
        lines.append(f"{summary['requeued_batches']} batches of lost workers answered by the others")
    return lines


PLACEMENT_ARGS = ("device", "dtype", "device_map")  # the model options a loading line names


def load_announced(spec: str, options: dict, *, cache_dir: str | None = None):
    """``load_model``, with a line on stderr before (a 7B model takes minutes to load, and the
    screen would be blank) and one after saying where it landed and how long it took."""
    from ..models import load_model

    asked = ", ".join(f"{key}={options[key]}" for key in PLACEMENT_ARGS if key in options)
    print(f"loading {redact(spec)}" + (f" ({asked})" if asked else ""), file=sys.stderr, flush=True)
    started = time.perf_counter()
    model = load_model(spec, options, cache_dir=cache_dir)
    placed = (getattr(model, "notes", None) or {}).get("ran_on")
    where = f" on {placed.get('device', '?')}, {placed.get('dtype', '?')}" if isinstance(placed, dict) else ""
    print(f"loaded {redact(spec)}{where} in {time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)
    return model
