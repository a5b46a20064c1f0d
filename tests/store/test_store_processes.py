"""The store across processes: a SIGKILLed chat keeps its completed turns; two writers share a
database, creating its schema at the same moment; a run starts in one transaction; process
liveness decides which runs were interrupted.

The first tests run real child processes (`python -m groupchat_core run ...` and small scripts),
the first against the local OpenAI-compatible server over 127.0.0.1 with slow replies; each runs on
SQLite (one file) and on PostgreSQL (the `store_url` fixture, tests/conftest.py).

A run starts in one transaction: its row, its agents and its task message appear together.
Before, the run row (with its agents) and the task were two transactions: a reader polling the
store could see a `running` run without its task, and a crash between the two left a run that
exported to a bundle that cannot be imported ("messages: List should have at least 1 item").

Process liveness for interrupted runs and sweep owners (store/_process.py), through psutil: a
live writer, a dead pid, a zombie, a reused pid (another start time), and rows written before
psutil (Linux clock ticks) all read as they should.

Private imports (`exports._bundles`, `store._process`, `store._schema`): units or test hooks with
no public name; everything public comes from the public API.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from sqlalchemy import create_engine, event, func, inspect, select, text
from sqlalchemy.engine import make_url

from groupchat_core import GroupChat, import_bundle
from groupchat_core.exports._bundles import export_bundle
from groupchat_core.store import SCHEMA_VERSION, RunStore, _process
from groupchat_core.store._process import is_alive, this_writer, writer_alive
from groupchat_core.store._schema import messages, run_agents, runs, schema_version
from groupchat_core.testing import FakeOpenAIServer, tool_call
from tests.helpers import ROOT
from tests.helpers.chats import scripted_chat
from tests.helpers.stores import release_store_engines
from tests.helpers.waits import eventually

pytestmark = pytest.mark.usefixtures("fresh_engines")


def _child_env(url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(GROUPCHAT_DB=url, GROUPCHAT_BLOCK_REMOTE_CALLS="1", PYTHONPATH=str(ROOT),
               OPENAI_API_KEY="sk-local-fake-server", LITELLM_LOCAL_MODEL_COST_MAP="True")
    return env


def _completed_turns(url: str) -> int:
    """Turns recorded so far, read without creating or locking anything the child needs."""
    if url.startswith("sqlite"):
        path = make_url(url).database
        try:
            with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5) as conn:
                return conn.execute("SELECT count(*) FROM turns").fetchone()[0]
        except sqlite3.OperationalError:
            return 0  # not created yet
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            if not inspect(conn).has_table("turns"):
                return 0
            return conn.execute(text("SELECT count(*) FROM turns")).scalar()
    finally:
        engine.dispose()


def _wait_for_turns(child: subprocess.Popen, url: str, turns: int) -> None:
    def exited() -> str | None:
        if child.poll() is None:
            return None
        return f"the chat exited early: {child.stderr.read().decode()[-2000:]}"

    eventually(lambda: _completed_turns(url) >= turns, f"{turns} recorded turns", alive=exited)


def test_sigkill_mid_run_keeps_every_completed_turn_and_reads_as_interrupted(store_url, tmp_path):
    with FakeOpenAIServer() as server:
        # Both always bid 0.9; the recency penalty makes Alice and Bob alternate forever.
        server.set_responder(None, lambda body: tool_call(
            0.9, f"{body['model']} has more to say", latency=0.3))
        spec = {"schema_version": 1, "name": "crash", "max_loops": 1000, "agents": [
            {"agent_name": name, "model_name": f"openai/{name.lower()}",
             "api_base": server.base_url, "num_retries": 0} for name in ("Alice", "Bob")]}
        spec_path = tmp_path / "spec.json"
        spec_path.write_text(json.dumps(spec))
        child = subprocess.Popen(
            [sys.executable, "-m", "groupchat_core", "run", str(spec_path), "--task",
             "Keep talking."], env=_child_env(store_url), cwd=tmp_path,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            _wait_for_turns(child, store_url, 2)
            child.send_signal(signal.SIGKILL)
            assert child.wait(timeout=10) == -signal.SIGKILL
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()

    store = RunStore(store_url)
    runs = store.list_runs()
    assert len(runs) == 1 and store.interrupted == runs["run_id"].tolist()
    run_id = runs["run_id"].iloc[0]
    info = store.run_info(run_id)
    assert (info["status"], info["stop_reason"], info["ended_at"]) == ("interrupted", None, None)
    record = store.load_run(run_id)
    n = len(record.turns)
    assert n >= 2 and [t.turn for t in record.turns] == list(range(1, n + 1))
    assert [(b.turn, b.agent) for b in record.bids] == [
        (t, name) for t in range(1, n + 1) for name in ("Alice", "Bob")]
    assert [t.winner for t in record.turns] == ["Alice", "Bob"] * (n // 2) + ["Alice"] * (n % 2)
    assert [m.role for m in record.messages] == ["User"] + [t.winner for t in record.turns]
    assert all(m.content.endswith("has more to say") for m in record.messages[1:])
    assert all(b.path == "tool_call" and b.error is None for b in record.bids)
    release_store_engines()
    assert RunStore(store_url).interrupted == []  # marked once, not again


WRITER = """
import pathlib, sys, time
from groupchat_core import Agent, GroupChat
from groupchat_core.store import RunStore
tag, folder = sys.argv[1], pathlib.Path(sys.argv[2])
(folder / f"ready-{tag}").touch()
while len(list(folder.glob("ready-*"))) < 2:
    time.sleep(0.005)
