"""Store benchmarks (issue: run store). Measurement only: nothing here asserts on time.

    python -m bench.store            # full run, about a minute on 2 cores
    python -m bench.store --quick    # smoke run
    python -m bench.store --write    # also rewrite the figures between the bench.store markers

1. recording overhead: a 200-turn, 16-agent in-process chat run with and without the store
   observer (plus a no-op observer, to separate the engine's event relay from the store's work),
   side by side in one process, interleaved, many repetitions: the median of the per-repetition
   ratios and their spread (quartiles), the same for process CPU, and the CPU the store's writer
   thread spends per run; also 16 sim/ agents for as long as they keep talking; each run both
   with run() and as a job on the engine's loop;
2. reading the bids of a 1,000-turn x 16-agent run into a DataFrame (and the full RunRecord).
"""

from __future__ import annotations

import datetime as dt
import itertools
import os
import random
import tempfile
import time
from collections.abc import Callable
from typing import Any

from bench import _harness as h
from groupchat_core import Agent, GroupChat, background_loop
from groupchat_core.store import RunStore
from groupchat_core.testing import ScriptedBids

TARGETS = {"overhead": 1.15, "read_s": 0.5}
PERSONAS = ("balanced", "eager", "reserved", "contrarian", "expert")


def scripted_chat(agents: int, turns: int, seed: int) -> GroupChat:
    """In-process bidders with seeded scores and non-empty replies: a chat of exactly `turns`.

    The sim/ personas tire as a chat grows (by design they fall silent after ~40 messages), so
    a 200-turn chat needs scripted bidders; they take the same in-process path as sim/ models.
    """
    rng = random.Random(seed)
    script = {f"Agent{i:02d}": [(round(rng.uniform(0.3, 1.0), 4), f"Agent{i:02d} on turn {t}")
                                for t in range(turns)] for i in range(agents)}
    # Passed in, not shared: the fake (its script and every call it answered, 16,000 of each
    # for a 200-turn chat) goes with the chat. A process-wide one grew the heap by ~10,000
    # tracked objects per chat, and full garbage collections of 60-400 ms landed in random
    # repetitions.
    fake = ScriptedBids(script, shared=False)
    members = [Agent(agent_name=name, model_name=fake.model_name) for name in script]
    return GroupChat(agents=members, max_loops=turns + 1, threshold=0.5,
                     providers=fake.providers)


def sim_chat(agents: int, seed: int) -> GroupChat:
    members = [Agent(agent_name=f"Sim{i:02d}", model_name=f"sim/{PERSONAS[i % 5]}",
                     system_prompt=f"You care about topic {i} and the budget.")
               for i in range(agents)]
    return GroupChat(agents=members, max_loops=201, seed=seed)


def _writer_cpu(store: RunStore) -> float:
    """CPU seconds the store's writer thread has used so far (read on that thread)."""
    seen: list[float] = []
    store.queue_write(lambda: seen.append(time.thread_time()))
    store.flush()
    return seen[0]


async def _thread_time() -> float:
    return time.thread_time()


def _loop_cpu() -> float:
    """CPU seconds the engine's loop thread has used so far (read on that thread)."""
    return background_loop().submit(_thread_time()).result()


def _timed(make: Callable[[], GroupChat], mode: str, store: RunStore,
           on_loop: bool) -> tuple[float, float, float, float, int]:
    """(wall s, process CPU s, writer-thread CPU s, engine-loop-thread CPU s, turns) of one
    chat.

    on_loop: run it as a job on the engine's background loop (as the dashboard and sweeps do),
    where observers are called on the loop thread; else `run()` from this thread, which the
    engine relays every event to (except to observers that declare themselves thread-safe, as
    the store's recorder does).
    """
    chat = make()
    if mode == "noop":
        chat.add_observer(lambda event: None)
    elif mode == "store":
        chat.add_observer(store.recorder(chat))
    task = "Plan the offsite and its budget."
    writer, loop = _writer_cpu(store), _loop_cpu()
    wall, cpu = time.perf_counter(), time.process_time()
    if on_loop:
        background_loop().submit(chat.arun_record(task)).result()
    else:
        chat.run(task)  # returns once the run is in the store
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    turns = len(chat.last_run.turns) if chat.last_run else 0
    return wall, cpu, _writer_cpu(store) - writer, _loop_cpu() - loop, turns


