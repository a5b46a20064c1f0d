"""Schema versions: a store made by the first schema is upgraded in place, keeping its runs; a
failed upgrade changes nothing; stores from newer code or other programs are refused.

Each test runs on SQLite and on PostgreSQL (the `store_url` fixture, tests/conftest.py).

Private imports (`store._connect`, `store._migrations`, `store._schema`): units or test hooks with
no public name; everything public comes from the public API.
"""

from __future__ import annotations

import json

import pytest
from sqlalchemy import create_engine, insert, inspect, select

from groupchat_core import StoreError
from groupchat_core.store import SCHEMA_VERSION, RunStore, dispose_engines
from groupchat_core.store._connect import get_engine
from groupchat_core.store._migrations import create_version, forget_checked
from groupchat_core.store._schema import metadata_for, schema_version
from tests.helpers.stores import release_store_engines

SPEC = {"name": "old", "description": "d", "max_loops": 5, "threshold": 0.5,
        "recency_penalty": 0.3, "recency_window": 1, "idle_timeout": 8.0,
        "output_type": "str-all-except-first", "verbose": False, "auto_equip": True,
        "bid_prompt": None, "seed": 0, "bid_timeout": 120.0, "batch_concurrency": 1,
        "schema_version": 1, "agents": [{"agent_name": "A", "model_name": "sim/eager"},
                                        {"agent_name": "B", "model_name": "sim/eager"}]}


pytestmark = pytest.mark.usefixtures("fresh_engines")


def _v1_file(url: str) -> None:
    """A store written by schema version 1, holding one finished run with a two-agent turn."""
    engine = get_engine(url)
    create_version(engine, 1)
    t = metadata_for(1).tables
    bid = {"run_id": "old-run", "turn": 1, "score": 0.9, "adjusted": 0.9, "penalized": False,
           "eligible": True, "message": "hello", "latency_ms": 1.5, "prompt_tokens": None,
           "completion_tokens": None, "cost_usd": None, "path": "simulation", "error": None,
           "calls": 1}
    with engine.begin() as conn:
        conn.execute(insert(t["runs"]).values(
            run_id="old-run", name="old", task="Plan it.", status="finished",
            stop_reason="max_loops", spec_json=json.dumps(SPEC), agents="A, B", threshold=0.5,
            recency_penalty=0.3, recency_window=1, max_loops=2,
            started_at="2025-01-01T00:00:00+00:00", ended_at="2025-01-01T00:00:01+00:00",
            total_calls=2))
        conn.execute(insert(t["run_agents"]), [
            {"run_id": "old-run", "position": i, "agent": n, "model_name": "sim/eager"}
            for i, n in enumerate("AB")])
        conn.execute(insert(t["messages"]), [
            {"run_id": "old-run", "position": 0, "turn": 0, "role": "User",
             "content": "Plan it.", "timestamp": "2025-01-01T00:00:00+00:00", "score": None},
            {"run_id": "old-run", "position": 1, "turn": 1, "role": "A", "content": "hello",
             "timestamp": "2025-01-01T00:00:01+00:00", "score": 0.9}])
        conn.execute(insert(t["bids"]), [
            {**bid, "position": 0, "agent": "A", "winner": True},
            {**bid, "position": 1, "agent": "B", "winner": False, "score": 0.2,
             "adjusted": 0.2, "eligible": False, "message": ""}])
        conn.execute(insert(t["turns"]).values(
            run_id="old-run", turn=1, winner="A", winning_adjusted=0.9, runner_up_adjusted=None,
            margin=None, lull=False, reason="highest_bid", penalty_changed_winner=False,
            failed_bids=0))
    release_store_engines()


def _columns_and_indexes(url: str) -> tuple[list[str], list[str]]:
    """The runs table's columns and indexes, read on a connection of its own."""
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            inspector = inspect(conn)
            return ([c["name"] for c in inspector.get_columns("runs")],
                    [i["name"] for i in inspector.get_indexes("runs")])
    finally:
        engine.dispose()


def _version(url: str) -> int:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return conn.execute(select(schema_version.c.version)).scalar()
    finally:
        engine.dispose()


def test_a_version_1_store_is_upgraded_in_place_and_keeps_its_runs(store_url):
    _v1_file(store_url)
    columns, indexes = _columns_and_indexes(store_url)
    assert "tags" not in columns and "ix_runs_started_at" not in indexes

    store = RunStore(store_url)

    with store.read("test") as conn:
        assert conn.execute(select(schema_version.c.version)).scalar() == SCHEMA_VERSION == 13
    columns, indexes = _columns_and_indexes(store_url)
    assert {"tags", "notes"} <= set(columns) and "ix_runs_started_at" in indexes
    record = store.load_run("old-run")
    assert [m.content for m in record.messages] == ["Plan it.", "hello"]
    assert [(b.agent, b.winner) for b in record.bids] == [("A", True), ("B", False)]
    assert record.turns[0].winner == "A" and record.stop_reason == "max_loops"
    assert store.list_runs()[["run_id", "tags", "notes", "turns"]].values.tolist() == [
        ["old-run", "", "", 1]]
    store.set_tags("old-run", ["from-v1"])  # the new columns work on upgraded rows
    assert store.list_runs(tag="from-v1")["run_id"].tolist() == ["old-run"]
    release_store_engines()
    assert RunStore(store_url).load_run("old-run") == record  # reopening changes nothing


