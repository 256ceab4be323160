"""The ``timefoil`` command group; each module of this package adds its commands to it."""
from __future__ import annotations

import click


@click.group()
@click.version_option(package_name="timefoil")
def main() -> None:
    """timefoil: does a video-language model understand time?"""
