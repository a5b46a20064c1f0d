"""The run store on a real PostgreSQL server: the same behaviour as on SQLite, plus what only a
server shows (psycopg types, transactional DDL, advisory locks, several processes at once).

The server is a throwaway one started for the session from the machine's PostgreSQL binaries
(tests/pg.py; `make postgres` installs them); with GROUPCHAT_TEST_POSTGRES_URL set, that server
is used instead (its role must be allowed to CREATE DATABASE). Every test gets a new, empty
database of its own, dropped afterwards, and GROUPCHAT_DB points at it. Missing binaries or
psycopg fail these tests with what to install: they never skip.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pandas as pd
import pytest
from pg import ENV_URL, Databases, LocalPostgres, PostgresUnavailable
from sqlalchemy import create_engine, inspect, select, text, update

# Backend-neutral store and bundle tests, run again here on PostgreSQL via the fixtures below.
from test_bundles import (  # noqa: F401
    test_a_bundle_imported_elsewhere_reproduces_the_run_exactly,
    test_a_bundle_never_holds_a_key,
    test_a_run_exported_while_running_imports_as_interrupted,
    test_bundle_text_round_trip_and_a_second_import_is_refused,
)
from test_store import (  # noqa: F401
    test_a_cancelled_run_keeps_what_was_posted,
    test_a_failed_write_changes_nothing,
    test_a_run_whose_bids_all_fail_is_recorded_as_error,
    test_abandon_closes_runs_the_engine_never_finished,
    test_delete_run_removes_its_log,
    test_each_turn_is_written_on_its_own_as_soon_as_it_completes,
    test_frames_of_many_runs_keep_the_order_asked,
    test_list_runs_filters_combine,
    test_recorded_run_reads_back_exactly,
    test_resolve_accepts_a_unique_prefix,
    test_run_batch_records_every_run,
    test_runs_of_dead_writers_on_this_host_become_interrupted,
    test_saved_agents_and_presets,
    test_sweeps_group_runs,
    test_the_run_is_fully_recorded_when_run_returns,
    three_turns,
)
from test_store_migrations import _v1_file
from test_store_processes import WRITER, _child_env

from groupchat_core import Agent, GroupChat, StoreError
from groupchat_core._bundles import export_bundle, import_bundle
from groupchat_core._records import Bid
from groupchat_core.store import SCHEMA_VERSION, RunStore, dispose_engines
from groupchat_core.store._connect import get_engine
from groupchat_core.store._migrations import forget_checked
from groupchat_core.store._recorder import writer_thread
from groupchat_core.store._schema import METADATA, runs, schema_version
from groupchat_core.testing._fake_server import FakeOpenAIServer, tool_call

KEY = "sk-postgres-test-never-stored-0123456789"


@pytest.fixture(scope="session")
def pg_server() -> Iterator[str]:
    """A URL of the server's admin database: the env's server, else a throwaway local one."""
    external = os.environ.get(ENV_URL, "").strip()
    if external:
        yield external
        return
    try:
        server = LocalPostgres.start()
    except PostgresUnavailable as exc:
        problem = str(exc)  # failed outside the except block: one message, no chained trace
    else:
        problem = ""
    if problem:
        pytest.fail(problem, pytrace=False)
    try:
        yield server.url()
    finally:
        server.stop()


@pytest.fixture(scope="session")
def pg_databases(pg_server: str) -> Databases:
    try:
        return Databases(pg_server)
    except PostgresUnavailable as exc:
        problem = str(exc)
    pytest.fail(problem, pytrace=False)


@pytest.fixture(autouse=True)
def pg_url(pg_databases: Databases, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A new empty database for this test only; GROUPCHAT_DB (so RunStore()) points at it."""
    url = pg_databases.create()
    monkeypatch.setenv("GROUPCHAT_DB", url)
    yield url
    writer_thread().flush(10)  # no write of this test is still queued for the dropped database
    dispose_engines()
    forget_checked()
    pg_databases.drop(url)


@pytest.fixture
def store(pg_url: str) -> RunStore:
    return RunStore(pg_url)


@pytest.fixture
def other(pg_databases: Databases) -> Iterator[RunStore]:
    """A second PostgreSQL store (bundles move runs between stores)."""
    url = pg_databases.create()
    yield RunStore(url)
    writer_thread().flush(10)
    dispose_engines()
    pg_databases.drop(url)


def test_the_store_really_is_on_postgresql(store, pg_url):
    assert store.engine.dialect.name == "postgresql"
    assert store.engine.dialect.driver == "psycopg"
    with store.read("test") as conn:
        assert conn.execute(text("SELECT current_database()")).scalar() == \
            pg_url.rsplit("/", 1)[1]
        assert conn.execute(select(schema_version.c.version)).scalar() == SCHEMA_VERSION
        tables = set(inspect(conn).get_table_names())
    assert tables == set(METADATA.tables)


