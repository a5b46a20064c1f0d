"""Reading runs back: pandas frames with docs/engine.md §9 column names, and exact RunRecords.

Frames are derived on demand and never stored. Every frame has `run_id` first, then the record
model's fields in order, so `store.bids(run_id).drop(columns="run_id")` has the columns of
`RunRecord.bids_frame()`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, RowMapping, Select, Table, select

from .._records import Bid, Message, Outcome, RunRecord, Turn
from ._schema import bids, messages, run_agents, runs, turns

if TYPE_CHECKING:
    import pandas as pd

BID_COLUMNS = ["run_id", *Bid.model_fields]
TURN_COLUMNS = ["run_id", *Turn.model_fields]
MESSAGE_COLUMNS = ["run_id", "position", "turn", *Message.model_fields]
_CHUNK = 500  # run ids per IN (...) list: far below every backend's parameter limit
_LOG_TABLES: dict[str, tuple[Table, list[str], tuple[str, ...]]] = {
    "bids": (bids, BID_COLUMNS, ("turn", "position")),
    "turns": (turns, TURN_COLUMNS, ("turn",)),
    "messages": (messages, MESSAGE_COLUMNS, ("position",)),
}
_SPEC_ONLY = ("agents", "schema_version")


def _chunks(run_ids: Sequence[str]) -> Iterable[Sequence[str]]:
    for start in range(0, len(run_ids), _CHUNK):
        yield run_ids[start:start + _CHUNK]


def log_rows(conn: Connection, kind: str,
             run_ids: Sequence[str] | None) -> tuple[list[Any], list[str]]:
    """Rows of bids, turns or messages for these runs (all runs when None), in run order."""
    table, columns, order = _LOG_TABLES[kind]
    query: Select[Any] = select(*(table.c[c] for c in columns))
    if run_ids is None:
        query = query.order_by(table.c.run_id, *(table.c[c] for c in order))
        return list(conn.execute(query)), columns
    rank = {run_id: i for i, run_id in enumerate(dict.fromkeys(run_ids))}
    rows: list[Any] = []
    for chunk in _chunks(list(rank)):
        part = query.where(table.c.run_id.in_(chunk)).order_by(
            table.c.run_id, *(table.c[c] for c in order))
        rows.extend(conn.execute(part))
    if len(rank) > 1:
        rows.sort(key=lambda row: rank[row[0]])  # stable: keeps turn order within a run
    return rows, columns


def log_frame(conn: Connection, kind: str, run_ids: Sequence[str] | None) -> pd.DataFrame:
    import pandas as pd

    rows, columns = log_rows(conn, kind, run_ids)
    # plain tuples: pandas probes a Row for mapping keys, 3x the time on a big sweep's bids
    return pd.DataFrame.from_records([tuple(r) for r in rows], columns=columns)


def run_models(conn: Connection, run_ids: Sequence[str]) -> dict[str, list[str]]:
    """Each run's agents' model names, in agent list order."""
    found: dict[str, list[str]] = {}
    for chunk in _chunks(run_ids):
        query = select(run_agents.c.run_id, run_agents.c.model_name).where(
            run_agents.c.run_id.in_(chunk)).order_by(run_agents.c.run_id, run_agents.c.position)
        for run_id, model in conn.execute(query):
            found.setdefault(run_id, []).append(model)
    return found


def spec_of(spec_json: str) -> dict[str, Any]:
    spec: dict[str, Any] = json.loads(spec_json)
    return spec


def config_of(spec: dict[str, Any]) -> dict[str, Any]:
    """RunRecord.config: the spec without agents and its schema version."""
    return {k: v for k, v in spec.items() if k not in _SPEC_ONLY}


def run_row(conn: Connection, run_id: str) -> RowMapping | None:
    return conn.execute(select(runs).where(runs.c.run_id == run_id)).mappings().first()


def record_from(conn: Connection, row: Any) -> RunRecord:
    """The exact RunRecord of a stored run (an unfinished run has no stop_reason/ended_at)."""
    run_id = row["run_id"]
    bid_rows, bid_cols = log_rows(conn, "bids", [run_id])
    turn_rows, turn_cols = log_rows(conn, "turns", [run_id])
    msg_rows, msg_cols = log_rows(conn, "messages", [run_id])
    bid_list = [Bid(**_fields(r, bid_cols, 1)) for r in bid_rows]
    return RunRecord(
        run_id=run_id, config=config_of(spec_of(row["spec_json"])), task=row["task"],
        messages=[Message(**_fields(r, msg_cols, 3)) for r in msg_rows],
        bids=bid_list,
        turns=[Turn(**_fields(r, turn_cols, 1)) for r in turn_rows],
        stop_reason=row["stop_reason"], error=row["error"], started_at=row["started_at"],
        ended_at=row["ended_at"], total_calls=row["total_calls"],
        total_prompt_tokens=row["total_prompt_tokens"],
        total_completion_tokens=row["total_completion_tokens"],
        total_cost_usd=row["total_cost_usd"], unpriced_bids=row["unpriced_bids"],  # v13
        outcome=outcome_of(row),
    )


def outcome_of(row: Any) -> Outcome | None:
    """The run's stored Outcome (schema v9), or None for a plain task or an older run."""
    text = row.get("outcome_json") if hasattr(row, "get") else None
    return None if not text else Outcome.model_validate_json(text)


def _fields(row: Sequence[Any], columns: list[str], skip: int) -> dict[str, Any]:
    return dict(zip(columns[skip:], row[skip:], strict=True))


def message_turns(conn: Connection, run_id: str) -> list[int]:
    """The turn each message was posted on (0 for the task), in posting order."""
    query = select(messages.c.turn).where(messages.c.run_id == run_id).order_by(
        messages.c.position)
    return list(conn.execute(query).scalars())
