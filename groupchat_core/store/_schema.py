"""The store's tables, per schema version, in portable SQLAlchemy Core.

Column names of `messages`, `bids` and `turns` are the docs/engine.md §9 record fields, so frames
read from the store look exactly like `RunRecord.bids_frame()` plus `run_id`. Times are ISO-8601 UTC
text (as in the records), so a run reads back byte-for-byte; floats are doubles.

The three log tables are clustered by their primary key (run_id, ...) on SQLite (WITHOUT ROWID):
one B-tree per table instead of a table plus its key index, which halves the work of recording
a turn and keeps a run's rows together for reading. Other databases ignore the option.

Version history (see migrations.py):
    1  agents, presets, sweeps, runs, run_agents, messages, bids, turns, schema_version
    2  runs.tags and runs.notes (label runs in the dashboard), index on runs.started_at
    3  bids.cached (answered by the bid cache), the bid_cache table, and on sweeps: reason
       (why a sweep stopped, e.g. a budget cap) and its writer (pid, hostname, proc_start),
       so a sweep left `running` by a dead process reads as interrupted
    4  sweeps.owned_at (since when its owner runs it) and `sweep_cells`: one claim row per
       (sweep, cell), so a cell is run by one process at a time and never again once finished
       (see store/_sweeps.py)
    5  agents.position: the order of the saved agents (the Agents page's list), which is a
       parameter of an experiment (ties go to the earlier agent), so it survives a reload
    6  on runs and sweeps: owner and owner_name (who started it: the signed-in user's email or
       subject and display name, or "local" on a server without login; NULL for rows from
       before v6 and for scripts that name no owner), and app_version / litellm_version (the
       code that recorded it)
    7  bids.deployment: which deployment of a model answered (several deployments load-balanced
       by litellm's Router, _deployments.py); NULL for a model with one endpoint
    8  agents.owner and agents.owner_name: who saved or imported a saved agent (as on runs);
       NULL for agents from before v8 and for writers that name no owner (the CLI, scripts)
    9  the outcome of a scored task on runs (docs/outcomes.md): task_id, answer (extracted),
       correct, score, scorer, and outcome_json (the whole Outcome: votes, the judge's call);
       NULL for plain tasks and for runs from before v9
    10 bids.outcome: read / cached / unreadable / failed, set by the turn loop (it was told
       apart by the error text and path); the upgrade fills it for existing bids by that rule
    11 people in the room (issue 22): bids.kind (agent / human; existing bids are agents) and
       turns.rule_winner / turns.human_pick (human as selector: what the bidding rule picked and
       the person who picked; NULL otherwise)
    12 bids.cached_calls (calls of a bid the bid cache answered, so calls made + cached_calls
       is what a chat needs on a cold cache, exact for bid_then_speak's two calls a row; the
       upgrade sets 1 where cached) and turns.selector_reason (the selector model's reply)
    13 an unknown cost is NULL, not 0 (issue 40): runs.total_cost_usd is NULL when calls were
       made and none could be priced, and runs.unpriced_bids counts the bids whose call had
       no price (RunRecord.unpriced_bids), so readers no longer re-derive "unpriced" from the
       bids; the upgrade fills both from the stored bids by the record's rule
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    Boolean,
    Column,
    Double,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    false,
    text,
)

from .._statuses import RUN_STATUSES as RUN_STATUSES  # declared once, there
from .._version import SCHEMA_VERSION as SCHEMA_VERSION  # declared there: --version reads it


def _provenance(version: int) -> list[Column[Any]]:
    """v6 columns of runs and sweeps: who started it, and which code recorded it."""
    if version < 6:
        return []
    return [Column("owner", String(320)), Column("owner_name", String(320)),
            Column("app_version", String(40)), Column("litellm_version", String(40))]


def _outcome(version: int) -> list[Column[Any]]:
    """v9 columns of runs: a scored task's outcome (docs/outcomes.md); NULL otherwise."""
    if version < 9:
        return []
    return [Column("task_id", String(200)), Column("answer", Text), Column("correct", Boolean),
            Column("score", Double), Column("scorer", String(20)), Column("outcome_json", Text)]


def _run_fk() -> ForeignKey:
    return ForeignKey("runs.run_id", ondelete="CASCADE")


