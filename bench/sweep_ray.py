"""Cells/s of one sim sweep: the local executor vs the Ray executor on a local cluster (a head
with no CPUs and N worker nodes of one CPU each), into SQLite (the driver records).

    python -m bench.sweep_ray [--workers 2] [--cells 40] [--latency 0.0]
        [--cpus-per-cell 0.25]   # also Ray at a fraction of a CPU per cell (I/O-bound cells)

Prints one line per executor; the figures go to BENCHMARKS.md ("Sweeps on Ray").
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from bench import _harness as h

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # one machine: loopback only
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def sweep_spec(cells: int, latency: float, concurrency: int):  # type: ignore[no-untyped-def]
    from groupchat_core.sweeps import parse_sweep

    agents = [{"agent_name": n, "system_prompt": f"You are {n}.", "model_name": "sim/balanced",
               "litellm_kwargs": {"sim_latency": latency}} for n in ("Ann", "Bob", "Cy")]
    return parse_sweep({"name": "bench", "base": {"max_loops": 12, "agents": agents},
                        "grid": {"threshold": [0.2, 0.3, 0.4, 0.5]}, "tasks": ["Go?"],
                        "repeats": max(1, cells // 4), "concurrency": concurrency,
                        "bid_cache": False})


@contextmanager
def local_cluster(workers: int) -> Iterator[Any]:
    """A Ray cluster on this machine: a head with no CPUs and `workers` nodes of one CPU."""
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 0, "include_dashboard": False, "object_store_memory": 100 * 2**20})
    try:
        for _ in range(workers):
            cluster.add_node(num_cpus=1, object_store_memory=100 * 2**20)
        cluster.wait_for_nodes()
        yield cluster
    finally:
        import ray

        ray.shutdown()
        cluster.shutdown()


def main() -> None:
    parser = h.options(__doc__)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cells", type=int, default=40)
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--cpus-per-cell", type=float, default=None,
                        help="also run Ray with cells reserving this much of a CPU, at "
                             "concurrency workers / cpus (a wide local run for comparison)")
    args = parser.parse_args()
    import ray

    import groupchat_core
    from groupchat_core.store import RunStore
    from groupchat_core.sweeps import RayExecutor, run_sweep

    folder = tempfile.mkdtemp(prefix="bench-ray-")
    local_store = RunStore(f"sqlite:///{folder}/local.db")
    fraction = args.cpus_per_cell
    wide = None if fraction is None else max(1, round(args.workers / fraction))
    for concurrency in (2, 4) if wide is None else sorted({2, 4, wide}):
        spec = sweep_spec(args.cells, args.latency, concurrency)
        out = run_sweep(spec, local_store)
        print(f"local  concurrency {concurrency}: {out.cells_done} cells in "
              f"{out.elapsed_s:.2f} s = {out.cells_done / out.elapsed_s:.1f} cells/s")

    with local_cluster(args.workers) as cluster:
        ray.init(address=cluster.address, include_dashboard=False, log_to_driver=False,
                 runtime_env={"py_modules": [groupchat_core]})
        ray_store = RunStore(f"sqlite:///{folder}/ray.db")
        with RayExecutor(ray_store) as executor:
            run_sweep(sweep_spec(4, args.latency, args.workers), ray_store,
                      executor=executor)  # warm the workers (imports)
            for concurrency in (args.workers, 2 * args.workers):
                spec = sweep_spec(args.cells, args.latency, concurrency)
                started = time.perf_counter()
                out = run_sweep(spec, ray_store, executor=executor)
                took = time.perf_counter() - started
                print(f"ray {args.workers} workers, concurrency {concurrency}: "
                      f"{out.cells_done} cells in {took:.2f} s = "
                      f"{out.cells_done / took:.1f} cells/s")
        if fraction is not None and wide is not None:
            with RayExecutor(ray_store, cpus_per_cell=fraction) as executor:
                run_sweep(sweep_spec(wide, args.latency, wide), ray_store,
                          executor=executor)  # warm `wide` workers (imports), as above
                spec = sweep_spec(args.cells, args.latency, wide)
                started = time.perf_counter()
                out = run_sweep(spec, ray_store, executor=executor)
                took = time.perf_counter() - started
                print(f"ray {args.workers} workers, {fraction:g} CPU a cell, concurrency "
                      f"{wide}: {out.cells_done} cells in {took:.2f} s = "
                      f"{out.cells_done / took:.1f} cells/s, {out.calls / took:.1f} bids/s")


if __name__ == "__main__":
    main()
