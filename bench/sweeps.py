"""Sweep benchmarks (issue: sweeps). Measurement only: nothing here asserts on time.

    python -m bench.sweeps            # full run, about a minute on 2 cores
    python -m bench.sweeps --quick    # smoke run
    python -m bench.sweeps --write    # also rewrite the sweeps figures in BENCHMARKS.md

1. a sim sweep of a 5 x 5 x 3 grid (threshold x penalty x window) with 10 repeats: 750 chats of
   3 agents, max_loops=20, recorded into a fresh SQLite store; with the bid cache (the default)
   and without it;
2. model calls that reach the model in a 5-threshold sweep, with the cache vs a naive sweep:
   sim agents, and LLM agents at temperature 0 over HTTP (whose prompts state the threshold);
3. bids/s of a sweep against FakeOpenAIServer (its own process) at 200 ms latency with an
   in-flight limit of 16 (ideal: 16 / 0.2 s = 80 bids/s).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import tempfile
import time
from typing import Any

from bench import _harness as h

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OPENAI_API_KEY", "sk-local")  # only ever sent to 127.0.0.1 here

TASK = "Should hospitals adopt AI diagnosis? Weigh the benefits, the risks and the costs."
DEBATE = [{"agent_name": n, "system_prompt": p, "model_name": "sim/balanced"} for n, p in (
    ("Optimist", "You argue for the benefits."), ("Pessimist", "You argue for the risks."),
    ("Realist", "You seek a balanced analysis."))]
LATENCY_S, INFLIGHT = 0.2, 16


def _bid(body: dict[str, Any]) -> Any:
    """Deterministic in the request, like a model at temperature 0: a speaking bid."""
    from groupchat_core.testing import tool_call

    digest = hashlib.sha256(str(body.get("messages")).encode()).digest()
    return tool_call(round(0.35 + 0.6 * digest[0] / 255, 3), f"Point {digest[1]}.")


def deterministic_bids(server: Any) -> None:
    """The server's setup (in its own process): `_bid` answers every request."""
    server.set_responder(None, _bid)


def _spec(grid: dict[str, Any], repeats: int, *, agents: list[dict[str, Any]] | None = None,
          max_loops: int = 20, **extra: Any) -> Any:
    from groupchat_core.sweeps import parse_sweep

    return parse_sweep({"name": "bench", "base": {"max_loops": max_loops,
                                                  "agents": agents or DEBATE},
                        "grid": grid, "tasks": [TASK], "repeats": repeats, **extra})


def _sweep(spec: Any) -> tuple[Any, float, Any]:
    """Run a sweep into a fresh SQLite store; (outcome, wall seconds, store)."""
    from groupchat_core.store import RunStore
    from groupchat_core.sweeps import run_sweep

    store = RunStore(f"sqlite:///{tempfile.mkdtemp(prefix='bench-sweeps-')}/s.db")
    start = time.perf_counter()
    outcome = run_sweep(spec, store)
    return outcome, time.perf_counter() - start, store


def bench_sim_grid(repeats: int) -> list[dict[str, Any]]:
    grid = {"threshold": [0.3, 0.4, 0.5, 0.6, 0.7], "recency_penalty": [0.0, 0.1, 0.2, 0.3, 0.4],
            "recency_window": [0, 1, 2]}
    rows = []
    for cache in (None, False):
        outcome, wall, store = _sweep(_spec(grid, repeats, bid_cache=cache, concurrency=8))
        runs = store.list_runs(sweep_id=outcome.sweep_id)
        rows.append({"cache": "on (default)" if cache is None else "off", "wall": wall,
                     "chats": outcome.cells_done, "calls": outcome.calls, "bids": outcome.bids,
                     "hit_rate": outcome.hit_rate or 0.0,
                     "messages": float((runs["turns"] - (runs["stop_reason"] == "lull")).mean())})
    return rows


def bench_sharing(server: h.ServerProcess | None, repeats: int) -> list[dict[str, Any]]:
    """Calls reaching the model: cached sweep vs the same sweep without the cache."""
    thresholds = {"threshold": [0.3, 0.4, 0.5, 0.6, 0.7]}
    cases: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
        ("sim agents, 5 thresholds", thresholds, {})]
    if server is not None:
        llm = [{"agent_name": n, "model_name": "openai/local-model", "temperature": 0,
                "api_base": server.base_url} for n in ("Ann", "Bob", "Cy")]
        cases += [("LLM at temperature 0 (HTTP), 5 thresholds", thresholds,
                   {"agents": llm, "max_loops": 8}),
                  ("LLM at temperature 0 (HTTP), 5 max_loops", {"max_loops": [4, 5, 6, 7, 8]},
                   {"agents": llm})]
    rows = []
    for name, grid, base in cases:
        reps = repeats if not base else 1
        cached, _, _ = _sweep(_spec(grid, reps, concurrency=5, **base))
        naive, _, _ = _sweep(_spec(grid, reps, concurrency=5, bid_cache=False, **base))
        rows.append({"case": name, "cells": naive.cells_done, "naive": naive.calls,
                     "cached": cached.calls, "ratio": cached.calls / naive.calls})
    return rows


