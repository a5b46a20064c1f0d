"""A dropped database connection loses nothing (PostgreSQL, the real throwaway server).

The store's backends are terminated mid-run with `pg_terminate_backend` from a separate
connection: the recorder reconnects, retries the transaction with the turns it kept in memory,
and every turn, bid and message ends up in the store, the run `finished`. When the database
stays unreachable (a TCP relay in front of the server is cut: connections reset, the port
closed), recording gives up after `RunStore.reconnect_for` seconds, says so once, and flags the
run `error` as soon as the database is back.

Private imports (`store._recorder`): units or test hooks with no public name; everything public
comes from the public API.
"""

from __future__ import annotations

import contextlib
import logging
import re
import socket
import struct
import threading
import time

import psycopg
import pytest
from sqlalchemy.engine import make_url

from groupchat_core import GroupChat, StoreError, TurnCompleted
from groupchat_core.store import RunStore
from groupchat_core.store import _recorder as recorder_module
from groupchat_core.testing import ScriptedBid
from tests.helpers.chats import scripted_chat

TERMINATE = ("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
             "WHERE datname = current_database() AND pid <> pg_backend_pid()")


def _psycopg(url: str) -> psycopg.Connection:
    parsed = make_url(url)
    return psycopg.connect(host=parsed.host, port=parsed.port, user=parsed.username,
                           dbname=parsed.database, autocommit=True, connect_timeout=10)


def terminate_backends(url: str) -> int:
    """Kill every other connection to the test's database; how many there were."""
    with _psycopg(url) as conn:
        return len(conn.execute(TERMINATE).fetchall())


def talkers(turns: int, latency: float = 0.0) -> GroupChat:
    """Three scripted agents who always have something to say: a chat of exactly `turns`."""
    script = {name: [ScriptedBid(0.5 + 0.1 * i, f"{name} on turn {t}", latency)
                     for t in range(turns)] for i, name in enumerate(("Ann", "Ben", "Cy"))}
    return scripted_chat(script, max_loops=turns + 1, threshold=0.2)


@pytest.mark.parametrize("held", [4, 0], ids=["held-connection", "pooled-per-transaction"])
def test_terminating_the_stores_backends_mid_run_loses_no_turn(pg_url, caplog, monkeypatch, held):
    """Runs keep their connection between writes (up to HELD_CONNECTIONS of them), others take
    one from the pool per transaction: both reconnect."""
    monkeypatch.setattr(recorder_module, "HELD_CONNECTIONS", held)
    store = RunStore(pg_url)
    warm = talkers(3)
    store.attach(warm)
    warm.run("Warm the pool up.")
    # The case: the store's connections are cut between two runs.
    assert terminate_backends(pg_url) >= 1

    chat = talkers(24, latency=0.01)
    recorder = store.attach(chat)
    killed: list[int] = []

    def cut(event):
        if isinstance(event, TurnCompleted) and event.turn.turn in (1, 6, 7, 15, 23):
            if event.turn.turn != 7:
                recorder.flush()  # the run's connection is held and idle: the next turn fails
            killed.append(terminate_backends(pg_url))  # turn 7: maybe mid-transaction

    cut.thread_safe = True  # in step with the recorder, on the engine's thread
    chat.add_observer(cut)
    with caplog.at_level(logging.ERROR, logger="groupchat_core"):
        chat.run("Keep talking while the database drops us.")
    record = chat.last_run
    assert len(record.turns) == 24 and sum(killed) >= 4  # connections really were cut
    assert recorder.failures == {} and "stops here" not in caplog.text
    assert store.load_run(record.run_id) == record  # every turn, bid and message, exactly
    info = store.run_info(record.run_id)
    assert (info["status"], info["turns"], info["error"]) == ("finished", 24, None)
    assert len(store.bids(record.run_id)) == 72 and len(store.messages(record.run_id)) == 25
    assert store.load_run(warm.last_run.run_id) == warm.last_run


