"""Schema versions and in-place upgrades.

A database records its version in `schema_version`. Opening it with newer code runs each step
from its version up to SCHEMA_VERSION inside one write transaction (SQLite and PostgreSQL both
have transactional DDL), so an upgrade is all or nothing, and a second process opening the
same file at the same moment waits for the first instead of racing it. A database written by
newer code is refused rather than guessed at.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable

from sqlalchemy import Connection, Engine, func, insert, inspect, select, update

from .._errors import StoreError
from .._records import UNREADABLE, utc_now
from ._connect import safe_url, write_engine
from ._schema import METADATA, SCHEMA_VERSION, metadata_for, schema_version
from ._writer import unpriced_sql

_checked: set[str] = set()
_lock = threading.Lock()
_PG_LOCK_KEY = 0x6763_6C61  # "gcla": serialises schema setup across PostgreSQL clients


def _v1_to_v2(conn: Connection) -> None:
    """v2: runs.tags and runs.notes, and an index on runs.started_at for newest-first lists."""
    runs_v2 = metadata_for(2).tables["runs"]
    for name in ("tags", "notes"):
        sql_type = runs_v2.c[name].type.compile(dialect=conn.dialect)
        conn.exec_driver_sql(f"ALTER TABLE runs ADD COLUMN {name} {sql_type} NOT NULL DEFAULT ''")
    for index in runs_v2.indexes:
        if index.name == "ix_runs_started_at":
            index.create(conn)


def _add_columns(conn: Connection, table: str, names: tuple[str, ...], version: int) -> None:
    """ALTER TABLE ADD COLUMN for columns of `table` as schema `version` defines them."""
    target = metadata_for(version).tables[table]
    for name in names:
        column = target.c[name]
        sql = f"ALTER TABLE {table} ADD COLUMN {name} {column.type.compile(dialect=conn.dialect)}"
        if column.server_default is not None:
            default = column.server_default.arg.compile(dialect=conn.dialect)  # type: ignore
            sql += f" NOT NULL DEFAULT {default}"
        conn.exec_driver_sql(sql)


def _v2_to_v3(conn: Connection) -> None:
    """v3: bids.cached, the bid_cache table, sweeps.reason and the sweep's writer columns."""
    _add_columns(conn, "bids", ("cached",), 3)
    _add_columns(conn, "sweeps", ("reason", "pid", "hostname", "proc_start"), 3)
    metadata_for(3).tables["bid_cache"].create(conn)


def _v3_to_v4(conn: Connection) -> None:
    """v4: sweeps.owned_at and the sweep_cells claims, with a `finished` claim for every cell
    that already has a finished run (the latest, should an old double resume have left two),
    so a finished cell can never be claimed again."""
    _add_columns(conn, "sweeps", ("owned_at",), 4)
    tables = metadata_for(4).tables
    tables["sweep_cells"].create(conn)
    runs_t = tables["runs"]
    finished = conn.execute(
        select(runs_t.c.sweep_id, runs_t.c.cell, runs_t.c.run_id, runs_t.c.ended_at)
        .where(runs_t.c.status == "finished", runs_t.c.sweep_id.is_not(None),
               runs_t.c.cell.is_not(None))
        .order_by(runs_t.c.started_at, runs_t.c.run_id)).all()
    latest = {(r.sweep_id, r.cell): r for r in finished}
    now = utc_now()
    if latest:
        conn.execute(insert(tables["sweep_cells"]), [
            {"sweep_id": r.sweep_id, "cell": r.cell, "state": "finished", "run_id": r.run_id,
             "claimed_at": r.ended_at or now, "updated_at": now} for r in latest.values()])


def _v4_to_v5(conn: Connection) -> None:
    """v5: agents.position (the saved order of agents; existing agents keep NULL, by name)."""
    _add_columns(conn, "agents", ("position",), 5)


def _v5_to_v6(conn: Connection) -> None:
    """v6: owner, owner_name, app_version and litellm_version on runs and sweeps. Existing rows
    keep NULL: nobody knows who started them (the dashboard lets anyone manage them, as before
    owners were kept) nor which code recorded them."""
    names = ("owner", "owner_name", "app_version", "litellm_version")
    _add_columns(conn, "runs", names, 6)
    _add_columns(conn, "sweeps", names, 6)