def bench_http(server: h.ServerProcess, cells: int, concurrency: int = 8) -> dict[str, Any]:
    from groupchat_core import set_max_inflight_calls

    set_max_inflight_calls(INFLIGHT)
    agents = [{"agent_name": f"Agent{i}", "model_name": "openai/local-model",
               "temperature": 0.7, "api_base": server.base_url} for i in range(4)]
    server.ask("latency", 0.0)
    _sweep(_spec({"threshold": [0.3]}, 2, agents=agents, max_loops=3))  # warm litellm up
    server.ask("latency", LATENCY_S)
    spec = _spec({"threshold": [0.3, 0.31, 0.32, 0.33]}, cells // 4, agents=agents,
                 max_loops=6, concurrency=concurrency)
    outcome, wall, _ = _sweep(spec)
    return {"cells": outcome.cells_done, "calls": outcome.calls, "wall": wall,
            "rate": outcome.calls / wall, "ideal": INFLIGHT / LATENCY_S}


async def _bare_caller(base_url: str, index: int, stop: float, latencies: list[float]) -> None:
    from groupchat_core import FORCED_RESPOND_CHOICE, RESPOND_TOOL, prepare_litellm

    litellm = prepare_litellm()
    while time.perf_counter() < stop:
        start = time.perf_counter()
        await litellm.acompletion(
            model="openai/local-model", api_base=base_url, api_key="sk-local",
            messages=[{"role": "user", "content": f"bid {index} {start}"}],
            tools=[RESPOND_TOOL], tool_choice=FORCED_RESPOND_CHOICE, temperature=0.7,
            num_retries=0, max_retries=0)
        latencies.append(time.perf_counter() - start)


def bench_bare(server: h.ServerProcess, seconds: float) -> dict[str, Any]:
    """The ceiling: 16 callers awaiting litellm.acompletion back to back, no engine at all."""
    from groupchat_core import background_loop

    async def run() -> dict[str, Any]:
        latencies: list[float] = []
        start = time.perf_counter()
        await asyncio.gather(*(_bare_caller(server.base_url, i, start + seconds, latencies)
                               for i in range(INFLIGHT)))
        wall = time.perf_counter() - start
        return {"calls": len(latencies), "wall": wall, "rate": len(latencies) / wall,
                "latency_ms": 1000 * sum(latencies) / len(latencies)}

    return background_loop().submit(run()).result()


def report(grid: list[dict[str, Any]], sharing: list[dict[str, Any]],
           http: dict[str, Any] | None, bare: dict[str, Any] | None, quick: bool) -> str:
    lines = ["### Sweep figures", "",
             f"Measured {time.strftime('%Y-%m-%d')}{' (quick run)' if quick else ''} on "
             f"{h.machine()}; SQLite store (WAL).",
             "", "| sim sweep, 5 × 5 × 3 grid × 10 repeats, 3 agents, max_loops=20 | chats | wall "
             "(target < 60 s) | chats/s | model calls | bids | cache hit rate | mean messages |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in grid:
        lines.append(f"| bid cache {r['cache']} | {r['chats']} | **{r['wall']:.1f} s** | "
                     f"{r['chats'] / r['wall']:.0f} | {r['calls']:,} | {r['bids']:,} | "
                     f"{r['hit_rate']:.0%} | {r['messages']:.1f} |")
    lines += ["", "| calls reaching the model | cells | naive sweep | with the cache | "
              "cached / naive (target ≤ 40 % for deterministic agents) |",
              "|---|---:|---:|---:|---:|"]
    for r in sharing:
        lines.append(f"| {r['case']} | {r['cells']} | {r['naive']:,} | {r['cached']:,} | "
                     f"**{r['ratio']:.0%}** |")
    if http is not None:
        lines += ["", "| HTTP sweep, 200 ms latency, in-flight limit 16, 4 agents × "
                  "max_loops=6, 8 cells in flight | cells | model calls | wall | bids/s "
                  "(target ≥ 64) | of ideal 80 |", "|---|---:|---:|---:|---:|---:|",
                  f"| `openai/local-model` on FakeOpenAIServer (own process) | {http['cells']} | "
                  f"{http['calls']:,} | {http['wall']:.1f} s | **{http['rate']:.1f}** | "
                  f"{http['rate'] / http['ideal']:.0%} |"]
    if bare is not None:
        lines.append(f"| ceiling: {INFLIGHT} bare `litellm.acompletion` callers back to back, "
                     f"no engine (mean call {bare['latency_ms']:.0f} ms) | — | "
                     f"{bare['calls']:,} | {bare['wall']:.1f} s | {bare['rate']:.1f} | "
                     f"{bare['rate'] / (INFLIGHT / LATENCY_S):.0%} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    args = h.options(__doc__, quick=True, write=True).parse_args(argv)
    print("[1] sim sweep, 5 x 5 x 3 grid ...", flush=True)
    grid = bench_sim_grid(2 if args.quick else 10)
    with h.ServerProcess(deterministic_bids) as server:
        server.ask("latency", 0.0)
        print("[2] calls with and without the bid cache ...", flush=True)
        sharing = bench_sharing(server, 2 if args.quick else 10)
        print("[3] HTTP sweep at 200 ms latency ...", flush=True)
        http = bench_http(server, 16 if args.quick else 48)
        bare = bench_bare(server, 3.0 if args.quick else 10.0)
    figures = report(grid, sharing, http, bare, args.quick)
    print(figures)
    if args.write:
        h.write_section("sweeps", figures)


if __name__ == "__main__":
    main()
