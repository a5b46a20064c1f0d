"""A busy chat's turns reach the store while it runs, not at its end (issue 10 §7).

The writer thread used to be starved of the GIL by a busy engine loop: in a fast offline chat it
got the GIL back only at the run's end, so the turns "written within 50 ms" were in fact all
written after the last one, and a crash lost them all. The reader here is another process, so
watching the store takes nothing from the engine's process (a reader thread would be starved
the same way).

Private imports (`store._writer_thread`): units or test hooks with no public name; everything public
comes from the public API.
"""

from __future__ import annotations

import random
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from groupchat_core import GroupChat
from groupchat_core.store._writer_thread import COALESCE_S
from tests.helpers import ROOT
from tests.helpers.chats import scripted_chat as chat_of

TURNS = 1500
MOST_LAG_S = 0.75  # COALESCE_S (0.1) + one batch's write + the reader's polling, with room

POLLER = textwrap.dedent("""
    import sqlite3, sys, time
    db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True, timeout=5)
    print("ready", flush=True)
    while True:
        count = db.execute("SELECT count(*) FROM turns").fetchone()[0]
        print(time.monotonic(), count, flush=True)
        time.sleep(0.01)
""")


def scripted_chat(agents: int, turns: int) -> GroupChat:
    rng = random.Random(7)
    script = {f"Agent{i:02d}": [(round(rng.uniform(0.3, 1.0), 4), f"Agent{i:02d}, turn {t}")
                                for t in range(turns)] for i in range(agents)}
    return chat_of(script, max_loops=turns + 1, threshold=0.5)


CHAT = textwrap.dedent("""
    import json, sys, time
    sys.path.insert(0, sys.argv[2])
    from groupchat_core.store import RunStore
    from tests.store.test_store_cadence import TURNS, scripted_chat

    store = RunStore(f"sqlite:///{sys.argv[1]}")
    warm_up = scripted_chat(16, 20)  # a first write also connects and prepares statements
    warm_up.add_observer(store.recorder(warm_up))
    warm_up.run("Warm up.")
    print("warm", len(warm_up.last_run.turns), flush=True)
    sys.stdin.readline()  # the poller is ready
    chat = scripted_chat(16, TURNS)
    done_at = []  # when each turn completed, on the engine's thread

    def note(event):
        done_at.append(time.monotonic())

    note.wants = frozenset({"turn_completed"})
    note.thread_safe = True
    chat.add_observer(store.recorder(chat))
    chat.add_observer(note)
    chat.run("Plan the offsite.")
    print(json.dumps([len(chat.last_run.turns), done_at]), flush=True)
""")


def test_a_busy_chats_turns_are_committed_as_it_runs(tmp_path: Path) -> None:
    """Polls the number of committed turns while a 1,500-turn offline chat runs: the store is
    never more than a few write intervals behind the engine (it was a whole chat behind).
    The chat runs in a fresh process of its own, so what the rest of the suite left in the
    test process's heap (and its garbage collections) does not count against the store."""
    import json

    path = tmp_path / "runs.db"
    chat = subprocess.Popen([sys.executable, "-c", CHAT, str(path), str(ROOT)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert chat.stdin is not None and chat.stdout is not None
    warm = chat.stdout.readline().split()
    assert warm[0] == "warm", warm
    before = int(warm[1])
    poller = subprocess.Popen([sys.executable, "-c", POLLER, str(path)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert poller.stdout is not None and poller.stdout.readline().strip() == "ready"
        chat.stdin.write("go\n")
        chat.stdin.flush()
        turns, done_at = json.loads(chat.stdout.readline())
        assert chat.wait(timeout=60) == 0
        time.sleep(0.3)  # a few more polls, now that every turn is committed
    finally:
        chat.kill()
        poller.kill()
        output, _ = poller.communicate()
    assert turns == TURNS == len(done_at)
    fields = [line.split() for line in output.splitlines()]  # the kill may cut the last line
    polls = [(float(f[0]), int(f[1]) - before) for f in fields if len(f) == 2]
    assert polls[-1][1] == TURNS
    # How far behind the engine the store was at each poll made during the chat: the time since
    # the oldest completed turn that was not committed yet.
    lags = []
    for at, committed in polls:
        if done_at[0] <= at <= done_at[-1] and committed < TURNS:
            completed = sum(1 for t in done_at if t <= at)
            if completed > committed:
                lags.append(at - done_at[committed])
    run_s = done_at[-1] - done_at[0]
    assert run_s > 2 * MOST_LAG_S, f"the chat took {run_s:.2f} s: too short to tell"
    assert lags, "no poll saw the store behind the engine: the polls are too coarse to tell"
    assert max(lags) <= MOST_LAG_S, (
        f"the store was {max(lags):.2f} s behind a {run_s:.2f} s chat "
        f"(writes due every {COALESCE_S} s)")
