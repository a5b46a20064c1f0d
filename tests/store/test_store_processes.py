"""The store across processes: a SIGKILLed chat keeps its completed turns; two writers share a
database, creating its schema at the same moment.

Both tests run real child processes (`python -m groupchat_core run ...` and a small script), the
first against the local OpenAI-compatible server over 127.0.0.1 with slow replies; each runs on
SQLite (one file) and on PostgreSQL (the `store_url` fixture, tests/conftest.py).

Private imports (`store._schema`): units or test hooks with no public name; everything public comes
from the public API.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys

import pytest
from sqlalchemy import create_engine, inspect, select, text
from sqlalchemy.engine import make_url

from groupchat_core.store import SCHEMA_VERSION, RunStore
from groupchat_core.store._schema import schema_version
from groupchat_core.testing import FakeOpenAIServer, tool_call
from tests.helpers import ROOT
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