store = RunStore()
totals = [0, 0, 0]
for i in range(25):
    agents = [Agent(agent_name=f"{tag}{j}", system_prompt=f"You talk about topic {j}.",
                    model_name="sim/eager") for j in range(5)]
    chat = GroupChat(agents=agents, max_loops=15, seed=i)
    store.attach(chat)
    chat.run(f"{tag} task {i}: talk about topic {i % 5}")
    r = chat.last_run
    totals = [totals[0] + len(r.bids), totals[1] + len(r.turns), totals[2] + len(r.messages)]
print(*totals)
"""


def test_two_processes_create_the_schema_and_write_at_once_keeping_every_row(store_url, tmp_path):
    """Both children open the empty database at the same moment (the schema setup is
    serialised: an advisory lock on PostgreSQL, the file lock on SQLite), then record 25 runs
    each, interleaved."""
    url = store_url
    children = [subprocess.Popen(
        [sys.executable, "-c", WRITER, tag, str(tmp_path)], env=_child_env(url),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for tag in ("P", "Q")]
    outputs = [child.communicate(timeout=120) for child in children]
    for child, (_, err) in zip(children, outputs, strict=True):
        assert child.returncode == 0, err[-2000:]
    store = RunStore(url)
    with store.read("test") as conn:
        assert conn.execute(select(schema_version)).all()[0].version == SCHEMA_VERSION
    runs = store.list_runs()
    assert len(runs) == 50 and set(runs["status"]) == {"finished"}
    for tag, (out, _) in zip("PQ", outputs, strict=True):
        ids = runs.loc[runs["task"].str.startswith(f"{tag} task"), "run_id"].tolist()
        assert len(ids) == 25
        stored = [len(store.bids(ids)), len(store.turns(ids)), len(store.messages(ids))]
        assert stored == [int(x) for x in out.split()]


# --- a run starts in one transaction (SQLite and PostgreSQL) ---------------------------------

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


def duo(turns: int = 2, runs: int = 2, **kwargs) -> GroupChat:
    """Two scripted agents: `runs` chats of `turns` turns each (scripts are used up in order)."""
    return scripted_chat({"Ann": [(0.9, f"a{i}") for i in range(turns * runs)],
                          "Ben": [(0.8, f"b{i}") for i in range(turns * runs)]},
                         max_loops=turns + 1, **kwargs)


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


# --- process liveness, through psutil ---------------------------------------------------------


@pytest.fixture
def sleeper():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield child
    child.kill()
    child.wait()


def test_this_writer_records_psutils_start_time():
    me = this_writer()
    assert me.proc_start == f"{psutil.Process().create_time():.2f}"
    assert writer_alive(me.pid, me.proc_start, me)
    assert not writer_alive(me.pid, "12.00", me)  # this pid, an earlier process


def test_a_live_writer_its_reused_pid_and_a_dead_one(sleeper, monkeypatch):
    def no_proc(pid: int) -> str | None:
        raise AssertionError("psutil start times never need /proc")

    monkeypatch.setattr(_process, "_legacy_ticks", no_proc)
    start = f"{psutil.Process(sleeper.pid).create_time():.2f}"
    assert is_alive(sleeper.pid, start)
    assert is_alive(sleeper.pid, None) and is_alive(sleeper.pid, "")
    assert not is_alive(sleeper.pid, f"{float(start) - 5:.2f}")  # a pid reused since
    assert not is_alive(sleeper.pid, "not-a-start-time")
    sleeper.kill()
    sleeper.wait()
    assert not is_alive(sleeper.pid, start)


def test_a_zombie_is_not_alive():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        status = None
        for _ in range(600):  # until it has exited (not reaped: Popen.wait is not called)
            status = psutil.Process(child.pid).status()
            if status == psutil.STATUS_ZOMBIE:
                break
            time.sleep(0.05)
        assert status == psutil.STATUS_ZOMBIE
        assert not is_alive(child.pid, None)
    finally:
        child.wait()


def test_rows_written_before_psutil_still_compare(sleeper):
    ticks = Path(f"/proc/{sleeper.pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    assert is_alive(sleeper.pid, ticks)
    assert not is_alive(sleeper.pid, str(int(ticks) + 1))