def sim_chat(**kwargs) -> GroupChat:
    personas = ("eager", "balanced", "contrarian")
    agents = [Agent(agent_name=f"Sim{p.title()}", model_name=f"sim/{p}",
                    system_prompt=f"You care about {p} budgets.") for p in personas]
    return GroupChat(agents=agents, max_loops=8, seed=7, **kwargs)


def test_a_sim_chat_recorded_by_a_recorder_reads_back_exactly(store):
    chat = sim_chat(name="budget")
    recorder = store.recorder(chat)
    chat.add_observer(recorder)
    records = []
    for task in ("Discuss the budget.", "Now the timeline."):
        chat.run(task)
        records.append(chat.last_run)
    assert recorder.failures == {} and len(recorder.run_ids) == 2
    for run_id, record in zip(recorder.run_ids, records, strict=True):
        assert store.load_run(run_id) == record
        pd.testing.assert_frame_equal(store.bids(run_id).drop(columns="run_id"),
                                      record.bids_frame())
        pd.testing.assert_frame_equal(store.turns(run_id).drop(columns="run_id"),
                                      record.turns_frame())
        info = store.run_info(run_id)
        assert info["status"] == "finished" and info["turns"] == len(record.turns) > 0
        assert info["spec"]["agents"][1]["model_name"] == "sim/balanced"
    frame = store.bids(recorder.run_ids)
    assert frame["penalized"].dtype == bool and frame["score"].dtype == float
    assert list(frame.columns) == ["run_id", *Bid.model_fields]


def test_list_runs_on_postgresql_filters_orders_and_counts(store):
    ids = []
    for name, task in (("alpha", "one"), ("beta", "two"), ("gamma", "three")):
        chat = sim_chat(name=name)
        store.attach(chat)
        chat.run(task)
        ids.append(chat.last_run.run_id)
        time.sleep(0.002)  # distinct started_at
    every = store.list_runs()
    assert every["name"].tolist() == ["gamma", "beta", "alpha"]
    assert every["turns"].tolist() == [len(store.load_run(r).turns) for r in reversed(ids)]
    assert store.list_runs(limit=2)["run_id"].tolist() == ids[:0:-1]
    assert store.list_runs(limit=0).empty
    assert store.list_runs(agent="SimEager", status="finished")["run_id"].tolist() == ids[::-1]
    assert store.list_runs(agent="simeager").empty  # exact and case-sensitive
    middle = store.run_info(ids[1])["started_at"]
    assert store.list_runs(since=middle)["name"].tolist() == ["gamma", "beta"]
    store.set_tags(ids[0], ["a_b", "x%"])
    store.set_notes(ids[0], "ünïcödé notes ✓")
    assert store.list_runs(tag="a_b")["run_id"].tolist() == [ids[0]]
    assert store.list_runs(tag="aXb").empty and store.list_runs(tag="x").empty
    assert store.run_info(ids[0])["notes"] == "ünïcödé notes ✓"
    sweep = store.create_sweep("s", {"threshold": [0.5]})
    chat = sim_chat(name="swept")
    store.attach(chat, sweep_id=sweep, cell="threshold=0.5")
    chat.run("four")
    assert store.list_runs(sweep_id=sweep)["cell"].tolist() == ["threshold=0.5"]
    assert store.resolve(ids[2][:8]) == ids[2]
    with pytest.raises(StoreError, match="no run"):
        store.resolve("%")


def test_bundles_move_runs_between_postgresql_and_sqlite_exactly(store, tmp_path):
    chat = sim_chat()
    store.attach(chat)
    chat.run("Discuss the budget.")
    run_id = chat.last_run.run_id
    store.set_tags(run_id, ["pg"])
    lite = RunStore(f"sqlite:///{tmp_path}/lite.db")
    data = export_bundle(store, run_id)
    assert import_bundle(lite, json.loads(json.dumps(data))) == run_id
    assert lite.load_run(run_id) == chat.last_run
    assert {**export_bundle(lite, run_id), "exported_at": 0} == {**data, "exported_at": 0}

    chat2 = sim_chat()
    lite.attach(chat2)
    chat2.run("Back the other way.")
    import_bundle(store, export_bundle(lite, chat2.last_run.run_id))
    assert store.load_run(chat2.last_run.run_id) == chat2.last_run
    pd.testing.assert_frame_equal(store.bids(chat2.last_run.run_id),
                                  lite.bids(chat2.last_run.run_id))
    store.delete_run(run_id)
    import_bundle(store, data)
    assert store.load_run(run_id) == chat.last_run
    assert store.run_info(run_id)["tags"] == "pg"


