"""A fresh tab on a 16,000-bid run's Analysis page (issue 24, target 6). Measurement only.

    python -m bench.analysis_cold --before DIR [--reps 3]

For this tree and another checkout `DIR` (the same database, a 1,000-turn x 16-agent run),
alternating, each repetition on a newly started server (`make run`'s command line):
- *cold server*: the first tab after the server is healthy opens `/analysis?run=<id>`;
- *fresh tab, warm server*: then a second fresh browser context (no HTTP cache, a new
  Streamlit session) opens the same URL.
Seconds from `page.goto` until the first plotly chart has drawn its SVG with a trace in it
(tests/e2e/conftest.py `PLOTS_DRAWN`), and until no script runs. Debian's /usr/bin/chromium.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from bench.dashboard import CHROMIUM, IDLE, ROOT, build_run, machine, make_run  # noqa: E402


def visit(browser: Any, url: str) -> dict[str, float]:
    from tests.e2e.conftest import PLOTS_DRAWN

    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    page = context.new_page()
    start = time.perf_counter()
    page.goto(url)
    page.wait_for_function(PLOTS_DRAWN, arg=1, timeout=180_000)
    chart = time.perf_counter() - start
    page.locator(IDLE).wait_for(state="attached", timeout=180_000)
    idle = time.perf_counter() - start
    context.close()
    return {"first chart": chart, "idle": idle}


def one(browser: Any, db: str, run_id: str, root: Path) -> dict[str, dict[str, float]]:
    with make_run(db, root=root) as base:
        cold = visit(browser, f"{base}/analysis?run={run_id}")
        warm = visit(browser, f"{base}/analysis?run={run_id}")
    return {"cold server": cold, "fresh tab, warm server": warm}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--before", type=Path, required=True, help="checkout to compare")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--turns", type=int, default=1000)
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    from tests.e2e.conftest import CHROMIUM_ARGS

    found: dict[tuple[str, str], list[dict[str, float]]] = {}
    loads = []
    with tempfile.TemporaryDirectory() as folder, sync_playwright() as pw:
        db = f"sqlite:///{folder}/big.db"
        run_id = build_run(db, args.turns)
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True,
                                     args=CHROMIUM_ARGS)
        trees = [("before", args.before), ("after", ROOT)]
        for i in range(args.reps):
            loads.append(os.getloadavg()[0])
            for tree, root in (trees if i % 2 == 0 else trees[::-1]):
                for case, result in one(browser, db, run_id, root).items():
                    found.setdefault((tree, case), []).append(result)
                    print(tree, case, result, flush=True)
        browser.close()
    print(f"\nMachine: {machine()}; {args.turns} turns x 16 agents; {args.reps} reps, "
          "alternating; load average (1 min) at each: " + ", ".join(f"{x:.1f}" for x in loads))
    print("\n| fresh tab on the big run's Analysis (median of "
          f"{args.reps}) | before: first chart (s) | after: first chart (s) | "
          "before: no script runs (s) | after: no script runs (s) | target 3 s |")
    print("|---|---:|---:|---:|---:|---|")
    for case in ("cold server", "fresh tab, warm server"):
        b, a = found[("before", case)], found[("after", case)]

        def med(rows: list[dict[str, float]], k: str) -> float:
            return statistics.median(r[k] for r in rows)

        verdict = "meets" if med(a, "first chart") <= 3 else "misses"
        print(f"| {case} | {med(b, 'first chart'):.2f} | {med(a, 'first chart'):.2f} | "
              f"{med(b, 'idle'):.2f} | {med(a, 'idle'):.2f} | {verdict} |")


if __name__ == "__main__":
    main()


HIT = """
import os, statistics, sys, time
from streamlit.testing.v1 import AppTest
def script(run_id):
    import time
    import streamlit as st
    from groupchat_ui.kit import store_access
    store_access.run_data(run_id)  # filled (or already there)
    t = time.perf_counter(); store_access.run_data(run_id)
    st.write(f"HIT {time.perf_counter() - t}")
times = []
for _ in range(6):
    at = AppTest.from_function(script, args=(sys.argv[1],), default_timeout=600); at.run()
    times.append(float(next(m.value for m in at.markdown if m.value.startswith("HIT"))[4:]))
print(statistics.median(times[1:]))
"""


def cache_hit(db: str, run_id: str, root: Path) -> float:
    """Median seconds of `store_access.run_data` on a warm cache, in a session of its own (an
    AppTest script), in a fresh process of the checkout `root`: what every script run of the
    Analysis page pays for its data before drawing anything."""
    import subprocess
    import sys

    with tempfile.TemporaryDirectory() as folder:  # AppTest reads the script's source
        probe = Path(folder) / "hit.py"
        probe.write_text(HIT)
        done = subprocess.run([sys.executable, str(probe), run_id], cwd=root,
                              capture_output=True, text=True, check=False,
                              env={**os.environ, "GROUPCHAT_DB": db, "PYTHONPATH": str(root)})
    if done.returncode:
        raise RuntimeError(done.stderr[-1500:])
    return float(done.stdout.split()[-1])


def hit_main() -> None:
    """`python -c 'from bench.analysis_cold import hit_main; hit_main()' BEFORE_DIR`."""
    import sys

    before = Path(sys.argv[1])
    with tempfile.TemporaryDirectory() as folder:
        db = f"sqlite:///{folder}/big.db"
        run_id = build_run(db, 1000)
        for tree, root in (("before", before), ("after", ROOT), ("before", before),
                           ("after", ROOT)):
            print(f"{tree}: run_data on a warm cache {cache_hit(db, run_id, root):.3f} s",
                  flush=True)