class Relay:
    """A TCP relay on 127.0.0.1 in front of the server: `cut()` resets every connection and
    closes the port (as a server that went away), `restore()` listens on the same port again."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.port = 0
        self._sockets: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._listener: socket.socket | None = None
        self.restore()

    def restore(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(16)
        self.port = listener.getsockname()[1]
        with self._lock:
            self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
                server = socket.create_connection(self.target)
            except OSError:
                return  # cut
            with self._lock:
                if listener is not self._listener:  # cut meanwhile: this one is cut too
                    client.close()
                    server.close()
                    return
                self._sockets |= {client, server}
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        for sock in (source, sink):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        with self._lock:
            listener, self._listener = self._listener, None
            sockets, self._sockets = self._sockets, set()
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)  # wakes the accept() (Linux)
            listener.close()
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                sock.close()  # linger 0: a reset, as a dead server's host sends


class PassingClock:
    """The recorder's clock (`_recorder.time`), whose sleeps pass at once: how long it waited
    is counted, not timed."""

    def __init__(self) -> None:
        self.now, self.slept = 0.0, 0.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.slept += seconds

    def __getattr__(self, name: str) -> object:
        return getattr(time, name)


def test_an_unreachable_database_gives_up_after_the_bound_says_so_once_and_flags_the_run(
        pg_url, caplog, monkeypatch):
    clock = PassingClock()
    monkeypatch.setattr(recorder_module, "time", clock)
    target = make_url(pg_url)
    relay = Relay((target.host, target.port))
    url = target.set(port=relay.port).render_as_string(hide_password=False)
    with pytest.raises(StoreError, match="reconnect_for must be a number of seconds"):
        RunStore(url, reconnect_for=-1)
    store = RunStore(url, reconnect_for=1.0)
    chat = talkers(12, latency=0.01)
    recorder = store.attach(chat)

    def cut(event):
        if isinstance(event, TurnCompleted) and event.turn.turn == 3:
            recorder.flush()
            relay.cut()

    cut.thread_safe = True
    chat.add_observer(cut)
    with caplog.at_level(logging.ERROR, logger="groupchat_core"):
        chat.run("Talk while the database is gone.")
    record = chat.last_run
    assert len(record.turns) == 12  # watching never breaks the chat
    failure = recorder.failures[record.run_id]
    assert re.search(r"could not record turns? 4\b", failure) and "gave up after" in failure
    # Bounded by reconnect_for (1 s here), not the 30 s default: it waited 1 s in all, between
    # attempts, on the recorder's own clock
    assert clock.slept == pytest.approx(1.0) and "gave up after 1 s" in failure
    logged = [r for r in caplog.records if "stops here" in r.getMessage()]
    assert len(logged) == 1 and record.run_id in logged[0].getMessage()  # said once

    relay.restore()  # the database is back: the run is flagged, later runs are whole
    assert store.turns(record.run_id)["turn"].tolist() == [1, 2, 3]  # a consistent prefix
    chat2 = talkers(3)
    recorder2 = store.attach(chat2)
    chat2.run("And again.")
    recorder.abandon("unused")  # nothing open; writes the flag the dead database refused
    info = store.run_info(record.run_id)
    assert info["status"] == "error" and "gave up after" in info["error"]
    assert "recording failed" in info["error"]
    assert recorder2.failures == {} and store.load_run(chat2.last_run.run_id) == chat2.last_run
    relay.cut()


def test_a_commit_whose_reply_is_lost_is_not_written_twice(pg_url, monkeypatch, caplog):
    """The connection drops right after the server committed a batch: the retry finds it in the
    store and goes on, instead of failing on duplicate keys (or writing it twice)."""
    store = RunStore(pg_url)
    dialect = store.engine.dialect
    real_commit = dialect.do_commit
    commits: list[int] = []

    def commit_then_drop(dbapi_connection):
        real_commit(dbapi_connection)
        commits.append(1)
        if len(commits) == 3:  # the start, a batch of turns, then this one
            with contextlib.suppress(psycopg.Error):
                dbapi_connection.execute("SELECT pg_terminate_backend(pg_backend_pid())")
            raise psycopg.OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(dialect, "do_commit", commit_then_drop)
    chat = talkers(8, latency=0.01)
    recorder = store.attach(chat)
    def one_batch_per_turn(event):
        if isinstance(event, TurnCompleted):
            recorder.flush()

    one_batch_per_turn.thread_safe = True
    chat.add_observer(one_batch_per_turn)
    with caplog.at_level(logging.ERROR, logger="groupchat_core"):
        chat.run("Commit, then lose the reply.")
    assert len(commits) > 3 and recorder.failures == {} and "stops here" not in caplog.text
    assert store.load_run(chat.last_run.run_id) == chat.last_run
    assert store.run_info(chat.last_run.run_id)["status"] == "finished"


def test_a_run_whose_start_was_given_up_is_written_flagged_once_the_database_is_back(
        pg_url, caplog):
    target = make_url(pg_url)
    relay = Relay((target.host, target.port))
    store = RunStore(target.set(port=relay.port).render_as_string(hide_password=False),
                     reconnect_for=0.5)
    chat = talkers(3)
    recorder = store.attach(chat)
    relay.cut()  # gone before the run starts, back after it ended
    with caplog.at_level(logging.ERROR, logger="groupchat_core"):
        chat.run("Start while the database is gone.")
    run_id = chat.last_run.run_id
    assert "could not record the start of a run" in recorder.failures[run_id]
    assert caplog.text.count("stops here") == 1
    relay.restore()
    recorder.abandon("unused")  # writes what the dead database refused: the run, flagged
    info = store.run_info(run_id)
    assert (info["status"], info["turns"], info["task"]) == (
        "error", 0, "Start while the database is gone.")
    assert "gave up after" in info["error"]
    assert store.messages(run_id)["role"].tolist() == ["User"]  # a run always has its task
    relay.cut()