def test_no_key_ever_reaches_the_database(store, pg_url):
    agents = [Agent(agent_name=n, model_name="sim/eager", api_key=KEY) for n in "AB"]
    chat = GroupChat(agents=agents, max_loops=3)
    store.attach(chat)
    chat.run("task")
    store.save_agent(agents[0])
    store.save_preset("room", chat.to_spec())
    with store.read("test") as conn:
        dump = "".join(
            str(conn.exec_driver_sql(f'SELECT t::text FROM "{name}" t').scalars().all())
            for name in METADATA.tables)
    assert chat.last_run.run_id in dump and "sim/eager" in dump  # the scan does see the data
    assert "sk-postgres-test" not in dump and "api_key" not in dump
    assert RunStore(pg_url).get_agent("A").api_key is None


def test_a_turn_that_cannot_be_written_stops_recording_and_flags_the_run(
        store, monkeypatch, caplog):
    import psycopg

    chat = three_turns()
    recorder = store.attach(chat)
    real_write = store.turn_writer.write

    def failing_on_turn_2(conn, run_id, turn, bids, message):
        if turn.turn == 2:
            raise psycopg.errors.DiskFull("could not extend file: No space left on device")
        real_write(conn, run_id, turn, bids, message)

    monkeypatch.setattr(store.turn_writer, "write", failing_on_turn_2)
    chat.run("go")
    run_id = chat.last_run.run_id
    assert store.turns(run_id)["turn"].tolist() == [1]
    info = store.run_info(run_id)
    assert info["status"] == "error" and "record turn 2" in info["error"]
    assert "No space left" in recorder.failures[run_id]
    assert "could not record turn 2" in caplog.text


def test_a_unique_violation_is_one_store_error_and_changes_nothing(store):
    chat = three_turns()
    store.attach(chat)
    chat.run("go")
    run_id = chat.last_run.run_id
    with pytest.raises(StoreError, match="could not test in .*duplicate key"):
        with store.write("test") as conn:
            conn.execute(update(runs).where(runs.c.run_id == run_id).values(notes="changed"))
            conn.exec_driver_sql("INSERT INTO schema_version VALUES (1, 1, 'x')")
    assert store.run_info(run_id)["notes"] == ""


# --- schema versions ---------------------------------------------------------------------


def _columns_and_indexes(url: str) -> tuple[list[str], list[str]]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            inspector = inspect(conn)
            return ([c["name"] for c in inspector.get_columns("runs")],
                    [i["name"] for i in inspector.get_indexes("runs")])
    finally:
        engine.dispose()


def test_a_version_1_database_is_upgraded_in_place_and_keeps_its_runs(pg_url):
    _v1_file(pg_url)
    columns, indexes = _columns_and_indexes(pg_url)
    assert "tags" not in columns and "ix_runs_started_at" not in indexes

    store = RunStore(pg_url)

    with store.read("test") as conn:
        assert conn.execute(select(schema_version.c.version)).scalar() == SCHEMA_VERSION
    columns, indexes = _columns_and_indexes(pg_url)
    assert {"tags", "notes"} <= set(columns) and "ix_runs_started_at" in indexes
    record = store.load_run("old-run")
    assert [m.content for m in record.messages] == ["Plan it.", "hello"]
    assert [(b.agent, b.winner) for b in record.bids] == [("A", True), ("B", False)]
    assert store.list_runs()[["run_id", "tags", "notes", "turns"]].values.tolist() == [
        ["old-run", "", "", 1]]
    store.set_tags("old-run", ["from-v1"])
    assert store.list_runs(tag="from-v1")["run_id"].tolist() == ["old-run"]
    dispose_engines()
    forget_checked()
    assert RunStore(pg_url).load_run("old-run") == record  # reopening changes nothing


def test_a_failed_upgrade_is_rolled_back_whole_ddl_included(pg_url, monkeypatch):
    from groupchat_core.store import _migrations as migrations

    _v1_file(pg_url)

    def broken(conn):
        migrations._v1_to_v2(conn)
        raise RuntimeError("disk on fire")

    monkeypatch.setitem(migrations.STEPS, 1, broken)
    with pytest.raises(RuntimeError, match="disk on fire"):
        RunStore(pg_url)
    dispose_engines()
    columns, indexes = _columns_and_indexes(pg_url)
    assert "tags" not in columns and "ix_runs_started_at" not in indexes  # transactional DDL
    monkeypatch.setitem(migrations.STEPS, 1, migrations._v1_to_v2)
    forget_checked()
    assert RunStore(pg_url).load_run("old-run").task == "Plan it."


