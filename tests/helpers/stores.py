"""Letting go of the stores a test opened, in one place: the `fresh_engines` and store fixtures
(tests/conftest.py) call it after a test; a test calls it itself where it must read a store's
files, or reopen one, as a new process would."""

from __future__ import annotations

from groupchat_core.store import dispose_engines
from groupchat_core.store._migrations import forget_checked  # no public name: a test-only reset
from groupchat_core.store._writer_thread import writer_thread  # likewise


def release_store_engines() -> None:
    """No write still queued, no pooled connection left, schema checks forgotten."""
    writer_thread().flush(10)
    dispose_engines()
    forget_checked()


def table_columns(url: str, table: str) -> set[str]:
    """The column names of `table` as the database itself reports them (a migration's check),
    through an engine of its own that is disposed at once."""
    from sqlalchemy import create_engine, inspect

    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return {c["name"] for c in inspect(conn).get_columns(table)}
    finally:
        engine.dispose()
