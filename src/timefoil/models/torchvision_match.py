"""torchvision beside the installed torch: which release matches it, what to run to get that one
without replacing torch, and one line at load where the installed one does not match.

timefoil builds the video families' inputs with torch alone; torchvision is needed only by a
model shown through its own processor, timm (PE-Video) and open_clip. ``pip install
torchvision`` takes the newest release, which pins the newest torch: pip then replaces the
installed (CPU) torch with another build and its CUDA packages. A torchvision built for another
torch fails at import ("operator torchvision::nms does not exist"), in every model that needs it.
"""
from __future__ import annotations

import re
import sys
from importlib import metadata
from typing import Callable

# torchvision 0.N is built for torch 2.(N - 15), patch for patch (0.20.1 for torch 2.5.1)
MINOR_OFFSET = 15


def installed(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def matching(torch_version: str) -> str | None:
    """The torchvision release built for ``torch_version`` ("2.13.0+cpu" -> "0.28.0"); None for
    a torch this rule does not cover."""
    found = re.match(r"2\.(\d+)(?:\.(\d+))?", torch_version)
    if not found:
        return None
    return f"0.{int(found.group(1)) + MINOR_OFFSET}.{found.group(2) or 0}"


def _minor(version: str) -> str:
    return ".".join(re.split(r"[.+]", version)[:2])


def advice(version: Callable[[str], str | None] = installed) -> str:
    """What to run for a torchvision that keeps the installed torch, or to leave it out."""
    torch = version("torch")
    wanted = matching(torch) if torch else None
    if wanted is None:
        return ("install the torchvision release built for your torch with --no-deps (so pip keeps that torch), "
                "or leave torchvision out")
    return (f"pip install --no-deps torchvision=={wanted} (the release built for the installed torch {torch}; "
            f"--no-deps keeps that torch), or leave torchvision out")


def mismatch(version: Callable[[str], str | None] = installed) -> str | None:
    """The line saying that the installed torchvision was built for another torch; None where
    it matches, or either is absent."""
    torch, vision = version("torch"), version("torchvision")
    wanted = matching(torch) if torch else None
    if not vision or wanted is None or _minor(vision) == _minor(wanted):
        return None
    return (f"torchvision {vision} is installed beside torch {torch}, which needs torchvision {_minor(wanted)}: "
            f"a model that imports it will fail; pip install --no-deps torchvision=={wanted}, or pip uninstall "
            "torchvision (timefoil builds the families' inputs without it)")


_said: list[str] = []


def say_mismatch(version: Callable[[str], str | None] = installed) -> None:
    """The mismatch line on stderr, once per process, as a model that may need torchvision loads."""
    line = mismatch(version)
    if line and line not in _said:
        _said.append(line)
        print(f"timefoil: {line}", file=sys.stderr)


__all__ = ["advice", "installed", "matching", "mismatch", "say_mismatch"]
