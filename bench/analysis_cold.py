"""A fresh tab on a 16,000-bid run's Analysis page (issue 24, target 6). Measurement only.

    python -m bench.analysis_cold --before REV|DIR [--reps 3]

For this tree and a commit or another checkout (the same database, a 1,000-turn x 16-agent run),
alternating, each repetition on a newly started server (`make run`'s command line):
- *cold server*: the first tab after the server is healthy opens `/analysis?run=<id>`;
- *fresh tab, warm server*: then a second fresh browser context (no HTTP cache, a new
  Streamlit session) opens the same URL.
Seconds from `page.goto` until the first plotly chart has drawn its SVG with a trace in it
(tests/e2e/conftest.py `PLOTS_DRAWN`), and until no script runs. Debian's /usr/bin/chromium.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from bench import _harness as h  # noqa: E402
from bench.dashboard import IDLE, ROOT, build_run, chromium, machine, make_run  # noqa: E402


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
    parser = h.options(__doc__, reps=3, before="required")
    parser.add_argument("--turns", type=int, default=1000)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder, h.tree(args.before) as before, \
            chromium() as browser:
        db = f"sqlite:///{folder}/big.db"
        run_id = build_run(db, args.turns)
        found = h.alternate({tree: lambda root=root: one(browser, db, run_id, root)
                             for tree, root in (("before", before), ("after", ROOT))}, args.reps)
    print(f"\nMachine: {machine()}; {args.turns} turns x 16 agents; {args.reps} reps, "
          "alternating")
    rows = []
    for case in ("cold server", "fresh tab, warm server"):
        b, a = ([r[case] for r in found[tree]] for tree in ("before", "after"))

        def med(rows: list[dict[str, float]], k: str) -> float:
            return h.median(r[k] for r in rows)

        verdict = "meets" if med(a, "first chart") <= 3 else "misses"
        rows.append([case, f"{med(b, 'first chart'):.2f}", f"{med(a, 'first chart'):.2f}",
                     f"{med(b, 'idle'):.2f}", f"{med(a, 'idle'):.2f}", verdict])
    print(h.table([f"fresh tab on the big run's Analysis (median of {args.reps})",
                   "before: first chart (s)", "after: first chart (s)",
                   "before: no script runs (s)", "after: no script runs (s)", "target 3 s"],
                  rows))


if __name__ == "__main__":
    main()
