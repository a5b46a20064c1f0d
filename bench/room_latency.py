"""Room latency (issue 24, target 3): a turn of N agents at 200 ms bids against its floor.

    python -m bench.room_latency            # N = 8, 16, 32; 9 rounds each (a few minutes)
    python -m bench.room_latency --reps 3   # 3 rounds
    python -m bench.room_latency --profile  # also: where a 32-agent turn's CPU goes (cProfile)

FakeOpenAIServer runs in a spawned process (its CPU is not the client's), every bid answers
after 200 ms with a silent bid, so each chat is exactly one turn.
Per round and N, in rotating order: the engine's turn on the direct OpenAI-compatible path
(providers/_direct.py), the same turn through litellm (GROUPCHAT_DIRECT_HTTP=0, the path before
issue 24), and the bare litellm gather of the same N requests (bench.engine's baseline).
Reported: medians of wall time over the 200 ms floor (turn / latency), and the process CPU per
bid of each. Measurement only: nothing here asserts on time.
"""

from __future__ import annotations

import cProfile
import os
import pstats
import time
from collections.abc import Callable
from typing import Any

from bench import _harness as h
from bench.engine import LATENCY_S, MODEL, TASK, bare, http_chat, one_lull_turn, silent_bids

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def _with_direct(flag: str, fn: Callable[[], Any]) -> Callable[[], Any]:
    def run() -> Any:
        os.environ["GROUPCHAT_DIRECT_HTTP"] = flag
        try:
            return fn()
        finally:
            os.environ.pop("GROUPCHAT_DIRECT_HTTP", None)
    return run


def room_row(server: h.ServerProcess, litellm: Any, n: int, rounds: int) -> dict[str, Any]:
    """Median (wall s, CPU s) of each variant at N agents, and whether every turn was whole."""
    chat = http_chat(server.base_url, n, MODEL)
    chat.run(TASK)  # warm-up: connections, caches
    batch = server.ask("messages", n)
    ok = True

    def engine(flag: str) -> Callable[[], Any]:
        def run() -> None:
            nonlocal ok
            _with_direct(flag, lambda: chat.run(TASK))()
            ok = ok and one_lull_turn(chat, n)
        return run

    variants: dict[str, Callable[[], Any]] = {
        "engine, direct path": engine("1"),
        "engine via litellm (before)": engine("0"),
        "bare litellm gather": lambda: bare(litellm, server.base_url, MODEL, batch),
    }
    for fn in variants.values():  # a second warm-up of each path's clients
        fn()
    seen = h.alternate({name: lambda fn=fn: h.wall_and_cpu(fn) for name, fn in variants.items()},
                       rounds)
    return {"n": n, "ok": ok, **{name: (h.median(w for w, _ in values),
                                        h.median(c for _, c in values))
                                 for name, values in seen.items()}}


def profile_turn(server: h.ServerProcess, n: int, turns: int) -> None:
    """cProfile of `turns` direct-path turns of n agents (the loop thread: where the engine's
    own CPU goes once litellm is out of the call path)."""
    from groupchat_core import background_loop

    chat = http_chat(server.base_url, n, MODEL)
    chat.run(TASK)
    profiler = cProfile.Profile()
    background_loop().submit(_enable(profiler)).result()
    start = time.process_time()
    for _ in range(turns):
        chat.run(TASK)
    cpu = time.process_time() - start
    background_loop().submit(_disable(profiler)).result()
    print(f"\n## where a {n}-agent direct turn's CPU goes ({turns} turns, "
          f"{cpu * 1000 / (turns * n):.2f} ms CPU per bid while profiled; loop thread)")
    stats = pstats.Stats(profiler)
    stats.sort_stats("tottime").print_stats(18)


async def _enable(profiler: cProfile.Profile) -> None:
    profiler.enable()


async def _disable(profiler: cProfile.Profile) -> None:
    profiler.disable()


def main() -> None:
    parser = h.options(__doc__, reps=9)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    rounds = args.reps
    from groupchat_core import prepare_litellm, set_max_inflight_calls

    litellm = prepare_litellm()
    set_max_inflight_calls(64)
    with h.ServerProcess(silent_bids) as server:
        server.ask("latency", LATENCY_S)
        rows = [room_row(server, litellm, n, rounds) for n in (8, 16, 32)]
        if args.profile:
            profile_turn(server, 32, 10)
    print(f"## machine: {h.machine()}")
    floor = LATENCY_S
    print(f"\nturn / latency at {int(floor * 1000)} ms bids, medians of {rounds} rounds "
          "(rotating order); CPU per bid in ms")
    print("| agents | engine, direct path | engine via litellm (before) | bare litellm gather "
          "| CPU/bid direct | CPU/bid via litellm | CPU/bid bare | all turns whole |")
    print("|---:|---:|---:|---:|---:|---:|---:|---|")
    for row in rows:
        d, b, g = (row["engine, direct path"], row["engine via litellm (before)"],
                   row["bare litellm gather"])
        n = row["n"]
        print(f"| {n} | {d[0] / floor:.2f}x | {b[0] / floor:.2f}x | {g[0] / floor:.2f}x | "
              f"{d[1] * 1000 / n:.2f} | {b[1] * 1000 / n:.2f} | {g[1] * 1000 / n:.2f} | "
              f"{row['ok']} |")


if __name__ == "__main__":
    main()
