"""The bid cache's table (schema v3) and hit-rate queries; the policy lives in _bidcache.py.

RunStore exposes them as its `cache_*` methods, so the cache never touches SQL or tables.

Portable Core, like the rest of the store. Inserts ignore keys already present (another process
may have stored the same answer first: both are the same answer).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, Integer, case, delete, func, insert, select

from .._errors import StoreError
from .._records import utc_now
from ._base import StoreBase
from ._connect import safe_url
from ._schema import bid_cache, bids, runs

STATS_COLUMNS = ["run_id", "bids", "cache_hits", "cached_calls", "calls", "cost_usd",
                 "hit_rate"]


class _SqliteLookup:
    """Primary-key reads on a private sqlite3 connection per thread, in autocommit.

    A sweep of sims looks up every new request (thousands), on the engine's loop: through a
    pooled SQLAlchemy connection each read costs ~0.15 ms (more while the writer thread
    commits), directly ~5 µs. Autocommit reads hold no snapshot, so WAL checkpoints go on.
    """

    SQL = "SELECT value_json FROM bid_cache WHERE key = ?"

    def __init__(self, path: str, url: str) -> None:
        self.path, self.url = path, url
        self.local = threading.local()

    def __call__(self, key: str) -> dict[str, Any] | None:
        try:
            conn = getattr(self.local, "conn", None)
            if conn is None:
                conn = self.local.conn = sqlite3.connect(
                    self.path, timeout=10, isolation_level=None, check_same_thread=False)
            row = conn.execute(self.SQL, (key,)).fetchone()
        except sqlite3.Error as exc:
            raise StoreError(f"could not read the bid cache in {safe_url(self.url)}: "
                             f"{exc}") from None
        return None if row is None else json.loads(row[0])


LOOKUP_RETRY_S = 0.2


class BidCacheTable(StoreBase):
    """Mixin for RunStore: the `bid_cache` table, and cache hit rates read from the bid log."""

    def cache_get(self, key: str) -> dict[str, Any] | None:
        """The cached answer under `key` (one read through the store's engine), else None. A
        lost connection is retried briefly (LOOKUP_RETRY_S: a lookup may run on the event loop);
        after that the caller asks the model instead."""
        raw = self.retrying("read the bid cache", lambda conn: conn.execute(
            select(bid_cache.c.value_json).where(bid_cache.c.key == key)).scalar(),
            write=False, for_s=LOOKUP_RETRY_S)
        return None if raw is None else json.loads(raw)

    def cache_reader(self) -> Callable[[str], dict[str, Any] | None]:
        """The fastest lookup this store allows (a private connection for SQLite files)."""
        url = self.engine.url
        database = url.database or ""
        if self.engine.dialect.name == "sqlite" and database not in ("", ":memory:") \
                and not database.startswith("file:"):
            return _SqliteLookup(database, self.url)
        return self.cache_get

    def cache_put(self, batch: Mapping[str, tuple[str, dict[str, Any]]]) -> None:
        """Store answers (key -> (model name, entry)) in one transaction, skipping known keys."""
        now = utc_now()
        rows = [{"key": key, "model_name": model[:200], "value_json": json.dumps(entry),
                 "created_at": now} for key, (model, entry) in batch.items()]
        # Skipping known keys makes it idempotent: retried on a lost connection.
        self.retrying("store cached bids", lambda conn: _insert_new(conn, rows))

    def cache_clear(self) -> int:
        """Delete every stored answer; returns how many there were."""
        with self.write("clear the bid cache") as conn:
            return int(conn.execute(delete(bid_cache)).rowcount or 0)

    def cache_count(self) -> int:
        with self.read("count the bid cache") as conn:
            return int(conn.execute(select(func.count()).select_from(bid_cache)).scalar() or 0)

    def cache_stats(self, run_ids: Sequence[str] | None = None, *,
                    sweep_id: str | None = None) -> Any:
        """Bids, cache hits (bids the cache answered), cached calls (calls it answered: a
        bid_then_speak row may have two), model calls made, cost (of priced calls) and hit
        rate per run, as a DataFrame (runs without bids are left out); all runs, these runs,
        or a sweep's."""
        import pandas as pd

        hits = func.sum(case((bids.c.cached, 1), else_=0)).label("cache_hits")
        query = select(bids.c.run_id, func.count().label("bids"), hits,
                       func.sum(bids.c.cached_calls.cast(Integer)).label("cached_calls"),
                       func.sum(bids.c.calls.cast(Integer)).label("calls"),
                       func.sum(bids.c.cost_usd).label("cost_usd")).group_by(bids.c.run_id)
        if sweep_id is not None:
            query = query.where(bids.c.run_id.in_(
                select(runs.c.run_id).where(runs.c.sweep_id == sweep_id)))
        rows: list[Any] = []
        with self.read("read cache hit rates") as conn:
            if run_ids is None:
                rows = list(conn.execute(query))
            else:
                ids = list(dict.fromkeys(run_ids))
                for start in range(0, len(ids), 500):
                    rows.extend(conn.execute(
                        query.where(bids.c.run_id.in_(ids[start:start + 500]))))
        frame = pd.DataFrame.from_records(rows, columns=STATS_COLUMNS[:-1])
        frame = frame.astype({"bids": "int64", "cache_hits": "int64", "cached_calls": "int64",
                              "calls": "int64",
                              "cost_usd": "float64"}).fillna({"cost_usd": 0.0})
        frame["hit_rate"] = frame["cache_hits"] / frame["bids"].where(frame["bids"] > 0)
        return frame


def _insert_new(conn: Connection, rows: list[dict[str, Any]]) -> None:
    name = conn.dialect.name
    if name in ("sqlite", "postgresql"):
        if name == "sqlite":
            from sqlalchemy.dialects.sqlite import insert as sqlite_insert

            conn.execute(sqlite_insert(bid_cache).on_conflict_do_nothing(), rows)
        else:
            from sqlalchemy.dialects.postgresql import insert as postgresql_insert

            conn.execute(postgresql_insert(bid_cache).on_conflict_do_nothing(), rows)
        return
    known = set(conn.execute(select(bid_cache.c.key).where(
        bid_cache.c.key.in_([r["key"] for r in rows]))).scalars())
    fresh = [r for r in rows if r["key"] not in known]
    if fresh:
        conn.execute(insert(bid_cache), fresh)
