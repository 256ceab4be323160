"""How many CPU threads torch may use.

torch's default of one thread per logical core oversubscribes a shared machine (a forward pass
measured 22 times slower on a busy 2-core box). timefoil sets the count itself: ``--threads``
(or ``threads=``), else ``TIMEFOIL_THREADS``, else the physical cores this process may run on
less those other processes keep busy (the one-minute load average), at least one. Tests and
parallel workers set 1 each.
"""
from __future__ import annotations

import os
import sys

from .environment import whole_number


def physical_cores() -> int:
    """Physical cores available to this process (hyper-threads counted once)."""
    try:
        allowed = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        allowed = os.cpu_count() or 1
    cores = set()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            physical = core = None
            for line in handle:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "physical id":
                    physical = value.strip()
                elif key == "core id":
                    core = value.strip()
                elif not line.strip() and core is not None:
                    cores.add((physical, core))
                    physical = core = None
            if core is not None:
                cores.add((physical, core))
    except OSError:
        pass
    return max(1, min(allowed, len(cores) if cores else allowed))


def idle_cores() -> int:
    """Physical cores minus the load other processes put on the machine (at least one)."""
    cores = physical_cores()
    try:
        busy = int(os.getloadavg()[0] + 0.5)
    except (AttributeError, OSError):
        busy = 0
    return max(1, cores - busy)


def resolve_threads(threads: int | None = None) -> int:
    if threads is None:
        threads = whole_number("TIMEFOIL_THREADS")  # a value it cannot use is said naming it
    if threads is not None and threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads}")
    return threads or idle_cores()


MOST_DECODE_WORKERS = 8  # beyond this the videos held decoded ahead outgrow the frame store's memory


def decode_workers(workers: int | None = None, threads: int | None = None) -> int:
    """Threads that decode videos ahead of the answering: ``workers``, else
    ``TIMEFOIL_DECODE_WORKERS``, else as many as torch's threads (``threads``, else
    ``resolve_threads``: the same policy, so a test or a parallel worker that sets one thread
    decodes on one), at most ``MOST_DECODE_WORKERS``."""
    if workers is None and os.environ.get("TIMEFOIL_DECODE_WORKERS"):
        workers = int(os.environ["TIMEFOIL_DECODE_WORKERS"])
    if workers is not None:
        if workers < 1:
            raise ValueError(f"decode workers must be at least 1, got {workers}")
        return workers
    return min(MOST_DECODE_WORKERS, threads or resolve_threads())


def apply_threads(threads: int | None = None) -> int:
    """Set torch's intra-op threads (now if torch is loaded, else when it loads) and return the count."""
    count = resolve_threads(threads)
    os.environ["OMP_NUM_THREADS"] = str(count)  # read by torch when it is first imported
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "set_num_threads"):
        torch.set_num_threads(count)
    return count


__all__ = ["MOST_DECODE_WORKERS", "apply_threads", "decode_workers", "idle_cores", "physical_cores", "resolve_threads"]
