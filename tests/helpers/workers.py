"""How many pytest-xdist workers `make test` starts on this machine (`TEST_WORKERS` overrides).

Why not a fixed number: under xdist the suite is bound by CPU, and how much depends on the
core. On a 2-core Intel Xeon machine (2026-12-06) the parallel part took 653 s on two workers
(one run; the machine 75 % busy: the browser tests wait for simulated turns) and 607-653 s on
three (four runs, 86-97 % busy): a small gain, not a sure one. On the 2-core AMD EPYC
machine of the day before, where the same work took about 1.6 times the CPU (collecting the
suite: 17.9 s against 11.1 s), three workers were slower than two (1,065 s against 944 s) and
starved the browser tests into failures (BENCHMARKS.md, "The test suite's wall time"). So: one
worker per core, and one more where a core is fast, timed by a small pure-Python yardstick
(0.11 s on that Xeon, idle). A busy machine times slow and gets fewer workers: the safe side.
"""

from __future__ import annotations

import os
import sys
import time

# The yardstick's time (best of five) at or under which a core counts as fast: the Xeon's 0.11 s
# idle (0.10-0.16 s beside a running suite) with room; the EPYC's cores, 1.6 times slower,
# would take about 0.18 s (estimated from the collection times: no EPYC machine was at hand).
FAST_CORE_S = 0.15


def yardstick(rounds: int = 5) -> float:
    """Seconds for a fixed loop of integer arithmetic, the best of `rounds` (least disturbed)."""
    best = float("inf")
    for _ in range(rounds):
        start, total = time.perf_counter(), 0
        for i in range(3_000_000):
            total += i * i
        best = min(best, time.perf_counter() - start)
    return best


def workers(cores: int, yardstick_s: float) -> int:
    """Workers for `cores` cores whose yardstick took `yardstick_s`: one per core, one more
    where the cores are fast."""
    cores = max(1, cores)
    return cores + 1 if yardstick_s <= FAST_CORE_S else cores


def main() -> None:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    took = yardstick()
    count = workers(cores or 1, took)
    print(f"test workers: {count} ({cores} cores; yardstick {took:.2f} s, fast at or under "
          f"{FAST_CORE_S} s; TEST_WORKERS=N overrides)", file=sys.stderr)
    print(count)


if __name__ == "__main__":  # python -m tests.helpers.workers
    main()
