"""A run starts in one transaction: its row, its agents and its task message appear together.

Before, the run row (with its agents) and the task were two transactions: a reader polling the
store could see a `running` run without its task, and a crash between the two left a run that
exported to a bundle that cannot be imported ("messages: List should have at least 1 item").
Each test runs on SQLite and on PostgreSQL (the `store` / `store_url` fixtures).

Private imports (`exports._bundles`, `store._schema`): units or test hooks with no public name;
everything public comes from the public API.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
from sqlalchemy import event, func, select

from groupchat_core import GroupChat, import_bundle
from groupchat_core.exports._bundles import export_bundle
from groupchat_core.store import RunStore
from groupchat_core.store._schema import messages, run_agents, runs
from tests.helpers import ROOT
from tests.helpers.chats import scripted_chat

# Runs the reader can see that a transaction should never show: running without a task message,
# or without their agents.
HALF_STARTED = """
SELECT r.run_id FROM runs r
WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.run_id = r.run_id AND m.position = 0)
   OR NOT EXISTS (SELECT 1 FROM run_agents a WHERE a.run_id = r.run_id)
"""

READER = """
import sys, time
from pathlib import Path
from sqlalchemy import create_engine, text
url, stop = sys.argv[1], Path(sys.argv[2])
engine = create_engine(url)
query = text(sys.argv[3])
polls, seen_runs, bad = 0, 0, set()
(stop.parent / "reader-ready").touch()
while not stop.exists():
    with engine.connect() as conn:
        bad.update(conn.execute(query).scalars())
        seen_runs = max(seen_runs, conn.execute(text("SELECT count(*) FROM runs")).scalar())
    polls += 1
print(polls, seen_runs, *sorted(bad))
"""


pytestmark = pytest.mark.usefixtures("fresh_engines")


def duo(turns: int = 2, runs: int = 2, **kwargs) -> GroupChat:
    """Two scripted agents: `runs` chats of `turns` turns each (scripts are used up in order)."""
    return scripted_chat({"Ann": [(0.9, f"a{i}") for i in range(turns * runs)],
                          "Ben": [(0.8, f"b{i}") for i in range(turns * runs)]},
                         max_loops=turns + 1, **kwargs)


def _child_env(url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(GROUPCHAT_DB=url, PYTHONPATH=str(ROOT))
    return env


def _half_started(store: RunStore) -> list[str]:
    with store.read("test") as conn:
        no_task = select(runs.c.run_id).where(~select(messages.c.run_id).where(
            messages.c.run_id == runs.c.run_id, messages.c.position == 0).exists())
        no_agents = select(runs.c.run_id).where(~select(run_agents.c.run_id).where(
            run_agents.c.run_id == runs.c.run_id).exists())
        return sorted({*conn.execute(no_task).scalars(), *conn.execute(no_agents).scalars()})


def test_a_reader_polling_while_many_runs_start_never_sees_a_run_without_its_task(
        store, store_url, tmp_path):
    """A reader process polls in a loop while 150 runs start, four at a time."""
    stop = tmp_path / "stop"
    reader = subprocess.Popen([sys.executable, "-c", READER, store_url, str(stop), HALF_STARTED],
                              env=_child_env(store_url), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        while not (tmp_path / "reader-ready").exists():
            assert reader.poll() is None, reader.stderr.read()[-2000:]
        chat = duo(turns=1, runs=150, batch_concurrency=4)
        store.attach(chat)
        chat.run_batch([f"task {i}" for i in range(150)])
    finally:
        stop.touch()
        out, err = reader.communicate(timeout=60)
    assert reader.returncode == 0, err[-2000:]
    polls, seen_runs, *bad = out.split()
    assert bad == []
    assert int(polls) > 20 and int(seen_runs) > 0  # it really read while runs started
    assert len(store.list_runs()) == 150 and _half_started(store) == []


def test_a_start_whose_task_cannot_be_written_leaves_no_run(store, caplog):
    """A recorder whose writes fail after the run row (at the task message): nothing of the
    run is in the store, not a run without its task, and the run is reported as not recorded."""
    engine = store.engine

    def fail_at_the_task(conn, cursor, statement, parameters, context, executemany):
        if statement.lstrip().upper().startswith("INSERT INTO MESSAGES"):
            raise RuntimeError("the disk went away")

    event.listen(engine, "before_cursor_execute", fail_at_the_task)
    try:
        chat = duo()
        recorder = store.attach(chat)
        chat.run("Start and fail.")
    finally:
        event.remove(engine, "before_cursor_execute", fail_at_the_task)
    run_id = chat.last_run.run_id
    assert len(chat.last_run.turns) == 2  # watching never breaks the chat
    assert "the start of a run" in recorder.failures[run_id]
    assert store.list_runs().empty and _half_started(store) == []
    with store.read("test") as conn:
        assert conn.execute(select(func.count()).select_from(run_agents)).scalar() == 0

    chat.run("Then it works again.")  # a later run of the same recorder is whole
    later = chat.last_run
    assert store.load_run(later.run_id) == later
    bundle = export_bundle(store, later.run_id)
    store.delete_run(later.run_id)
    assert import_bundle(store, bundle) == later.run_id  # and it exports to a valid bundle


KILLED_AT_TASK = """
import os, signal, sys
from sqlalchemy import event
from groupchat_core import Agent, GroupChat
from groupchat_core.store import RunStore
from groupchat_core.testing import ScriptedBids
store = RunStore()
fake = ScriptedBids({"Ann": [(0.9, "a")] * 2, "Ben": [(0.8, "b")] * 2})
chat = GroupChat(agents=[Agent(agent_name=n, model_name=fake.model_name) for n in ("Ann", "Ben")],
                 max_loops=2)
store.attach(chat)
chat.run("the first run is whole")

def die_at_the_task(conn, cursor, statement, parameters, context, executemany):
    if statement.lstrip().upper().startswith("INSERT INTO MESSAGES"):
        os.kill(os.getpid(), signal.SIGKILL)  # a crash right after the run's row is sent

event.listen(store.engine, "before_cursor_execute", die_at_the_task)
chat.run("the second run dies as it starts")
"""


def test_sigkill_right_after_a_run_starts_leaves_no_run_or_a_run_with_its_task(store_url):
    child = subprocess.run([sys.executable, "-c", KILLED_AT_TASK], env=_child_env(store_url),
                           capture_output=True, text=True, timeout=120)
    assert child.returncode == -signal.SIGKILL, child.stderr[-2000:]
    store = RunStore(store_url)
    listed = store.list_runs()
    assert listed["task"].tolist() == ["the first run is whole"]  # the second: nothing at all
    assert _half_started(store) == []
    run_id = listed["run_id"].iloc[0]
    assert store.run_info(run_id)["status"] == "finished"
    assert store.interrupted == []