def test_a_failed_upgrade_is_rolled_back_whole_ddl_included(store_url, monkeypatch):
    from groupchat_core.store import _migrations as migrations

    _v1_file(store_url)

    def broken(conn):
        migrations._v1_to_v2(conn)
        raise RuntimeError("disk on fire")

    monkeypatch.setitem(migrations.STEPS, 1, broken)
    with pytest.raises(RuntimeError, match="disk on fire"):
        RunStore(store_url)
    dispose_engines()
    assert _version(store_url) == 1
    columns, indexes = _columns_and_indexes(store_url)
    assert "tags" not in columns and "ix_runs_started_at" not in indexes  # transactional DDL
    monkeypatch.setitem(migrations.STEPS, 1, migrations._v1_to_v2)
    forget_checked()
    assert RunStore(store_url).load_run("old-run").task == "Plan it."


def test_a_store_from_newer_code_is_refused(store_url):
    RunStore(store_url)
    with get_engine(store_url).begin() as conn:
        conn.execute(schema_version.update().values(version=SCHEMA_VERSION + 1))
    forget_checked()
    with pytest.raises(StoreError, match="newer than this code"):
        RunStore(store_url)


def test_a_database_of_another_program_is_refused(new_database):
    foreign = new_database()
    engine = create_engine(foreign)
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE runs (id integer)")
    engine.dispose()
    with pytest.raises(StoreError, match="not a GroupChat Lab store"):
        RunStore(foreign)


def test_a_version_3_store_gets_cell_claims_for_its_finished_cells(store_url):
    """v4 adds sweeps.owned_at and sweep_cells: every cell with a finished run gets a
    `finished` claim (the latest run, when an old double resume left two), so no finished cell
    can be claimed again; other cells stay claimable."""
    engine = get_engine(store_url)
    create_version(engine, 3)
    t = metadata_for(3).tables
    run = {"name": "old", "task": "t", "spec_json": json.dumps(SPEC), "agents": "A, B",
           "threshold": 0.5, "recency_penalty": 0.3, "recency_window": 1, "max_loops": 2,
           "sweep_id": "old-sweep"}
    with engine.begin() as conn:
        conn.execute(insert(t["sweeps"]).values(
            sweep_id="old-sweep", name="old", grid_json="{}", status="stopped_budget",
            created_at="2025-01-01T00:00:00+00:00", pid=1, hostname="h", proc_start="9"))
        conn.execute(insert(t["runs"]), [
            {**run, "run_id": "c1-first", "cell": "c1", "status": "finished",
             "started_at": "2025-01-01T00:00:01+00:00", "ended_at": "2025-01-01T00:00:02+00:00"},
            {**run, "run_id": "c1-again", "cell": "c1", "status": "finished",
             "started_at": "2025-01-01T00:00:03+00:00", "ended_at": "2025-01-01T00:00:04+00:00"},
            {**run, "run_id": "c2-run", "cell": "c2", "status": "finished",
             "started_at": "2025-01-01T00:00:01+00:00", "ended_at": "2025-01-01T00:00:05+00:00"},
            {**run, "run_id": "c3-run", "cell": "c3", "status": "interrupted",
             "started_at": "2025-01-01T00:00:01+00:00", "ended_at": None},
            {**run, "run_id": "lone", "cell": None, "sweep_id": None, "status": "finished",
             "started_at": "2025-01-01T00:00:01+00:00", "ended_at": None}])
    release_store_engines()

    store = RunStore(store_url)
    assert _version(store_url) == SCHEMA_VERSION == 13
    claims = store.cell_claims("old-sweep").set_index("cell")
    assert claims["state"].to_dict() == {"c1": "finished", "c2": "finished"}
    assert claims["run_id"].to_dict() == {"c1": "c1-again", "c2": "c2-run"}
    sweep = store.get_sweep("old-sweep")
    assert (sweep["status"], sweep["owned_at"], sweep["pid"]) == ("stopped_budget", None, 1)
    assert not store.claim_cell("old-sweep", "c1").claimed  # finished cells are never rerun
    assert store.claim_cell("old-sweep", "c3").claimed  # the interrupted one is run again
    assert store.sweep_owner("old-sweep") is None
    store.reopen_sweep("old-sweep")  # the new owner columns work on the upgraded row
    assert store.get_sweep("old-sweep")["owned_at"] is not None
    store.delete_run("c2-run")  # its claim loses the run: the cell may be run again
    assert store.claim_cell("old-sweep", "c2").claimed
