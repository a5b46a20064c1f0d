"""A busy chat's turns reach the store while it runs, not at its end (issue 10 §7).

The writer thread used to be starved of the GIL by a busy engine loop: in a fast offline chat it
got the GIL back only at the run's end, so the turns "written within 50 ms" were in fact all
written after the last one, and a crash lost them all. Here the chat runs in a process of its
own and the test process reads the store: once it sees a committed turn it raises a flag in a
shared page (an mmap: reading it releases no GIL, so the chat's process runs as it would
unwatched), and the chat, which looks at the flag after each turn, stops. Starved, the writer
commits nothing before the chat's last turn and the flag comes too late. No clock in the check:
how far behind the store is in seconds is a benchmark (`python -m bench.store_cadence`).

Private imports (`store._writer_thread`): units or test hooks with no public name; everything
public comes from the public API.
"""

from __future__ import annotations

import json
import mmap
import random
import sqlite3
import subprocess
import sys
import textwrap
import time
from contextlib import closing
from pathlib import Path

from groupchat_core import GroupChat
from groupchat_core.store._writer_thread import COALESCE_S
from tests.helpers import ROOT
from tests.helpers.chats import scripted_chat as chat_of

# Turns at most: a chat of a few ms a turn runs for many write intervals (COALESCE_S) before it
# gets there, so only a store that writes nothing until the end lets it finish.
MOST_TURNS = 9_999  # the engine takes max_loops up to 10,000


def scripted_chat(agents: int, turns: int) -> GroupChat:
    rng = random.Random(7)
    script = {f"Agent{i:02d}": [(round(rng.uniform(0.3, 1.0), 4), f"Agent{i:02d}, turn {t}")
                                for t in range(turns)] for i in range(agents)}
    return chat_of(script, max_loops=turns + 1, threshold=0.5)


CHAT = textwrap.dedent("""
    import json, mmap, sys
    sys.path.insert(0, sys.argv[3])
    from groupchat_core.store import RunStore
    from tests.store.test_store_cadence import MOST_TURNS, scripted_chat

    store = RunStore(f"sqlite:///{sys.argv[1]}")
    with open(sys.argv[2], "r+b") as file:
        flag = mmap.mmap(file.fileno(), 1)
    chat = scripted_chat(16, MOST_TURNS)
    seen_at = []  # the turn after which the chat saw the flag

    def watch(event):
        if not seen_at and flag[0]:
            seen_at.append(event.turn.turn)
            chat.cancel()

    watch.wants = frozenset({"turn_completed"})
    watch.thread_safe = True
    chat.add_observer(store.recorder(chat))
    chat.add_observer(watch)
    print("started", flush=True)
    chat.run("Plan the offsite.")
    record = chat.last_run
    print(json.dumps([record.stop_reason, len(record.turns), seen_at]), flush=True)
""")


def _committed(path: Path) -> int:
    try:
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)) as db:
            return int(db.execute("SELECT count(*) FROM turns").fetchone()[0])
    except sqlite3.OperationalError:  # no file or no table yet: the store is being set up
        return 0


def test_a_busy_chats_turns_are_committed_while_it_runs(tmp_path: Path) -> None:
    """The store commits turns of a busy offline chat while the chat is still running: the
    chat stops as soon as the test has seen one, long before its last turn."""
    path, flag = tmp_path / "runs.db", tmp_path / "flag"
    flag.write_bytes(b"\0")
    chat = subprocess.Popen([sys.executable, "-c", CHAT, str(path), str(flag), str(ROOT)],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert chat.stdout is not None and chat.stdout.readline().strip() == "started"
        with open(flag, "r+b") as file, mmap.mmap(file.fileno(), 1) as shared:
            while chat.poll() is None and _committed(path) == 0:
                time.sleep(0.005)  # polls the condition itself; the chat runs meanwhile
            shared[0] = 1
        stop, turns, seen_at = json.loads(chat.stdout.readline())
        assert chat.wait() == 0
    finally:
        chat.kill()
        chat.wait()
    assert seen_at, (f"the chat ran all its {turns} turns before a single one was committed "
                     f"(writes are due every {COALESCE_S} s)")
    assert stop == "cancelled" and turns == seen_at[0] < MOST_TURNS
    assert _committed(path) == turns  # what was done before the stop is all kept
