"""The same store on PostgreSQL, when one is given: GROUPCHAT_TEST_POSTGRES_URL (needs psycopg).

    GROUPCHAT_TEST_POSTGRES_URL=postgresql+psycopg://user@127.0.0.1:5432/scratch pytest ...

The database's tables are dropped first: point it at a scratch database only.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from sqlalchemy import update

from groupchat_core import Agent, GroupChat
from groupchat_core.bundles import export_bundle, import_bundle
from groupchat_core.store import RunStore, dispose_engines
from groupchat_core.store.connect import get_engine
from groupchat_core.store.migrations import forget_checked
from groupchat_core.store.schema import METADATA, runs

URL = os.environ.get("GROUPCHAT_TEST_POSTGRES_URL", "")
pytestmark = pytest.mark.skipif(not URL, reason="GROUPCHAT_TEST_POSTGRES_URL is not set")


@pytest.fixture
def store() -> Iterator[RunStore]:
    pytest.importorskip("psycopg")
    METADATA.drop_all(get_engine(URL))
    forget_checked()
    yield RunStore(URL)
    dispose_engines()
    forget_checked()


def test_record_read_export_import_and_interrupted_on_postgresql(store):
    agents = [Agent(agent_name=n, model_name="sim/eager", system_prompt=f"About {n}.")
              for n in "ABC"]
    chat = GroupChat(agents=agents, max_loops=8)
    store.attach(chat)
    chat.run("Discuss the budget.")
    record = chat.last_run
    assert store.load_run(record.run_id) == record
    assert store.list_runs(agent="B")["run_id"].tolist() == [record.run_id]
    data = export_bundle(store, record.run_id)
    store.delete_run(record.run_id)
    import_bundle(store, data)
    assert store.load_run(record.run_id) == record
    chat.run("Again.")
    with store.write("test") as conn:
        conn.execute(update(runs).where(runs.c.run_id == chat.last_run.run_id)
                     .values(status="running", pid=2**22 + 12345))
    forget_checked()
    assert RunStore(URL).interrupted == [chat.last_run.run_id]
