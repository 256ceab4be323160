"""Text that comes from outside timefoil (a server's error body, a name from a dataset, a
plugin's exception) as the terminal is shown it, and an exception as one message.

A terminal reads some characters as commands: ESC sequences retitle the window, move the cursor
or rewrite what is shown, a carriage return draws over the line, a newline splits one line in
two. Such text reaches the terminal only through ``terminal_line``; the records keep it whole."""
from __future__ import annotations

import re
import unicodedata

TERMINAL_CHARS = 300  # what one line of the terminal shows of a message; the record keeps all of it

# ESC and what it introduces: a control sequence (CSI), an operating-system command (OSC, which
# retitles a window, ended by BEL or ESC \), a device-control or privacy string, or one character
_ESCAPE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]?|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[PX^_][^\x1b]*(?:\x1b\\)?|.?)",
                     re.DOTALL)
_SPACES = re.compile(r"\s+")


def terminal_line(text: object, limit: int = TERMINAL_CHARS) -> str:
    """``text`` as one line a terminal shows as written: escape sequences and every other control
    or format character (C0, DEL, C1, bidirectional overrides) dropped, line and paragraph breaks
    and tabs made spaces, and at most ``limit`` characters, a cut text saying how long it was."""
    text = _ESCAPE.sub("", str(text))
    kept = "".join(" " if ch.isspace() else ch for ch in text
                   if ch.isspace() or unicodedata.category(ch) not in ("Cc", "Cf", "Cs"))
    line = _SPACES.sub(" ", kept).strip()
    if len(line) <= limit:
        return line
    return f"{line[:limit].rstrip()}… ({len(line):,} characters)"


def exception_text(exc: BaseException) -> str:
    """``Type: message`` (``Type`` alone where the message is empty), never raising: an exception
    whose ``str()`` raises is named by its type. Not cleaned for a terminal (``terminal_line``)."""
    name = type(exc).__name__
    try:
        message = str(exc)
    except KeyboardInterrupt:
        raise
    except BaseException:  # noqa: BLE001 - its __str__ failed, however: the type still names it
        return f"{name} (its message cannot be printed)"
    return f"{name}: {message}" if message.strip() else name


__all__ = ["TERMINAL_CHARS", "exception_text", "terminal_line"]