def bench_overhead(store: RunStore, make: Callable[[int], GroupChat], reps: int,
                   on_loop: bool = False) -> dict[str, Any]:
    modes = ("none", "noop", "store")
    _timed(lambda: make(999), "store", store, on_loop)  # warm-up: statements, caches
    _timed(lambda: make(998), "none", store, on_loop)
    calls = itertools.count()  # the chats of one round share a seed: the same chat per mode
    found = h.alternate({m: lambda m=m: _timed(lambda: make(next(calls) // len(modes)), m, store,
                                               on_loop) for m in modes}, reps)

    def each(mode: str, i: int) -> list[float]:
        return [r[i] for r in found[mode]]

    def paired(i: int, x: str, y: str) -> tuple[float, float, float]:
        """Per-round ratios (the chats of a round ran one after the other): the machine's
        load drifting during the run cancels out; quartiles of those ratios."""
        return h.quartiles([p / q for p, q in zip(each(x, i), each(y, i), strict=True)])

    return {
        "turns": found["store"][-1][4], "wall": {m: h.median(each(m, 0)) for m in modes},
        "ratio": paired(0, "store", "none"), "ratio_noop": paired(0, "store", "noop"),
        "cpu_ratio": paired(1, "store", "none"), "writer_ms": h.median(each("store", 2)) * 1000,
        "loop_ms": {m: h.median(each(m, 3)) * 1000 for m in modes},
    }


def bench_read(store: RunStore, turns: int, reps: int) -> dict[str, Any]:
    chat = scripted_chat(16, turns, seed=7)
    store.attach(chat)
    chat.run("A long one.")
    run_id = chat.last_run.run_id
    return {"rows": len(store.bids(run_id)), "turns": len(chat.last_run.turns),
            "frame_s": h.median(h.repeat(lambda: store.bids(run_id), reps)),
            "record_s": h.median(h.repeat(lambda: store.load_run(run_id), reps))}


def report(rows: list[tuple[str, dict[str, Any]]], read: dict[str, Any], quick: bool,
           reps: int, load: tuple[tuple[float, ...], tuple[float, ...]]) -> str:
    def spread(r: tuple[float, float, float]) -> str:
        return f"{r[1]:.2f}× ({r[0]:.2f}–{r[2]:.2f})"

    def row(name: str, r: dict[str, Any]) -> str:
        w = r["wall"]
        return (f"| {name} | {r['turns']} | {w['none'] * 1000:.0f} | {w['noop'] * 1000:.0f} | "
                f"{w['store'] * 1000:.0f} | **{spread(r['ratio'])}** | "
                f"{spread(r['ratio_noop'])} | {spread(r['cpu_ratio'])} | "
                f"{r['writer_ms']:.1f} | "
                f"{r['loop_ms']['none']:.0f} / {r['loop_ms']['store']:.0f} |")

    ok = "meets" if read["frame_s"] < TARGETS["read_s"] else "misses"
    before, after = load
    return "\n".join([
        f"### Store figures\n\nMeasured {dt.date.today()}{' (quick run)' if quick else ''} on "
        f"{h.machine()}; SQLite file in WAL mode on local disk; {reps} repetitions per mode. "
        "Load average (1/5/15 min) "
        f"{'/'.join(f'{x:.1f}' for x in before)} before, "
        f"{'/'.join(f'{x:.1f}' for x in after)} after: other work shares these cores.\n",
        "| 16-agent chat, how it is run | turns | no observer ms | no-op observer ms | store ms | "
        f"store / none, median (quartiles) (target ≤ {TARGETS['overhead']}×) | store / no-op | "
        "CPU store / none | writer thread CPU ms per run | engine loop thread CPU ms, none / "
        "store |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *(row(name, r) for name, r in rows),
        "",
        f"Reading the bids of a {read['turns']:,}-turn × 16-agent run ({read['rows']:,} rows) "
        f"into a DataFrame: **{read['frame_s'] * 1000:.0f} ms** (target < 500 ms: {ok}); the "
        f"whole RunRecord (`load_run`, validated models): {read['record_s'] * 1000:.0f} ms.\n",
    ])


def main(argv: list[str] | None = None) -> None:
    args = h.options(__doc__, quick=True, write=True).parse_args(argv)
    reps = 3 if args.quick else 21
    before = os.getloadavg()
    with tempfile.TemporaryDirectory() as folder:
        store = RunStore(f"sqlite:///{folder}/bench.db")
        rows = []
        for name, make in (("200 turns, scripted bidders", lambda s: scripted_chat(16, 200, s)),
                           ("sim/ personas, until they tire", lambda s: sim_chat(16, s))):
            for on_loop in (False, True):
                how = "job on the engine loop" if on_loop else "`run()`"
                print(f"[1] {name}, {how}: {reps} reps per mode ...", flush=True)
                rows.append((f"{name}, {how}", bench_overhead(store, make, reps, on_loop)))
        print("[2] read a 1,000-turn x 16-agent run ...", flush=True)
        read = bench_read(store, 200 if args.quick else 1000, 3 if args.quick else 9)
    figures = report(rows, read, args.quick, reps, (before, os.getloadavg()))
    print(figures)
    if args.write:
        h.write_section("store", figures)


if __name__ == "__main__":
    main()
