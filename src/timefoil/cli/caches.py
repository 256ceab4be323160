"""``timefoil cache``: the frame and response caches."""
from __future__ import annotations


import click

from .app import main
from .common import guard


@main.command()
@click.option("--cache-dir", type=click.Path(file_okay=False), help="default: TIMEFOIL_CACHE or ~/.cache/timefoil")
@click.option("--prune", "prune_to", help="evict least recently used frames down to this size (e.g. 500M)")
@click.option("--clear", type=click.Choice(["frames", "responses", "all"]), help="delete cached frames or answers")
@guard
def cache(cache_dir, prune_to, clear):
    """Show the frame and response caches (size, entries); prune or clear them."""
    from ..core.paths import default_cache_dir
    from ..execution.store import ResponseCache
    from ..video.diskcache import FrameDiskCache, parse_size

    root = cache_dir or default_cache_dir()
    frames = FrameDiskCache(root)
    if prune_to:
        frames.prune(parse_size(prune_to))
    if clear in ("frames", "all"):
        click.echo(f"removed {frames.clear()} frame entries")
    if clear in ("responses", "all"):
        ResponseCache.clear(root)
        click.echo("removed the response cache")
    size, count = frames.usage()
    click.echo(f"{root}: frames {size / 1024**2:.1f} MB in {count} entries (budget {frames.budget / 1024**2:.0f} MB, "
               f"TIMEFOIL_CACHE_MAX); responses {ResponseCache.size(root) / 1024**2:.1f} MB")