def _library(md: MetaData, version: int) -> None:
    """Saved agents and presets: specs as JSON text, never an api_key. Agents have a position
    (v5; NULL for agents saved before it: they sort after the others, by name)."""
    for name, key in (("agents", "name"), ("presets", "name")):
        extra: list[Column[Any]] = [Column("position", Integer)] if (
            name == "agents" and version >= 5) else []
        if name == "agents" and version >= 8:  # who saved it: others may use, not edit it
            extra += [Column("owner", String(320)), Column("owner_name", String(320))]
        Table(
            name, md,
            Column(key, String(200), primary_key=True),
            Column("spec_json", Text, nullable=False),
            Column("created_at", String(40), nullable=False),
            Column("updated_at", String(40), nullable=False),
            *extra,
        )


def _sweeps(md: MetaData, version: int) -> None:
    # why it stopped, and who runs it (as on runs)
    extra: list[Column[Any]] = [] if version < 3 else [
        Column("reason", Text), Column("pid", Integer), Column("hostname", String(255)),
        Column("proc_start", String(40))]
    if version >= 4:
        extra.append(Column("owned_at", String(40)))  # since when its owner has run it
    extra.extend(_provenance(version))
    Table(
        "sweeps", md,
        Column("sweep_id", String(64), primary_key=True),
        Column("name", String(200), nullable=False),
        Column("grid_json", Text, nullable=False),
        Column("status", String(20), nullable=False),
        Column("created_at", String(40), nullable=False),
        Column("ended_at", String(40)),
        *extra,
    )


def _sweep_cells(md: MetaData) -> None:
    """Claims: a cell is run only by the process whose insert (or update of an `open` claim)
    took its row; `finished` claims are never taken again while their run exists."""
    Table(
        "sweep_cells", md,
        Column("sweep_id", String(64), ForeignKey("sweeps.sweep_id", ondelete="CASCADE"),
               primary_key=True),
        Column("cell", Text, primary_key=True),
        Column("state", String(20), nullable=False),  # running, finished or open (released)
        Column("run_id", String(64), ForeignKey("runs.run_id", ondelete="SET NULL")),
        Column("pid", Integer),
        Column("hostname", String(255)),
        Column("proc_start", String(40)),
        Column("claimed_at", String(40), nullable=False),
        Column("updated_at", String(40), nullable=False),
    )


def _bid_cache(md: MetaData) -> None:
    """Answers to bid requests, by the sha256 of the request (groupchat_core.engine._bidcache)."""
    Table(
        "bid_cache", md,
        Column("key", String(64), primary_key=True),
        Column("model_name", String(200), nullable=False),
        Column("value_json", Text, nullable=False),
        Column("created_at", String(40), nullable=False),
        sqlite_with_rowid=False,
    )


def _total_cost(version: int) -> Column[Any]:
    """runs.total_cost_usd: NOT NULL (0 for an unknown cost) before v13, NULL-able since."""
    if version < 13:
        return Column("total_cost_usd", Double, nullable=False, server_default="0")
    return Column("total_cost_usd", Double, server_default="0")


def _runs(md: MetaData, version: int) -> None:
    extra: list[Column[Any]] = [] if version < 2 else [
        Column("tags", Text, nullable=False, server_default=""),
        Column("notes", Text, nullable=False, server_default=""),
    ]
    extra.extend(_provenance(version))
    extra.extend(_outcome(version))
    if version >= 13:
        extra.append(Column("unpriced_bids", Integer, nullable=False, server_default=text("0")))
    runs = Table(
        "runs", md,
        Column("run_id", String(64), primary_key=True),
        Column("name", String(200), nullable=False),
        Column("task", Text, nullable=False),
        Column("status", String(20), nullable=False, index=True),
        Column("stop_reason", String(20)),
        Column("error", Text),
        Column("spec_json", Text, nullable=False),
        Column("agents", Text, nullable=False),  # comma list, for display
        Column("threshold", Double, nullable=False),
        Column("recency_penalty", Double, nullable=False),
        Column("recency_window", Integer, nullable=False),
        Column("max_loops", Integer, nullable=False),
        Column("started_at", String(40), nullable=False),
        Column("ended_at", String(40)),
        Column("total_calls", Integer, nullable=False, server_default="0"),
        Column("total_prompt_tokens", Integer, nullable=False, server_default="0"),
        Column("total_completion_tokens", Integer, nullable=False, server_default="0"),
        _total_cost(version),
        Column("sweep_id", String(64), ForeignKey("sweeps.sweep_id", ondelete="SET NULL"),
               index=True),
        Column("cell", Text),
        Column("pid", Integer),
        Column("hostname", String(255)),
        Column("proc_start", String(40)),  # the writer's start time, so a reused pid is not it
        *extra,
    )
    if version >= 2:
        Index("ix_runs_started_at", runs.c.started_at)
    Table(
        "run_agents", md,  # who took part, for exact agent filters
        Column("run_id", String(64), _run_fk(), primary_key=True),
        Column("position", Integer, primary_key=True),
        Column("agent", String(200), nullable=False, index=True),
        Column("model_name", String(200), nullable=False),
    )


