"""A disk fault under the response cache, made inside a timefoil process started with this
folder on PYTHONPATH and STORES_SQLITE_FAULT set (tests run as root, who writes through a
chmod, so a real read-only folder proves nothing). The errors are SQLite's own: a page limit
(a full disk), a read-only open (a read-only mount) and a second connection holding the write
lock (another writer that keeps it too long)."""
import os
import sqlite3

_connect, _held, _fault = sqlite3.connect, [], os.environ.get("STORES_SQLITE_FAULT")


def connect(path, *args, **kwargs):
    if not str(path).endswith("responses.sqlite"):
        return _connect(path, *args, **kwargs)
    if _fault == "read-only":
        return _connect(f"file:{path}?mode=ro", *args, uri=True, **kwargs)
    if _fault == "locked":
        holder = _connect(path, isolation_level=None)
        holder.execute("BEGIN EXCLUSIVE")
        _held.append(holder)
        kwargs["timeout"] = 0.2
    db = _connect(path, *args, **kwargs)
    if _fault == "full":
        db.execute("PRAGMA max_page_count=1")  # not one page more than the header
    return db


if _fault:
    sqlite3.connect = connect
