"""The ``timefoil`` command group; each module of this package adds its commands to it."""
from __future__ import annotations

import click

from .entry import Interrupted


class Commands(click.Group):
    """click's group, less click's own Ctrl-C handling: an interrupt while the arguments are read
    or a command runs is carried out to the entry point, which exits 130 with one line."""

    def make_context(self, *args, **kwargs):
        try:
            return super().make_context(*args, **kwargs)
        except KeyboardInterrupt:
            raise Interrupted() from None

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            raise Interrupted() from None

    def format_commands(self, ctx, formatter) -> None:
        """Each command with the whole first sentence of its help, wrapped to the terminal (click
        cut them at 45 characters with "...")."""
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, first_sentence(command.help or command.short_help or "")))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def first_sentence(text: str) -> str:
    """The help's first sentence, on one line: up to the first full stop that ends a sentence."""
    words = " ".join(text.split("\n\n")[0].split())
    end = next((i + 1 for i, c in enumerate(words) if c == "." and (i + 1 == len(words) or words[i + 1] == " ")
                and not words[:i].endswith(("e.g", "i.e", "etc"))), len(words))
    return words[:end]


class EnvironmentUnusable(click.ClickException):
    """An environment variable set to a value timefoil cannot use: the command cannot start
    (exit 1, as a bad TIMEFOIL_MAX_FRAME_PIXELS always was)."""


@click.group(cls=Commands)
@click.version_option(package_name="timefoil")
def main() -> None:
    """timefoil: does a video-language model understand time?"""
    # every variable timefoil reads, checked before any command runs: one line naming it
    from ..core.environment import EnvironmentValueError, check_environment
    from ..video.decode import frame_pixel_budget
    from ..video.diskcache import cache_budget

    try:
        check_environment(cache_budget, frame_pixel_budget)
    except EnvironmentValueError as exc:
        raise EnvironmentUnusable(str(exc)) from None