def _v6_to_v7(conn: Connection) -> None:
    """v7: bids.deployment (which deployment of a model answered; NULL for earlier bids)."""
    _add_columns(conn, "bids", ("deployment",), 7)


def _v7_to_v8(conn: Connection) -> None:
    """v8: agents.owner and agents.owner_name. Existing agents keep NULL: ownerless, so with
    login on only an admin edits them (everyone may still use and duplicate them)."""
    _add_columns(conn, "agents", ("owner", "owner_name"), 8)


def _v8_to_v9(conn: Connection) -> None:
    """v9: a scored task's outcome on runs (task_id, answer, correct, score, scorer,
    outcome_json). Existing runs keep NULL: they had no task with an answer."""
    _add_columns(conn, "runs", OUTCOME_COLUMNS, 9)


def _v9_to_v10(conn: Connection) -> None:
    """v10: bids.outcome. Existing bids get the outcome the turn loop gave them by the rule it
    used before the field was stored (docs/engine.md §9): an error on path none is a failed
    call, an error starting "unreadable: " an unreadable reply, else read (cached when the bid
    cache answered). Touches only the bids table, so it applies after v8 or after v9."""
    _add_columns(conn, "bids", ("outcome",), 10)
    bids_t = metadata_for(10).tables["bids"]
    has_error = bids_t.c.error.is_not(None) & (bids_t.c.error != "")
    failed = has_error & (bids_t.c.path == "none")
    conn.execute(update(bids_t).where(failed).values(outcome="failed"))
    conn.execute(update(bids_t).where(has_error & ~failed & bids_t.c.error.startswith(
        UNREADABLE, autoescape=True)).values(outcome="unreadable"))
    conn.execute(update(bids_t).where(bids_t.c.outcome == "read", bids_t.c.cached.is_(True))
                 .values(outcome="cached"))


def _v10_to_v11(conn: Connection) -> None:
    """v11: people in the room (issue 22). bids.kind ('agent' for every existing bid: only
    models bid before), turns.rule_winner and turns.human_pick (NULL: no person picked)."""
    _add_columns(conn, "bids", ("kind",), 11)
    _add_columns(conn, "turns", ("rule_winner", "human_pick"), 11)


def _v11_to_v12(conn: Connection) -> None:
    """v12: bids.cached_calls, 1 for every cached bid (what was counted before; a cached
    written call of an old bid_then_speak row left no trace and stays uncounted), and
    turns.selector_reason (NULL: it was only logged)."""
    _add_columns(conn, "bids", ("cached_calls",), 12)
    bids_t = metadata_for(12).tables["bids"]
    conn.execute(update(bids_t).where(bids_t.c.cached.is_(True)).values(cached_calls=1))
    _add_columns(conn, "turns", ("selector_reason",), 12)


def _v12_to_v13(conn: Connection) -> None:
    """v13: an unknown cost is NULL (issue 40). runs.unpriced_bids counts each run's bids whose
    completed call had no price, and runs.total_cost_usd may be NULL: it is, where calls were
    made and none could be priced (0 was stored). Both filled from the stored bids by the
    record's rule (`_records.unpriced`: a completed call, not in-process, not cached, no cost)."""
    _add_columns(conn, "runs", ("unpriced_bids",), 13)
    if conn.dialect.name == "sqlite":
        _sqlite_drop_not_null(conn, "runs", "total_cost_usd")
    else:
        conn.exec_driver_sql("ALTER TABLE runs ALTER COLUMN total_cost_usd DROP NOT NULL")
    tables = metadata_for(13).tables
    runs_t, bids_t = tables["runs"], tables["bids"]
    per_run = bids_t.c.run_id == runs_t.c.run_id
    conn.execute(update(runs_t).values(unpriced_bids=select(func.count()).where(
        per_run, unpriced_sql(bids_t)).scalar_subquery()))
    priced_any = select(bids_t.c.run_id).where(per_run, bids_t.c.cost_usd.is_not(None)).exists()
    conn.execute(update(runs_t).where(runs_t.c.unpriced_bids > 0, ~priced_any)
                 .values(total_cost_usd=None))


