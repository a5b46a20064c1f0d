"""The run store: runs recorded as they happen, read back exactly, filtered, secret-free.

Tests taking `store` (or `store_url`) run on SQLite and on PostgreSQL (tests/conftest.py); the
few that test what only SQLite has say so in their names and take `sqlite_store`.

Private imports (`store._process`, `store._schema`): units or test hooks with no public name;
everything public comes from the public API.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from sqlalchemy import insert, select, text

from groupchat_core import Agent, Bid, GroupChat, Message, StoreError, Turn, TurnCompleted
from groupchat_core.store import RunStore, dispose_engines
from groupchat_core.store._process import this_writer
from groupchat_core.store._schema import METADATA, messages, runs
from groupchat_core.testing import ScriptedBid, ScriptedBids
from tests.helpers.chats import scripted_chat as make_chat
from tests.helpers.stores import release_store_engines

KEY = "sk-store-test-never-stored-0123456789"


pytestmark = pytest.mark.usefixtures("fresh_engines")


def three_turns(**kwargs) -> GroupChat:
    return make_chat({
        "Alice": [(0.9, "A1"), (0.9, "A2"), (0.2, "")],
        "Bob": [(0.7, "B1"), (0.7, "B2"), (0.4, "B3")],
        "Cara": [(0.1, ""), (0.65, "C1"), (0.3, "C2")],
    }, max_loops=10, **kwargs)


def sim_chat(**kwargs) -> GroupChat:
    personas = ("eager", "balanced", "contrarian")
    agents = [Agent(agent_name=f"Sim{p.title()}", model_name=f"sim/{p}",
                    system_prompt=f"You care about {p} budgets.") for p in personas]
    return GroupChat(agents=agents, **{"max_loops": 8, "seed": 7, **kwargs})


def test_values_bound_the_fast_way_read_back_exactly(sqlite_store):
    """On SQLite the recorder binds True/False as 1/0 and None as NaN (which SQLite stores as
    NULL), and a float equal to 1 or 0 goes in as an int (1.0 == True): every value must read
    back as it was, and be stored with the type it had before (REAL, 0/1, NULL)."""
    fake = ScriptedBids({"Alice": [(1.0, "one"), (0.0, "")], "Bob": [(0.0, ""), (1.0, "two")]})
    chat = GroupChat(agents=[Agent(agent_name=n, model_name=fake.model_name)
                             for n in ("Alice", "Bob")], max_loops=3, threshold=0.5)
    sqlite_store.attach(chat)
    chat.run("Go.")
    record = chat.last_run
    assert [b.score for b in record.bids] == [1.0, 0.0, 0.0, 1.0]
    assert sqlite_store.load_run(record.run_id) == record
    with sqlite_store.engine.connect() as conn:
        stored = conn.execute(text(
            "SELECT typeof(score), typeof(adjusted), typeof(latency_ms), typeof(winner), "
            "winner, typeof(cost_usd), typeof(error), typeof(deployment) FROM bids "
            "WHERE run_id = :run ORDER BY turn, position"), {"run": record.run_id}).all()
        turn_types = conn.execute(text(
            "SELECT typeof(lull), typeof(margin) FROM turns WHERE run_id = :run"),
            {"run": record.run_id}).all()
    assert [tuple(row) for row in stored] == [
        ("real", "real", "real", "integer", 1, "null", "null", "null"),
        ("real", "real", "real", "integer", 0, "null", "null", "null"),
        ("real", "real", "real", "integer", 0, "null", "null", "null"),
        ("real", "real", "real", "integer", 1, "null", "null", "null")]
    assert [tuple(row) for row in turn_types] == [
        ("integer", "null" if t.margin is None else "real") for t in record.turns]


def test_the_parametrised_store_fixture_runs_on_each_backend(store, backend):
    """The fixture every backend-agnostic test uses really gives a store on its backend."""
    assert store.engine.dialect.name == backend


def test_recorded_runs_read_back_exactly_in_the_order_asked_and_delete(store):
    ids = []
    for i in range(3):
        chat = three_turns(name="debate", threshold=0.5)
        store.attach(chat)
        chat.run(f"Debate the plan {i}.")
        record = chat.last_run
        ids.append(record.run_id)
        # fully recorded when run returns, each time
        assert store.load_run(record.run_id) == record
        info = store.run_info(record.run_id)
        assert (info["status"], info["stop_reason"], info["turns"]) == ("finished", "lull", 3)
    assert info["spec"]["agents"][0]["agent_name"] == "Alice"
    assert info["pid"] == os.getpid()
    frame = store.bids(record.run_id)
    assert list(frame.columns) == ["run_id", *Bid.model_fields]
    pd.testing.assert_frame_equal(frame.drop(columns="run_id"), record.bids_frame())
    pd.testing.assert_frame_equal(store.turns(record.run_id).drop(columns="run_id"),
                                  record.turns_frame())
    posted = store.messages(record.run_id)
    assert list(posted.columns) == ["run_id", "position", "turn", *Message.model_fields]
    assert posted[["position", "turn", "role"]].values.tolist() == [
        [0, 0, "User"], [1, 1, "Alice"], [2, 2, "Bob"]]
    frame = store.bids([ids[2], ids[0]])
    assert frame["run_id"].drop_duplicates().tolist() == [ids[2], ids[0]]
    assert frame.groupby("run_id")["turn"].apply(list).loc[ids[0]] == [1, 1, 1, 2, 2, 2, 3, 3, 3]
    assert len(store.bids()) == 27
    empty = store.turns([])
    assert empty.empty and list(empty.columns) == ["run_id", *Turn.model_fields]
    assert store.resolve(ids[0][:6]) == ids[0]
    for unknown in ("zz%", ""):  # no LIKE wildcard, no empty prefix
        with pytest.raises(StoreError, match="no run"):
            store.resolve(unknown)
    assert store.delete_run(ids[0]) is True
    assert store.bids(ids[0]).empty and store.messages(ids[0]).empty
    assert store.delete_run(ids[0]) is False
    with pytest.raises(StoreError, match="no run"):
        store.load_run(ids[0])


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


def test_each_turn_is_written_on_its_own_as_soon_as_it_completes(store):
    chat = three_turns()
    recorder = store.attach(chat)
    seen: list[tuple[int, int, int, str]] = []

    def check(event):
        if isinstance(event, TurnCompleted):
            recorder.flush()  # the writer thread has caught up with this event
            seen.append((event.turn.turn, len(store.bids(event.run_id)),
                         len(store.turns(event.run_id)),
                         store.run_info(event.run_id)["status"]))

    check.thread_safe = True  # called on the engine's thread, as the recorder is: in step
    chat.add_observer(check)
    chat.run("Debate the plan.")
    assert seen == [(1, 3, 1, "running"), (2, 6, 2, "running"), (3, 9, 3, "running")]


def test_a_run_whose_bids_all_fail_is_recorded_as_error(store):
    chat = make_chat({"A": [RuntimeError("boom")], "B": [RuntimeError("bang")]})
    store.attach(chat)
    chat.run("task")
    info = store.run_info(chat.last_run.run_id)
    assert (info["status"], info["stop_reason"]) == ("error", "error")
    assert "boom" in info["error"] and "bang" in info["error"]
    assert store.bids(chat.last_run.run_id)["error"].str.contains("RuntimeError").all()


def test_a_cancelled_run_keeps_what_was_posted(store):
    slow = [ScriptedBid(0.9, f"m{i}", latency=0.05) for i in range(6)]
    chat = make_chat({"A": slow, "B": [ScriptedBid(0.1, "", latency=0.05)] * 6})
    store.attach(chat)

    def cancel_after_first_turn(event):
        if isinstance(event, TurnCompleted) and event.turn.turn == 1:
            chat.cancel()

    # On the engine's loop: relayed to this thread, a busy machine could let turn 2 finish first.
    cancel_after_first_turn.thread_safe = True
    chat.add_observer(cancel_after_first_turn)
    chat.run("task")
    run_id = chat.last_run.run_id
    assert store.run_info(run_id)["status"] == "cancelled"
    assert store.load_run(run_id) == chat.last_run
    assert store.turns(run_id)["turn"].tolist() == [1]


def test_abandon_closes_runs_the_engine_never_finished(store):
    chat = three_turns()
    recorder = store.recorder(chat)
    from groupchat_core import RunStarted

    recorder(RunStarted(run_id="r1", task="t", agents=["Alice", "Bob", "Cara"],
                        config=chat.to_dict()))
    recorder.abandon("KeyError: boom")
    info = store.run_info("r1")
    assert (info["status"], info["error"]) == ("error", "KeyError: boom")


def test_run_batch_records_every_run(store):
    chat = make_chat({"A": [(0.1, "")] * 3, "B": [(0.1, "")] * 3})
    recorder = store.attach(chat)
    chat.run_batch(["one", "two", "three"])
    assert len(recorder.run_ids) == 3
    assert sorted(store.list_runs()["task"]) == ["one", "three", "two"]


def _insert_running(store: RunStore, run_id: str, pid: int, proc_start: str,
                    hostname: str | None = None, **columns: str) -> None:
    with store.write("test") as conn:
        conn.execute(insert(runs).values(
            run_id=run_id, name="n", task="t", status="running", spec_json="{}", agents="",
            threshold=0.5, recency_penalty=0.3, recency_window=1, max_loops=5,
            started_at="2025-01-01T00:00:00+00:00", pid=pid, proc_start=proc_start,
            hostname=hostname or this_writer().hostname, **columns))


def _status(store: RunStore, run_id: str) -> str:
    with store.read("test") as conn:
        return conn.execute(select(runs.c.status).where(runs.c.run_id == run_id)).scalar()


def test_runs_of_dead_writers_on_this_host_become_interrupted(store):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        start = Path(f"/proc/{alive.pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
        me = this_writer()
        _insert_running(store, "dead", dead.pid, "1")
        _insert_running(store, "alive", alive.pid, start)
        _insert_running(store, "reused-pid", alive.pid, "not-its-start-time")
        _insert_running(store, "mine", me.pid, me.proc_start)
        _insert_running(store, "other-host", dead.pid, "1", hostname="elsewhere.example")
        reopened = RunStore()
        assert sorted(reopened.interrupted) == ["dead", "reused-pid"]
        assert [_status(store, r) for r in ("dead", "alive", "reused-pid", "mine",
                                            "other-host")] == [
            "interrupted", "running", "interrupted", "running", "running"]
    finally:
        alive.kill()
        alive.wait()


def test_a_dead_workers_run_is_flagged_with_its_reason_even_once_marked_interrupted(store):
    """A Ray worker killed mid-cell: the next store opened on the host (the retry's worker)
    may mark its run `interrupted` before the driver flags it; the driver's reason still wins
    (it failed in a fresh clone as 'interrupted' where the sweep test expects 'error')."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    sweep_id = store.create_sweep("s", {"grid": {}})
    host = this_writer().hostname
    _insert_running(store, "killed", dead.pid, "1", sweep_id=sweep_id, cell="c1")
    _insert_running(store, "other-cell", dead.pid, "1", sweep_id=sweep_id, cell="c2")
    assert "killed" in RunStore().interrupted  # the startup check got there first
    reason = "its Ray worker w1 died mid-cell (ActorDiedError); the cell was run again"
    assert store.flag_writer_runs(sweep_id, "c1", pid=dead.pid, hostname=host,
                                  status="error", reason=reason) == 1
    assert [_status(store, r) for r in ("killed", "other-cell")] == ["error", "interrupted"]
    assert store.run_info("killed")["error"] == reason


def test_list_runs_filters_orders_and_counts_sim_runs(store):
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
    assert store.list_runs(status="interrupted").empty
    assert store.list_runs(since="2999-01-01T00:00:00").empty
    assert store.list_runs(agent="SimE").empty  # exact names, not substrings
    assert store.list_runs(agent="simeager").empty  # exact and case-sensitive
    middle = store.run_info(ids[1])["started_at"]
    assert store.list_runs(since=middle)["name"].tolist() == ["gamma", "beta"]
    store.set_tags(ids[0], ["a_b", "x%"])
    store.set_notes(ids[0], "ünïcödé notes ✓")
    assert store.list_runs(tag="a_b")["run_id"].tolist() == [ids[0]]
    assert store.list_runs(tag="aXb").empty and store.list_runs(tag="x").empty
    assert store.list_runs(tag="x%")["run_id"].tolist() == [ids[0]]
    assert store.list_runs(tag="%").empty  # no LIKE wildcard
    assert store.run_info(ids[0])["notes"] == "ünïcödé notes ✓"
    sweep = store.create_sweep("s", {"threshold": [0.5]})
    chat = sim_chat(name="swept")
    store.attach(chat, sweep_id=sweep, cell="threshold=0.5")
    chat.run("four")
    assert store.list_runs(sweep_id=sweep)["cell"].tolist() == ["threshold=0.5"]
    assert store.resolve(ids[2][:8]) == ids[2]
    with pytest.raises(StoreError, match="status must be one of"):
        store.list_runs(status="done")
    with pytest.raises(StoreError, match="ISO-8601"):
        store.list_runs(since="last tuesday")


def _everything_stored(store: RunStore, backend: str, tmp_path: Path) -> str:
    """Every byte the database holds, as text: the SQLite files, or every PostgreSQL row."""
    if backend == "sqlite":
        dispose_engines()  # checkpoint and close, so every byte is in the files
        raw = b"".join(p.read_bytes() for p in tmp_path.glob("groupchat.db*"))
        return raw.decode("latin-1")
    with store.read("test") as conn:
        return "".join(
            str(conn.exec_driver_sql(f'SELECT t::text FROM "{name}" t').scalars().all())
            for name in METADATA.tables)


def test_no_key_ever_reaches_the_database(store, store_url, backend, tmp_path):
    agents = [Agent(agent_name=n, model_name="sim/eager", api_key=KEY) for n in "AB"]
    chat = GroupChat(agents=agents, max_loops=3)
    store.attach(chat)
    chat.run("task")
    store.save_agent(agents[0])
    store.save_preset("room", chat.to_spec())
    store.flush()
    dump = _everything_stored(store, backend, tmp_path)
    assert chat.last_run.run_id in dump and "sim/eager" in dump  # the scan does see the data
    assert "sk-store-test" not in dump and "api_key" not in dump
    assert RunStore(store_url).get_agent("A").api_key is None


def test_saved_agents_and_presets(store):
    a = Agent(agent_name="Critic", system_prompt="Find flaws.", model_name="sim/contrarian")
    b = Agent(agent_name="Fan", model_name="sim/eager", temperature=0.9)
    store.save_agents([a, b])
    store.save_agent(a.model_copy(update={"system_prompt": "Find more flaws."}))
    assert [x.agent_name for x in store.list_agents()] == ["Critic", "Fan"]
    assert store.get_agent("Critic").system_prompt == "Find more flaws."
    assert store.get_agent("Fan") == b
    assert store.delete_agent("Fan") and not store.delete_agent("Fan")
    with pytest.raises(StoreError, match="no saved agent"):
        store.get_agent("Fan")
    store.save_preset("pair", [a, b])
    spec = GroupChat(agents=[a, b], threshold=0.35).to_spec()
    store.save_preset("tuned", spec)
    assert store.list_presets() == ["pair", "tuned"]
    assert store.load_preset("tuned") == spec
    assert GroupChat.from_spec(store.load_preset("pair")).threshold == 0.5
    with pytest.raises(StoreError, match="no preset"):
        store.load_preset("nope")
    with pytest.raises(StoreError, match="name must be"):
        store.save_preset(" ", [a, b])


def _names(store: RunStore) -> list[str]:
    return [a.agent_name for a in store.list_agents()]


def _agent(name: str, role: str = "") -> Agent:
    return Agent(agent_name=name, system_prompt=role, model_name="sim/eager")


def test_new_agents_go_last_and_the_order_survives_reopening(store, store_url):
    """The saved order of agents (agents.position) survives a reload of the dashboard."""
    for name in ("Zed", "Amy", "Mo"):
        store.save_agent(_agent(name))
    assert _names(store) == ["Zed", "Amy", "Mo"]  # the order they were made, not by name
    store.set_agent_order(["Mo", "Zed"])  # the rest keep their order, after these
    store.save_agent(_agent("Zed", "edited"))  # replacing keeps the place
    release_store_engines()
    assert _names(RunStore(store_url)) == ["Mo", "Zed", "Amy"]


def test_a_rename_keeps_the_place_and_refuses_a_taken_name(store, store_url):
    store.save_agents([_agent("A"), _agent("B"), _agent("C")])
    store.rename_agent("B", _agent("Bee", "new role"))
    assert _names(store) == ["A", "Bee", "C"]
    assert store.get_agent("Bee").system_prompt == "new role"
    with pytest.raises(StoreError, match="'C' already exists"):
        store.rename_agent("A", _agent("C"))
    with pytest.raises(StoreError, match="no saved agent named 'gone'"):
        store.rename_agent("gone", _agent("D"))
    release_store_engines()
    assert _names(RunStore(store_url)) == ["A", "Bee", "C"]


def test_sweeps_group_runs(store):
    sweep_id = store.create_sweep("thresholds", {"threshold": [0.3, 0.5]})
    for cell in ("threshold=0.3", "threshold=0.5"):
        chat = three_turns()
        store.attach(chat, sweep_id=sweep_id, cell=cell)
        chat.run("go")
    store.finish_sweep(sweep_id)
    sweeps = store.list_sweeps()
    assert sweeps[["name", "status", "runs"]].values.tolist() == [["thresholds", "finished", 2]]
    assert sorted(store.list_runs(sweep_id=sweep_id)["cell"]) == [
        "threshold=0.3", "threshold=0.5"]


def test_sqlite_connections_use_wal_foreign_keys_and_a_busy_timeout(sqlite_store):
    with sqlite_store.read("test") as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 10000
        assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 1  # NORMAL


def test_a_failed_write_changes_nothing(store):
    chat = three_turns()
    store.attach(chat)
    chat.run("go")
    run_id = chat.last_run.run_id
    with pytest.raises(StoreError, match="could not test"):
        with store.write("test") as conn:
            conn.execute(messages.delete().where(messages.c.run_id == run_id))
            conn.execute(text("INSERT INTO no_such_table VALUES (1)"))
    assert len(store.messages(run_id)) == 3


def test_the_sqlite_folder_is_created_and_memory_urls_work(tmp_path):
    RunStore(f"sqlite:///{tmp_path}/deep/er/lab.db")
    assert (tmp_path / "deep" / "er" / "lab.db").exists()
    memory = RunStore("sqlite://")
    chat = three_turns()
    memory.attach(chat)
    chat.run("go")
    assert memory.load_run(chat.last_run.run_id) == chat.last_run


@pytest.mark.parametrize(("url", "message"), [
    ("not a url", "not a valid SQLAlchemy URL"),
    ("nosuchdb://x/y", "no SQLAlchemy dialect"),
    ("postgresql+pg8000://user:hunter2@127.0.0.1:1/lab", "driver .*not installed"),
    ("postgresql+psycopg://user:hunter2@127.0.0.1:1/lab", "could not open the store in .*1/lab"),
])
def test_bad_urls_are_one_clear_error_without_the_password(url, message):
    with pytest.raises(StoreError, match=message) as caught:
        RunStore(url)
    assert "hunter2" not in str(caught.value)


def _disk_error(backend: str) -> tuple[Exception, str]:
    """The driver's own error for a full or broken disk, and a phrase of its message."""
    if backend == "postgresql":
        import psycopg

        return psycopg.errors.DiskFull("could not extend file: No space left on device"), \
            "No space left"
    import sqlite3

    return sqlite3.OperationalError("disk I/O error"), "disk I/O error"


def test_a_turn_that_cannot_be_written_stops_recording_and_flags_the_run(
        store, backend, monkeypatch, caplog):
    error, phrase = _disk_error(backend)
    slow = 0.3  # turns further apart than the 0.1 s write cadence: each is written alone
    chat = make_chat({
        "Alice": [ScriptedBid(0.9, "A1", slow), ScriptedBid(0.9, "A2", slow),
                  ScriptedBid(0.2, "", slow)],
        "Bob": [ScriptedBid(0.7, "B1", slow), ScriptedBid(0.7, "B2", slow),
                ScriptedBid(0.4, "B3", slow)],
    }, max_loops=10)
    recorder = store.attach(chat)
    real_write = store.turn_writer.write_turns

    def failing_on_turn_2(conn, run_id, items):
        if any(item.number == 2 for item in items):
            raise error
        real_write(conn, run_id, items)

    monkeypatch.setattr(store.turn_writer, "write_turns", failing_on_turn_2)
    chat.run("go")
    run_id = chat.last_run.run_id
    assert len(chat.last_run.turns) == 3  # watching never breaks the chat
    assert store.turns(run_id)["turn"].tolist() == [1]  # a consistent prefix: no gap at 2
    info = store.run_info(run_id)
    assert info["status"] == "error" and info["stop_reason"] == "lull"
    assert "recording failed" in info["error"] and "record turn" in info["error"]
    assert phrase in recorder.failures[run_id]
    assert caplog.text.count("stops here") == 1
    assert re.search(r"could not record turns? 2\b", caplog.text)