def _messages(md: MetaData) -> None:
    Table(
        "messages", md,
        Column("run_id", String(64), _run_fk(), primary_key=True),
        Column("position", Integer, primary_key=True),  # 0 is the task
        Column("turn", Integer, nullable=False),  # 0 for the task
        Column("role", String(200), nullable=False),
        Column("content", Text, nullable=False),
        Column("timestamp", String(40), nullable=False),
        Column("score", Double),
        sqlite_with_rowid=False,
    )


def _bids(md: MetaData, version: int) -> None:
    extra: list[Column[Any]] = [] if version < 3 else [
        Column("cached", Boolean, nullable=False, server_default=false())]
    if version >= 7:
        extra.append(Column("deployment", String(100)))
    if version >= 10:
        extra.append(Column("outcome", String(16), nullable=False, server_default=text("'read'")))
    if version >= 11:
        extra.append(Column("kind", String(16), nullable=False, server_default=text("'agent'")))
    if version >= 12:
        extra.append(Column("cached_calls", Integer, nullable=False, server_default=text("0")))
    Table(
        "bids", md,
        Column("run_id", String(64), _run_fk(), primary_key=True),
        Column("turn", Integer, primary_key=True),
        Column("position", Integer, primary_key=True),
        Column("agent", String(200), nullable=False),
        Column("score", Double, nullable=False),
        Column("adjusted", Double, nullable=False),
        Column("penalized", Boolean, nullable=False),
        Column("eligible", Boolean, nullable=False),
        Column("winner", Boolean, nullable=False),
        Column("message", Text, nullable=False),
        Column("latency_ms", Double, nullable=False),
        Column("prompt_tokens", Integer),
        Column("completion_tokens", Integer),
        Column("cost_usd", Double),
        Column("path", String(40), nullable=False),
        Column("error", Text),
        Column("calls", Integer, nullable=False),
        *extra,
        sqlite_with_rowid=False,
    )


def _turns(md: MetaData, version: int) -> None:
    extra: list[Column[Any]] = [] if version < 11 else [
        Column("rule_winner", String(200)), Column("human_pick", String(200))]
    if version >= 12:
        extra.append(Column("selector_reason", Text))
    Table(
        "turns", md,
        Column("run_id", String(64), _run_fk(), primary_key=True),
        Column("turn", Integer, primary_key=True),
        Column("winner", String(200)),
        Column("winning_adjusted", Double),
        Column("runner_up_adjusted", Double),
        Column("margin", Double),
        Column("lull", Boolean, nullable=False),
        Column("reason", String(40), nullable=False),
        Column("penalty_changed_winner", Boolean, nullable=False),
        Column("failed_bids", Integer, nullable=False),
        *extra,
        sqlite_with_rowid=False,
    )


def metadata_for(version: int = SCHEMA_VERSION) -> MetaData:
    """The tables as they were at `version` (older versions are kept to test upgrades)."""
    if not 1 <= version <= SCHEMA_VERSION:
        raise ValueError(f"no schema version {version}")
    md = MetaData()
    Table(
        "schema_version", md,
        Column("id", Integer, primary_key=True, autoincrement=False),  # always 1: one row
        Column("version", Integer, nullable=False),
        Column("updated_at", String(40), nullable=False),
    )
    _library(md, version)
    _sweeps(md, version)
    _runs(md, version)
    _messages(md)
    _bids(md, version)
    _turns(md, version)
    if version >= 3:
        _bid_cache(md)
    if version >= 4:
        _sweep_cells(md)
    return md


METADATA = metadata_for()
_T = METADATA.tables
schema_version, agents, presets, sweeps = (
    _T["schema_version"], _T["agents"], _T["presets"], _T["sweeps"])
runs, run_agents, messages, bids, turns = (
    _T["runs"], _T["run_agents"], _T["messages"], _T["bids"], _T["turns"])
bid_cache, sweep_cells = _T["bid_cache"], _T["sweep_cells"]
