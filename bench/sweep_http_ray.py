"""An HTTP sweep through the CLI, local executor vs Ray (issue 24, target 4). Measurement only.

    python -m bench.sweep_http_ray [--cells 100] [--workers 1 2 4] [--cpus-per-cell 0.25]

A scripted OpenAI-compatible server in a process of its own on loopback answers every bid after
200 ms (a tool call, score 0.6). The sweep: 4 agents on it, max_loops 5 (so 20 bids a cell),
`--cells` cells (100: 2,000 calls), bid cache off, into a temporary SQLite file. Each figure
is one `groupchat-lab sweep run SPEC --json --quiet` in a fresh process, as a user runs it:
- local executor at concurrency 2, 4, 8 and 16;
- Ray on a cluster this script starts first (a head with 0 CPUs and N worker nodes of one CPU
  each; its start-up timed separately), `--ray-address` to it, cells reserving
  `--cpus-per-cell`, concurrency N / cpus-per-cell; and at 1 CPU a cell;
- Ray as the CLI starts it by itself (no `--ray-address`: a local cluster of this machine's
  CPUs, its start-up inside the figure).
bids/s = the sweep's calls / the CLI process's wall time (start-up, imports and the workers'
first imports included); the sweep's own `elapsed_s` beside it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import _harness as h
from bench.sweep_ray import local_cluster

ROOT = h.ROOT


def slow_points(server: Any) -> None:
    """The server's setup (in its own process): every bid a point, after 200 ms."""
    from groupchat_core.testing import tool_call

    server.set_responder(None, lambda body: tool_call(0.6, "A point worth making.", latency=0.2))


def spec(base_url: str, cells: int) -> dict[str, Any]:
    agents = [{"agent_name": n, "system_prompt": "Speak.", "model_name": "openai/fake",
               "api_base": base_url} for n in ("Ann", "Bob", "Cy", "Dee")]
    return {"name": "http", "base": {"max_loops": 5, "agents": agents},
            "grid": {"threshold": [0.5, 0.55]}, "tasks": ["Go?"], "repeats": cells // 2,
            "concurrency": 2, "bid_cache": False}


def cli(spec_path: Path, db: str, env: dict[str, str], *extra: str) -> dict[str, Any]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "groupchat_core", "sweep", "run",
                           str(spec_path), "--json", "--quiet", *extra],
                          env={**env, "GROUPCHAT_DB": db}, cwd=ROOT, capture_output=True,
                          text=True, timeout=1800, check=False)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"sweep failed ({done.returncode}): {done.stderr[-2000:]}")
    out = json.loads(done.stdout)
    return {"wall": wall, "elapsed": out["elapsed_s"], "calls": out["calls"],
            "cells": out["cells_done"], "bids/s": out["calls"] / wall}


def main(argv: list[str] | None = None) -> None:
    parser = h.options(__doc__)
    parser.add_argument("--cells", type=int, default=100)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--cpus-per-cell", type=float, default=0.25)
    parser.add_argument("--local", type=int, nargs="+", default=[2, 4, 8, 16])
    parser.add_argument("--cluster-cpus", type=float, nargs="+", default=[1.0, 0.25],
                        help="CPUs a cell on the started clusters")
    parser.add_argument("--no-cli-default", action="store_true",
                        help="skip the CLI's own cluster at 1 CPU a cell")
    args = parser.parse_args(argv)
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    env = {**os.environ, "OPENAI_API_KEY": "sk-bench-fake", "PYTHONPATH": str(ROOT),
           "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    rows: list[tuple[str, dict[str, Any]]] = []
    with h.ServerProcess(slow_points) as server:
        base = server.base_url
        env["GROUPCHAT_TRUSTED_API_BASES"] = base
        folder = Path(tempfile.mkdtemp(prefix="bench-http-ray-"))
        path = folder / "sweep.json"
        path.write_text(json.dumps(spec(base, args.cells)))
        n = 0

        def db() -> str:
            nonlocal n
            n += 1
            return f"sqlite:///{folder}/s{n}.db"

        for c in args.local:
            rows.append((f"local, concurrency {c}", cli(path, db(), env, "--concurrency", str(c))))
            print(rows[-1], flush=True)
        if not args.no_cli_default:
            rows.append(("ray, local cluster started by the CLI (2 CPUs), 1 CPU a cell, "
                         "concurrency 2", cli(path, db(), env, "--executor", "ray")))
            print(rows[-1], flush=True)
        wide = max(1, round(2 / args.cpus_per_cell))
        rows.append((f"ray, local cluster started by the CLI (2 CPUs), {args.cpus_per_cell:g} "
                     f"CPU a cell, concurrency {wide}",
                     cli(path, db(), env, "--executor", "ray", "--cpus-per-cell",
                         str(args.cpus_per_cell), "--concurrency", str(wide))))
        print(rows[-1], flush=True)
        for workers in args.workers:
            started = time.perf_counter()
            with local_cluster(workers) as cluster:
                startup = time.perf_counter() - started
                for cpus in args.cluster_cpus:
                    c = max(1, round(workers / cpus))
                    result = cli(path, db(), env, "--executor", "ray", "--ray-address",
                                 cluster.address, "--cpus-per-cell", str(cpus),
                                 "--concurrency", str(c))
                    result["startup"] = startup
                    rows.append((f"ray, {workers} worker node(s) of 1 CPU, {cpus:g} CPU a "
                                 f"cell, concurrency {c}", result))
                    print(rows[-1], flush=True)
    best_local = max(r["bids/s"] for name, r in rows if name.startswith("local"))
    print(f"\n{args.cells} cells, {rows[0][1]['calls']} calls; {h.machine()}")
    print(h.table(["executor", "calls", "CLI wall (s)", "sweep elapsed (s)", "bids/s (CLI wall)",
                   "× best local", "cluster start-up (s)"],
                  [[name, r["calls"], f"{r['wall']:.1f}", f"{r['elapsed']:.1f}",
                    f"{r['bids/s']:.1f}", f"{r['bids/s'] / best_local:.2f}",
                    f"{r.get('startup', float('nan')):.1f}"] for name, r in rows]))


if __name__ == "__main__":
    main()
