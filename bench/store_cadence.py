"""How far the store lags a busy chat (issue 10 §7): a 1,500-turn offline chat of 16 scripted
agents records to SQLite in a process of its own, after a warm-up chat (the first write also
connects and prepares statements); another process counts the committed turns every 10 ms. A
poll's lag is the time since the oldest completed turn not committed yet (monotonic clocks are
one clock across processes on Linux). Reported per repetition: the chat's span, the largest
and the median lag. Writes are due every 0.1 s (the writer's coalescing interval); before the
writer's hand-over the store was 2.8 s behind a 2.9 s chat. That the store commits while a
chat runs at all is a test (tests/store/test_store_cadence.py); only the seconds are here.

    .venv/bin/python -m bench.store_cadence              # 3 repetitions
    .venv/bin/python -m bench.store_cadence --reps 5

Measurement only: nothing here asserts on time.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from bench import _harness as h

POLLER = textwrap.dedent("""
    import sqlite3, sys, time
    db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True, timeout=5)
    print("ready", flush=True)
    while True:
        count = db.execute("SELECT count(*) FROM turns").fetchone()[0]
        print(time.monotonic(), count, flush=True)
        time.sleep(0.01)
""")

CHAT = textwrap.dedent("""
    import json, random, sys, time
    from groupchat_core import Agent, GroupChat
    from groupchat_core.store import RunStore
    from groupchat_core.testing import ScriptedBids

    def scripted(turns):
        rng = random.Random(7)
        script = {f"Agent{i:02d}": [(round(rng.uniform(0.3, 1.0), 4), f"Agent{i:02d}, turn {t}")
                                    for t in range(turns)] for i in range(16)}
        fake = ScriptedBids(script, shared=False)
        agents = [Agent(agent_name=n, model_name=fake.model_name) for n in script]
        return GroupChat(agents=agents, providers=fake.providers, max_loops=turns + 1,
                         threshold=0.5)

    store = RunStore(f"sqlite:///{sys.argv[1]}")
    warm_up = scripted(20)
    warm_up.add_observer(store.recorder(warm_up))
    warm_up.run("Warm up.")
    print("warm", len(warm_up.last_run.turns), flush=True)
    sys.stdin.readline()  # the poller is ready
    chat = scripted(int(sys.argv[2]))
    done_at = []

    def note(event):
        done_at.append(time.monotonic())

    note.wants = frozenset({"turn_completed"})
    note.thread_safe = True
    chat.add_observer(store.recorder(chat))
    chat.add_observer(note)
    chat.run("Plan the offsite.")
    print(json.dumps(done_at), flush=True)
""")


def one(turns: int) -> tuple[float, float, float]:
    """(the chat's span, the largest lag, the median lag) in seconds, for one chat."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "runs.db"
        chat = subprocess.Popen([sys.executable, "-c", CHAT, str(path), str(turns)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert chat.stdin is not None and chat.stdout is not None
        before = int(chat.stdout.readline().split()[1])
        poller = subprocess.Popen([sys.executable, "-c", POLLER, str(path)],
                                  stdout=subprocess.PIPE, text=True)
        try:
            assert poller.stdout is not None and poller.stdout.readline().strip() == "ready"
            chat.stdin.write("go\n")
            chat.stdin.flush()
            done_at = json.loads(chat.stdout.readline())
            chat.wait()
            time.sleep(0.3)  # a few more polls, now that every turn is committed
        finally:
            chat.kill()
            poller.kill()
            output, _ = poller.communicate()
    fields = [line.split() for line in output.splitlines()]  # the kill may cut the last line
    polls = [(float(f[0]), int(f[1]) - before) for f in fields if len(f) == 2]
    lags = []
    for at, committed in polls:
        if done_at[0] <= at <= done_at[-1] and committed < len(done_at):
            if sum(1 for t in done_at if t <= at) > committed:
                lags.append(at - done_at[committed])
    lags = lags or [0.0]
    return done_at[-1] - done_at[0], max(lags), h.median(lags)


def main(argv: list[str] | None = None) -> None:
    args = h.options(__doc__, reps=3).parse_args(argv)
    rows = [[f"{span:.2f}", f"{most:.2f}", f"{middle:.3f}"]
            for span, most, middle in (one(1500) for _ in range(args.reps))]
    print(h.machine())
    print(h.table(["chat span (s)", "largest lag (s)", "median lag (s)"], rows))


if __name__ == "__main__":
    main()