def _sqlite_drop_not_null(conn: Connection, table: str, column: str) -> None:
    """SQLite cannot ALTER a column's NOT NULL away; this edits the table's stored definition,
    the procedure SQLite documents for removing a NOT NULL constraint (the file's contents do
    not change: "Making Other Kinds Of Table Schema Changes", sqlite.org/lang_altertable.html).
    A table rebuild would need foreign keys off, which a transaction cannot switch."""
    sql = conn.exec_driver_sql("SELECT sql FROM sqlite_master WHERE type = 'table' AND "
                               "name = ?", (table,)).scalar_one()
    pattern = re.compile(rf"(\b{column}\b[^,]*?)\s+NOT NULL")
    new_sql, count = pattern.subn(r"\1", sql, count=1)
    if count != 1:
        raise StoreError(f"cannot find {table}.{column}'s NOT NULL in the stored schema")
    version = conn.exec_driver_sql("PRAGMA schema_version").scalar_one()
    conn.exec_driver_sql("PRAGMA writable_schema = ON")
    try:
        conn.exec_driver_sql("UPDATE sqlite_master SET sql = ? WHERE type = 'table' AND "
                             "name = ?", (new_sql, table))
        conn.exec_driver_sql(f"PRAGMA schema_version = {int(version) + 1}")
    finally:
        conn.exec_driver_sql("PRAGMA writable_schema = OFF")


OUTCOME_COLUMNS = ("task_id", "answer", "correct", "score", "scorer", "outcome_json")
STEPS: dict[int, Callable[[Connection], None]] = {  # from version -> next
    1: _v1_to_v2, 2: _v2_to_v3, 3: _v3_to_v4, 4: _v4_to_v5, 5: _v5_to_v6,
    6: _v6_to_v7, 7: _v7_to_v8, 8: _v8_to_v9, 9: _v9_to_v10, 10: _v10_to_v11,
    11: _v11_to_v12, 12: _v12_to_v13}


def ensure_schema(engine: Engine) -> None:
    """Create the tables on first use, or upgrade an older database in place (once per process)."""
    key = str(engine.url)
    with _lock:
        if key in _checked:
            return
        with write_engine(engine).begin() as conn:
            if conn.dialect.name == "postgresql":
                conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_PG_LOCK_KEY})")
            _create_or_upgrade(conn, engine)
        _checked.add(key)


def forget_checked() -> None:
    """Let the next ensure_schema look again (after dispose_engines, in tests)."""
    with _lock:
        _checked.clear()


def read_version(conn: Connection) -> int | None:
    if not inspect(conn).has_table("schema_version"):
        return None
    return conn.execute(select(schema_version.c.version)).scalar()


def _create_or_upgrade(conn: Connection, engine: Engine) -> None:
    found = read_version(conn)
    where = safe_url(engine.url)
    if found is None:
        if inspect(conn).has_table("runs"):
            raise StoreError(f"{where} has a 'runs' table but no schema_version: it is not a "
                             "GroupChat Lab store (point GROUPCHAT_DB at another database)")
        METADATA.create_all(conn)
        conn.execute(insert(schema_version).values(
            id=1, version=SCHEMA_VERSION, updated_at=utc_now()))
        return
    if found > SCHEMA_VERSION:
        raise StoreError(f"{where} has schema version {found}, newer than this code's "
                         f"{SCHEMA_VERSION}: update GroupChat Lab to open it")
    for version in range(found, SCHEMA_VERSION):
        STEPS[version](conn)
    if found != SCHEMA_VERSION:
        conn.execute(update(schema_version).values(version=SCHEMA_VERSION, updated_at=utc_now()))


def create_version(engine: Engine, version: int) -> None:
    """Build an empty store exactly as schema `version` made it (to test upgrades of old files)."""
    with write_engine(engine).begin() as conn:
        metadata_for(version).create_all(conn)
        conn.execute(insert(schema_version).values(id=1, version=version, updated_at=utc_now()))
