"""What only a PostgreSQL server shows: the store really is on it (psycopg, every table), runs
move between PostgreSQL and SQLite exactly, the driver's unique violations become one
StoreError, and every test's database is its own.

Everything the store does on both backends is tested once, on both, through the `store`
fixture (tests/conftest.py): test_store.py, test_store_migrations.py,
test_store_processes.py, test_bundles.py, test_bidcache.py, test_sweeps_store.py. The server
is a throwaway one started for the session from the machine's PostgreSQL binaries
(tests/helpers/pg.py; `make postgres` installs them), or the one at GROUPCHAT_TEST_POSTGRES_URL.
Missing binaries or psycopg fail these tests with what to install: they never skip.

Private imports (`exports._bundles`, `store._schema`): units or test hooks with no public name;
everything public comes from the public API.
"""

from __future__ import annotations

import json
import os

import pandas as pd
import pytest
from sqlalchemy import inspect, select, text, update

from groupchat_core import StoreError, import_bundle
from groupchat_core.exports._bundles import export_bundle
from groupchat_core.store import SCHEMA_VERSION, RunStore
from groupchat_core.store._schema import METADATA, runs, schema_version
from tests.store.test_store import sim_chat  # the same three sim personas


def test_the_store_really_is_on_postgresql(pg_store, pg_url):
    assert pg_store.engine.dialect.name == "postgresql"
    assert pg_store.engine.dialect.driver == "psycopg"
    with pg_store.read("test") as conn:
        assert conn.execute(text("SELECT current_database()")).scalar() == \
            pg_url.rsplit("/", 1)[1]
        assert conn.execute(select(schema_version.c.version)).scalar() == SCHEMA_VERSION
        tables = set(inspect(conn).get_table_names())
    assert tables == set(METADATA.tables)


def test_bundles_move_runs_between_postgresql_and_sqlite_exactly(pg_store, tmp_path):
    store = pg_store
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


def test_a_unique_violation_is_one_store_error_and_changes_nothing(pg_store):
    chat = sim_chat(max_loops=3)
    pg_store.attach(chat)
    chat.run("go")
    run_id = chat.last_run.run_id
    with pytest.raises(StoreError, match="could not test in .*duplicate key"):
        with pg_store.write("test") as conn:
            conn.execute(update(runs).where(runs.c.run_id == run_id).values(notes="changed"))
            conn.exec_driver_sql("INSERT INTO schema_version VALUES (1, 1, 'x')")
    assert pg_store.run_info(run_id)["notes"] == ""


def test_every_test_database_is_its_own(pg_databases, pg_url, pg_store):
    """The per-test databases really are separate and empty (no rows leak between tests)."""
    assert pg_store.list_runs().empty and pg_store.list_agents() == []
    assert pg_databases.names(f"groupchat_test_{os.getpid()}_") == [pg_url.rsplit("/", 1)[1]]
