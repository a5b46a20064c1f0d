"""A big sweep's page in a fresh tab (issue 41: "a 1,200-cell sweep's page takes 12.6 s to
open"; target under 3 s). Measurement only.

    python -m bench.sweep_page --before REV|DIR [--reps 3] [--cells 1200]

One sim sweep of `--cells` cells (a 5 x 5 x 4 grid of threshold x penalty x window, repeated;
3 agents, max_loops 10) recorded into a fresh SQLite file by the CLI, then, for this tree and a
commit or another checkout, alternating, each repetition on a newly started server (`make
run`'s command line):
- *fresh tab, warm server*: after one untimed tab has opened the sweep, a new browser context
  (no HTTP cache, a new Streamlit session) opens `/sweeps?sweep=<id>`: seconds from `page.goto`
  until the first plotly chart (the heatmaps) has drawn its SVG with a trace in it
  (tests/e2e/conftest.py `PLOTS_DRAWN`), and until no script runs;
- *page script*: the Sweeps page's script run for the sweep under AppTest, warm (a new session
  after one untimed run), in a process of the tree's own.
Debian's /usr/bin/chromium.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from bench import _harness as h  # noqa: E402
from bench.analysis_cold import visit  # noqa: E402
from bench.dashboard import ROOT, chromium, machine, make_run  # noqa: E402

SPEC = """schema_version: 1
name: big-sweep
base:
  max_loops: 10
  agents:
    - {{agent_name: Optimist, model_name: sim/eager}}
    - {{agent_name: Pessimist, model_name: sim/balanced}}
    - {{agent_name: Realist, model_name: sim/reserved}}
grid:
  threshold: [0.2, 0.35, 0.5, 0.65, 0.8]
  recency_penalty: [0.0, 0.1, 0.2, 0.3, 0.4]
  recency_window: [1, 2, 3, 4]
tasks: ["Plan the offsite."]
repeats: {repeats}
concurrency: 8
"""
GRID = 100  # cells per repeat of SPEC
# The page script under AppTest, warm, in the tree's own process: prints its seconds.
APPTEST = """
import sys, time
from streamlit.testing.v1 import AppTest
def once():
    at = AppTest.from_file("streamlit_app.py", default_timeout=600)
    at.query_params["sweep"] = sys.argv[1]
    at.switch_page("app_pages/sweeps.py")
    start = time.perf_counter()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return time.perf_counter() - start
once()
print(once())
"""


def build_sweep(folder: str, cells: int) -> tuple[str, str]:
    """The sweep recorded by the CLI into a new SQLite file: (store URL, sweep id)."""
    spec = Path(folder) / "big.yaml"
    spec.write_text(SPEC.format(repeats=max(1, cells // GRID)), encoding="utf-8")
    db = f"sqlite:///{folder}/big.db"
    subprocess.run([sys.executable, "-m", "groupchat_core", "sweep", str(spec)], cwd=ROOT,
                   env={**os.environ, "GROUPCHAT_DB": db}, check=True,
                   stdout=subprocess.DEVNULL)
    from groupchat_core.store import RunStore

    sweeps = RunStore(db).list_sweeps()
    return db, str(sweeps["sweep_id"].iloc[0])


def page_script(root: Path, db: str, sweep_id: str) -> float:
    out = subprocess.run([sys.executable, "-c", APPTEST, sweep_id], cwd=root, check=True,
                         env={**os.environ, "GROUPCHAT_DB": db}, capture_output=True, text=True)
    return float(out.stdout.strip().splitlines()[-1])


def one(browser: Any, db: str, sweep_id: str, root: Path) -> dict[str, float]:
    url_of = f"/sweeps?sweep={sweep_id}"
    with make_run(db, root=root) as base:
        visit(browser, base + url_of)  # the server's first open: imports, caches
        tab = visit(browser, base + url_of)
    return {"first chart": tab["first chart"], "idle": tab["idle"],
            "script": page_script(root, db, sweep_id)}


def main(argv: list[str] | None = None) -> None:
    parser = h.options(__doc__, reps=3, before="required")
    parser.add_argument("--cells", type=int, default=1200)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder, h.tree(args.before) as before, \
            chromium() as browser:
        db, sweep_id = build_sweep(folder, args.cells)
        found = h.alternate({tree: lambda root=root: one(browser, db, sweep_id, root)
                             for tree, root in (("before", before), ("after", ROOT))}, args.reps)
    print(f"\nMachine: {machine()}; a {args.cells}-cell sim sweep; {args.reps} reps, "
          "alternating")
    rows = []
    for what, key in (("fresh tab: heatmaps drawn", "first chart"),
                      ("fresh tab: no script runs", "idle"),
                      ("page script under AppTest, warm", "script")):
        b, a = (h.median(r[key] for r in found[tree]) for tree in ("before", "after"))
        rows.append([what, f"{b:.2f}", f"{a:.2f}", "meets" if a < 3 else "misses"])
    print(h.table([f"{args.cells}-cell sweep's page (median of {args.reps})", "before (s)",
                   "after (s)", "target < 3 s"], rows))


if __name__ == "__main__":
    main()
