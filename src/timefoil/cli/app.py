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


@click.group(cls=Commands)
@click.version_option(package_name="timefoil")
def main() -> None:
    """timefoil: does a video-language model understand time?"""
