"""How close the pre-flight estimate is to the sweep it describes (issue 38 item 14).
Measurement only: nothing here asserts on time.

    python -m bench.estimate_accuracy            # every shipped example sweep (about 1-2 min)
    python -m bench.estimate_accuracy --quick    # the two small examples only

Each sweep under examples/ (sweep-order.yaml, sweep-random.yaml, experiments/du_math_debate.yaml)
is planned and estimated, then run on its sims, as written, into a fresh SQLite store in this
process (the local executor, the CLI's default). Printed per sweep: the estimate's calls (upper
bound) against the calls the store recorded as needed (made + answered by the bid cache), and
the estimated wall time against the measured wall time and the process's CPU time, with both
ratios (estimate / measured; the goal is 0.5 to 2), and the load average before each run. A sim
sweep's wall time is the engine's own work (sims answer at once), so on an idle core it is its
CPU time; on a machine busy with other work it is longer, by a factor the estimate cannot know.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from bench import _harness as h

ROOT = h.ROOT
EXAMPLES = ("examples/sweep-order.yaml", "examples/sweep-random.yaml",
            "examples/experiments/du_math_debate.yaml")


def measure(path: Path, folder: Path) -> dict[str, float]:
    """Estimate, then run, one example sweep into its own store: the figures to compare."""
    from groupchat_core.store import RunStore, dispose_engines
    from groupchat_core.sweeps import load_sweep, plan_sweep, run_sweep, sweep_summary

    store = RunStore(f"sqlite:///{folder / (path.stem + '.db')}")
    spec = load_sweep(str(path))
    est = plan_sweep(spec, store).estimate
    assert est is not None
    cpu, start = time.process_time(), time.perf_counter()
    outcome = run_sweep(spec, store)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    summary = sweep_summary(store, outcome.sweep_id)
    dispose_engines()
    return {"cells": est.cells, "calls_upper": est.calls_upper,
            "calls_needed": summary["calls_needed"], "wall_estimate": est.wall_s_upper,
            "wall": wall, "cpu": cpu, "status_ok": float(outcome.status == "finished")}


def main() -> None:
    args = h.options(__doc__, quick=True).parse_args()
    os.environ.setdefault("GROUPCHAT_BLOCK_REMOTE_CALLS", "1")  # sims only: nothing leaves
    examples = EXAMPLES[:2] if args.quick else EXAMPLES
    print(f"{'sweep':<42} {'cells':>5} {'calls est':>9} {'needed':>7} {'wall est':>8} "
          f"{'wall':>7} {'cpu':>6} {'est/wall':>8} {'est/cpu':>7} {'load':>5}")
    with tempfile.TemporaryDirectory() as folder:
        for name in examples:
            load = os.getloadavg()[0]
            got = measure(ROOT / name, Path(folder))
            print(f"{name:<42} {got['cells']:>5.0f} {got['calls_upper']:>9,.0f} "
                  f"{got['calls_needed']:>7,.0f} {got['wall_estimate']:>7.1f}s "
                  f"{got['wall']:>6.1f}s {got['cpu']:>5.1f}s "
                  f"{got['wall_estimate'] / got['wall']:>8.2f} "
                  f"{got['wall_estimate'] / max(got['cpu'], 1e-9):>7.2f} {load:>5.1f}"
                  + ("" if got["status_ok"] else "  (did not finish)"), flush=True)


if __name__ == "__main__":
    main()
