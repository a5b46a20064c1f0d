"""A SQLite store file is checked before the store uses it, and a damaged one is refused.

SQLite opens a file with a bad page without complaint and goes on writing around it (the damage
spreads, and reads fail later, far from the cause). So the first time a process opens a store
file (once per URL: the Engine is cached, _connect.py), `PRAGMA quick_check` reads every page
and checks its structure (not the indexes' contents, which `integrity_check` also compares: that
costs several times more). It runs on a plain connection, before the store's own setup (WAL,
migrations), so a refused file is left byte for byte as it was. Cost: BENCHMARKS.md, "Opening a
store" (bench/bench_store_open.py).

Also here: where a SQLite URL's file is, so read-only commands can refuse a store that does not
exist instead of creating it and its folders.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from .._errors import StoreError

MMAP_BYTES = 256 * 2**20


def sqlite_file(url: str) -> Path | None:
    """The file of a SQLite URL; None for other databases, in-memory ones and URI filenames."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        return None
    database = parsed.database
    if parsed.get_backend_name() != "sqlite" or database in (None, "", ":memory:") or (
            database.startswith("file:")):
        return None
    return Path(database).expanduser()


def missing_store(url: str) -> str | None:
    """Why a store that must already exist (read-only commands) cannot be opened: its SQLite
    file is absent. None when it exists, or for a server database."""
    path = sqlite_file(url)
    if path is None or path.exists():
        return None
    return (f"no store at {path}: nothing is recorded there yet (check --db or GROUPCHAT_DB; "
            "`groupchat-lab --version` says where the data lives)")


def check_sqlite_file(path: Path) -> None:
    """Refuse a damaged store file with one line naming it and the fix; a new (absent or
    empty) file passes. The file is only read."""
    try:
        if not path.is_file() or path.stat().st_size == 0:
            return
    except OSError:
        return  # unreadable: SQLite's own error, on connect, says why
    problem = _quick_check(path)
    if problem is not None:
        raise StoreError(
            f"the store {str(path)!r} is damaged ({problem}) and was left unchanged: restore it "
            f"from a backup, or recover what it holds with `sqlite3 {path} \".recover\" | "
            f"sqlite3 {path.with_suffix('.recovered.db')}` and point GROUPCHAT_DB at the copy")


def _quick_check(path: Path) -> str | None:
    try:
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
            conn.execute(f"PRAGMA mmap_size={MMAP_BYTES}")  # reads pages without copying them
            rows = conn.execute("PRAGMA quick_check(1)").fetchall()
    except sqlite3.DatabaseError as exc:  # "file is not a database", "malformed", ...
        if "unable to open" in str(exc):
            return None  # not ours to judge (permissions, a WAL file we may not create)
        return f"SQLite: {exc}"
    lines = [line for row in rows for line in str(row[0]).splitlines()]
    if lines == ["ok"]:
        return None
    found = next((line for line in lines if not line.startswith("***")), "no detail")
    return f"SQLite's quick_check: {found[:200]}"