def test_a_database_from_newer_code_or_another_program_is_refused(pg_url, pg_databases):
    RunStore(pg_url)
    with get_engine(pg_url).begin() as conn:
        conn.execute(schema_version.update().values(version=SCHEMA_VERSION + 1))
    forget_checked()
    with pytest.raises(StoreError, match="newer than this code"):
        RunStore(pg_url)

    foreign = pg_databases.create()
    try:
        engine = create_engine(foreign)
        with engine.begin() as conn:
            conn.exec_driver_sql("CREATE TABLE runs (id integer)")
        engine.dispose()
        with pytest.raises(StoreError, match="not a GroupChat Lab store"):
            RunStore(foreign)
    finally:
        dispose_engines()
        pg_databases.drop(foreign)


# --- several processes --------------------------------------------------------------------


def test_two_processes_create_the_schema_and_write_at_once_keeping_every_row(pg_url, tmp_path):
    """Both children open the empty database at the same moment (the advisory lock serialises
    the schema setup), then record 25 runs each, interleaved."""
    children = [subprocess.Popen(
        [sys.executable, "-c", WRITER, tag, str(tmp_path)], env=_child_env(pg_url),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for tag in ("P", "Q")]
    outputs = [child.communicate(timeout=120) for child in children]
    for child, (_, err) in zip(children, outputs, strict=True):
        assert child.returncode == 0, err[-2000:]
    store = RunStore(pg_url)
    with store.read("test") as conn:
        assert conn.execute(select(schema_version)).all()[0].version == SCHEMA_VERSION
    listed = store.list_runs()
    assert len(listed) == 50 and set(listed["status"]) == {"finished"}
    for tag, (out, _) in zip("PQ", outputs, strict=True):
        ids = listed.loc[listed["task"].str.startswith(f"{tag} task"), "run_id"].tolist()
        assert len(ids) == 25
        stored = [len(store.bids(ids)), len(store.turns(ids)), len(store.messages(ids))]
        assert stored == [int(x) for x in out.split()]


def _turns_in(url: str) -> int:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            if not inspect(conn).has_table("turns"):
                return 0
            return conn.execute(text("SELECT count(*) FROM turns")).scalar()
    finally:
        engine.dispose()


def test_a_sigkilled_writer_keeps_its_turns_and_its_run_reads_as_interrupted(pg_url, tmp_path):
    with FakeOpenAIServer() as server:
        server.set_responder(None, lambda body: tool_call(
            0.9, f"{body['model']} has more to say", latency=0.2))
        spec = {"schema_version": 1, "name": "crash", "max_loops": 1000, "agents": [
            {"agent_name": name, "model_name": f"openai/{name.lower()}",
             "api_base": server.base_url, "num_retries": 0} for name in ("Alice", "Bob")]}
        spec_path = tmp_path / "spec.json"
        spec_path.write_text(json.dumps(spec))
        child = subprocess.Popen(
            [sys.executable, "-m", "groupchat_core", "run", str(spec_path), "--task",
             "Keep talking."], env=_child_env(pg_url), cwd=tmp_path,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 90
            while _turns_in(pg_url) < 2:
                if child.poll() is not None:
                    pytest.fail(f"the chat exited early: {child.stderr.read().decode()[-2000:]}")
                assert time.monotonic() < deadline, "the chat recorded no turns in 90 s"
                time.sleep(0.05)
            child.send_signal(signal.SIGKILL)
            assert child.wait(timeout=10) == -signal.SIGKILL
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()

    store = RunStore(pg_url)
    listed = store.list_runs()
    assert len(listed) == 1 and store.interrupted == listed["run_id"].tolist()
    run_id = listed["run_id"].iloc[0]
    info = store.run_info(run_id)
    assert (info["status"], info["stop_reason"], info["ended_at"]) == ("interrupted", None, None)
    record = store.load_run(run_id)
    n = len(record.turns)
    assert n >= 2 and [t.turn for t in record.turns] == list(range(1, n + 1))
    assert [(b.turn, b.agent) for b in record.bids] == [
        (t, name) for t in range(1, n + 1) for name in ("Alice", "Bob")]
    assert [m.role for m in record.messages] == ["User"] + [t.winner for t in record.turns]
    dispose_engines()
    forget_checked()
    assert RunStore(pg_url).interrupted == []  # marked once, not again


def test_every_test_database_is_its_own(pg_databases, pg_url, store):
    """The per-test databases really are separate and empty (no rows leak between tests)."""
    assert store.list_runs().empty and store.list_agents() == []
    assert pg_databases.names(f"groupchat_test_{os.getpid()}_") == [pg_url.rsplit("/", 1)[1]]
