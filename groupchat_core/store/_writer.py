"""The rows a recorded run is made of, and the fast insert of turns (see _recorder.py)."""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Sequence
from itertools import chain
from operator import attrgetter
from typing import Any, NamedTuple

from sqlalchemy import Connection, Dialect, Table, case, func, insert, select

from .._records import IN_PROCESS_PATHS, Bid, Message, Outcome, RunRecord, Turn
from .._statuses import RunStatus
from ._schema import bids, messages, run_agents, runs, turns

_STATUS: dict[str, RunStatus] = {"cancelled": "cancelled", "error": "error"}


def status_for(record: RunRecord) -> RunStatus:
    """The final status of a run that reported its end: finished, cancelled or error."""
    return _STATUS.get(record.stop_reason or "", "finished")


def agent_specs(source: Any) -> list[dict[str, Any]]:
    """Secret-free agent specs from a GroupChat, a ChatSpec or a list of Agents."""
    agents = getattr(source, "agents", source)
    return [a.to_spec() if hasattr(a, "to_spec") else dict(a) for a in agents]


def spec_data(config: dict[str, Any], specs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run's full spec (config + agents), as ChatSpec.to_data() lays it out."""
    from .._config import SCHEMA_VERSION as SPEC_SCHEMA_VERSION

    return {**config, "schema_version": SPEC_SCHEMA_VERSION, "agents": specs}


def run_row(run_id: str, task: str, spec: dict[str, Any], started_at: str) -> dict[str, Any]:
    names = [a["agent_name"] for a in spec["agents"]]
    return {
        "run_id": run_id, "name": spec["name"], "task": task, "status": "running",
        "spec_json": json.dumps(spec), "agents": ", ".join(names),
        "threshold": spec["threshold"], "recency_penalty": spec["recency_penalty"],
        "recency_window": spec["recency_window"], "max_loops": spec["max_loops"],
        "started_at": started_at,
    }


def insert_run(conn: Connection, row: dict[str, Any], specs: list[dict[str, Any]]) -> None:
    conn.execute(insert(runs), [row])
    conn.execute(insert(run_agents), [
        {"run_id": row["run_id"], "position": i, "agent": a["agent_name"],
         "model_name": a["model_name"]} for i, a in enumerate(specs)])


def insert_imported(conn: Connection, row: dict[str, Any], specs: list[dict[str, Any]],
                    messages_posted: Sequence[dict[str, Any]], bid_rows: Sequence[dict[str, Any]],
                    turn_rows: Sequence[dict[str, Any]]) -> None:
    """Every row of a whole run at once (a bundle import), inside the caller's transaction:
    the run and its agents, then its messages in posting order, bids and turns."""
    run_id = row["run_id"]
    insert_run(conn, row, specs)
    conn.execute(insert(messages), [{**m, "run_id": run_id, "position": i}
                                    for i, m in enumerate(messages_posted)])
    if bid_rows:
        conn.execute(insert(bids), [{**b, "run_id": run_id} for b in bid_rows])
    if turn_rows:
        conn.execute(insert(turns), [{**t, "run_id": run_id} for t in turn_rows])


def message_row(run_id: str, position: int, turn: int, message: Message) -> dict[str, Any]:
    return {"run_id": run_id, "position": position, "turn": turn, "role": message.role,
            "content": message.content, "timestamp": message.timestamp, "score": message.score}


# Python's sqlite3 binds exact int, float, str and bytes directly, but sends every other value
# (bool, None) through its adaptation protocol first (a registry lookup and two attribute probes),
# which made those 9 of a bid's 19 values cost two thirds of binding a run's rows. Stored alike:
# SQLite keeps booleans as 0/1 and turns a NaN into NULL; recorded values are never NaN (the edge
# rejects non-finite numbers), and a float equal to 1 or 0 (mapped to int by this table, as
# 1.0 == True) is stored as REAL again by its column's affinity.
_FAST_BIND: dict[Any, Any] = {None: math.nan, True: 1, False: 0}


class CompiledInsert:
    """A Core INSERT compiled once for the dialect and handed straight to the driver.

    Recording a turn is the store's hot path: SQLAlchemy's per-execute bookkeeping costs more
    than SQLite's work for 16 rows, so the per-turn inserts skip it (still portable: the SQL
    and its parameter style come from the dialect; values are plain str/int/float/bool/None).

    On SQLite, rows go in multi-row `INSERT ... VALUES (...), (...)` statements of 2^k rows
    (so a few cached statements serve every count): Python's sqlite3 releases and retakes the
    GIL around every statement step, so `executemany` of 16 rows hands the GIL back and forth
    with the engine's thread 16 times, one statement once.
    """

    def __init__(self, table: Table, dialect: Dialect, order: Sequence[str] = ()) -> None:
        compiled = insert(table).compile(dialect=dialect)
        self.sql = str(compiled)
        self.columns = list(compiled.positiontup or []) if dialect.positional else [
            c.key for c in table.columns]
        self.positional = bool(dialect.positional)
        self._most = 0  # rows per multi-row statement (0: use executemany)
        if dialect.name == "sqlite" and dialect.paramstyle == "qmark" and " VALUES " in self.sql:
            variables = 32766 if sqlite3.sqlite_version_info >= (3, 32) else 999
            self._most = 1 << ((variables // len(self.columns)).bit_length() - 1)
            self._head = self.sql[:self.sql.index(" VALUES ")] + " VALUES "
            if order:  # the multi-row statements name their columns in this order
                if sorted(order) != sorted(self.columns):
                    raise ValueError(f"{list(order)} are not the columns of {table.name}")
                quote = dialect.identifier_preparer.quote
                self.columns = list(order)
                self._head = (f"INSERT INTO {quote(table.name)} "
                              f"({', '.join(quote(c) for c in order)}) VALUES ")
            self._row = "(" + ", ".join("?" * len(self.columns)) + ")"
            self._statements: dict[int, str] = {}

    def params(self, values: Sequence[Any]) -> Any:
        return tuple(values) if self.positional else dict(zip(self.columns, values, strict=True))

    @property
    def multi_row(self) -> bool:
        """Whether rows go in multi-row statements (then a sequence may hold several rows)."""
        return bool(self._most)

    def insert_rows(self, cursor: Any, rows: Sequence[Sequence[Any]]) -> None:
        """Insert these rows with a DBAPI cursor: as params() makes them, or (multi_row) any
        sequences of their values, several rows' in one (a turn's bids are one tuple)."""
        if not self._most:
            cursor.executemany(self.sql, rows)
            return
        fast = _FAST_BIND.get
        values = list(map(fast, chain.from_iterable(rows), chain.from_iterable(rows)))
        width = len(self.columns)
        start, left = 0, len(values) // width
        while left:
            size = min(self._most, 1 << (left.bit_length() - 1))
            sql = self._statements.get(size)
            if sql is None:
                sql = self._statements[size] = self._head + ", ".join([self._row] * size)
            cursor.execute(sql, values[start * width:(start + size) * width])
            start, left = start + size, left - size


class TurnRows(NamedTuple):
    """One completed turn as the writer takes it: plain values only (str, int, float, bool,
    None), taken from the engine's records when the turn completed (`TurnWriter.rows`), so
    nothing done to those records afterwards (by an observer, on any thread) reaches the store."""

    number: int  # the turn number
    bids: Any  # the bid rows as CompiledInsert.params makes them; multi-row: one flat tuple
    turn: Any  # the turn row
    message: Any | None  # the posted message's row, or None


class TurnWriter:
    """Turns a completed turn into rows (`rows`, when the turn completes) and writes rows of
    several turns (`write_turns`) inside the caller's transaction.

    Several turns go in one multi-row INSERT per table: when turns come faster than the database
    commits them (an offline chat), the recorder writes those queued so far together.
    """

    def __init__(self, dialect: Dialect) -> None:
        # A bid's values are read from its __dict__ (in Bid's field order, a third of the cost
        # of reading its 18 attributes one by one, 3,200 times for a 200-turn chat), so the
        # multi-row bid INSERT names its columns in that order.
        self.bids = CompiledInsert(bids, dialect, order=["run_id", *Bid.model_fields])
        self.turns, self.messages = (CompiledInsert(t, dialect) for t in (turns, messages))
        self._bid_width = len(Bid.model_fields)
        self._bids_by_dict = self.bids.multi_row and self.bids.columns[1:] == list(
            Bid.model_fields)
        self._bid_values = attrgetter(*self.bids.columns[1:]) if self.bids.positional else None
        self._bid_fields = [c for c in bids.c.keys() if c != "run_id"]
        self._turn_fields = [c for c in turns.c.keys() if c != "run_id"]

    def _bid_row(self, run_id: str, bid: Bid) -> Any:
        if self._bid_values is not None:
            return (run_id, *self._bid_values(bid))
        return {"run_id": run_id, **{k: getattr(bid, k) for k in self._bid_fields}}

    def turn_row(self, run_id: str, turn: Turn) -> Any:
        row = {"run_id": run_id, **{k: getattr(turn, k) for k in self._turn_fields}}
        return self.turns.params([row[c] for c in self.turns.columns])

    def rows(self, run_id: str, turn: Turn, turn_bids: Sequence[Bid],
             message: dict[str, Any] | None, turn_row: Any = None) -> TurnRows:
        """One turn's rows (`message` as message_row makes it; `turn_row` when already taken
        by `turn_row`), copied out of the records."""
        values = self._bid_values
        fields = [b.__dict__ for b in turn_bids] if self._bids_by_dict else None
        if fields is not None and all(len(f) == self._bid_width for f in fields):
            # One flat tuple per turn (few objects for the garbage collector to track).
            bid_rows: Any = tuple(chain.from_iterable((run_id, *f.values()) for f in fields))
        elif values is not None and self.bids.multi_row:
            bid_rows = tuple(chain.from_iterable((run_id, *values(b)) for b in turn_bids))
        else:
            bid_rows = [self._bid_row(run_id, b) for b in turn_bids]
        return TurnRows(
            turn.turn, bid_rows,
            self.turn_row(run_id, turn) if turn_row is None else turn_row,
            None if message is None else self.messages.params(
                [message[c] for c in self.messages.columns]))

    def write(self, conn: Connection, run_id: str, turn: Turn, turn_bids: Sequence[Bid],
              message: dict[str, Any] | None) -> None:
        """One turn's rows."""
        self.write_turns(conn, run_id, [self.rows(run_id, turn, turn_bids, message)])

    def write_turns(self, conn: Connection, run_id: str, items: Sequence[TurnRows]) -> None:
        """Every row of these turns (`run_id`'s, as `rows` made them), in turn order: one
        multi-row INSERT (or executemany) per table."""
        # Multi-row: each turn's bids are one flat tuple; else a list of rows per turn.
        bid_rows: list[Any] = [item.bids for item in items] if self.bids.multi_row else list(
            chain.from_iterable(item.bids for item in items))
        turn_rows = [item.turn for item in items]
        message_rows = [item.message for item in items if item.message is not None]
        cursor = conn.connection.cursor()
        try:
            self.bids.insert_rows(cursor, bid_rows)
            self.turns.insert_rows(cursor, turn_rows)
            self.messages.insert_rows(cursor, message_rows)
        finally:
            cursor.close()


def outcome_values(outcome: Outcome | None) -> dict[str, Any]:
    """The run row's v9 outcome columns (all NULL for a plain task)."""
    if outcome is None:
        return {}
    return {"task_id": outcome.task_id, "answer": outcome.answer, "correct": outcome.correct,
            "score": outcome.score, "scorer": outcome.scorer,
            "outcome_json": outcome.model_dump_json()}


def unpriced_sql(table: Any = bids) -> Any:
    """SQL twin of _records.unpriced: a bid row whose completed call had no price."""
    return (table.c.cost_usd.is_(None) & table.c.cached.is_(False) & (table.c.calls > 0)
            & table.c.path.not_in(IN_PROCESS_PATHS))


def totals_from_bids() -> dict[str, Any]:
    """The run row's totals summed from its recorded bids, as values for an UPDATE of `runs`.

    Why: a run closed without the engine's end (abandoned after Ctrl-C, a Ray cell cancelled
    by a budget cap or its worker killed) never gets finish_values, so its row kept the 0s it
    started with while its bids held the calls made: budgets and cost tables read 0."""

    def total(column: Any) -> Any:
        return select(func.coalesce(func.sum(column), 0)).where(
            bids.c.run_id == runs.c.run_id).scalar_subquery()

    unpriced = select(func.count()).where(bids.c.run_id == runs.c.run_id,
                                          unpriced_sql()).scalar_subquery()
    known = select(func.sum(bids.c.cost_usd)).where(  # NULL when no bid had a price
        bids.c.run_id == runs.c.run_id).scalar_subquery()
    return {"total_calls": total(bids.c.calls), "total_prompt_tokens": total(
        bids.c.prompt_tokens), "total_completion_tokens": total(bids.c.completion_tokens),
        "unpriced_bids": unpriced,
        # unknown (NULL) when calls went unpriced and none was priced, as cost_totals says
        "total_cost_usd": case((unpriced > 0, known), else_=func.coalesce(known, 0))}


def finish_values(record: RunRecord, status: str) -> dict[str, Any]:
    return {
        **outcome_values(record.outcome),
        "status": status, "stop_reason": record.stop_reason, "error": record.error,
        "started_at": record.started_at, "ended_at": record.ended_at,
        "total_calls": record.total_calls, "total_prompt_tokens": record.total_prompt_tokens,
        "total_completion_tokens": record.total_completion_tokens,
        "total_cost_usd": record.total_cost_usd,  # None: unknown (schema v13)
        "unpriced_bids": record.unpriced_bids,
    }
