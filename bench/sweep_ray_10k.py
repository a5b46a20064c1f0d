"""A 10,000-cell sim sweep on Ray through the CLI, interrupted and resumed (issue 24, target 4).

    python -m bench.sweep_ray_10k [--cells 10000] [--stop-after 3000]

`groupchat-lab sweep run SPEC --executor ray` (the CLI starts a local cluster of this machine's
CPUs; one CPU a cell) on 3 `sim/balanced` agents, max_loops 4, 4 thresholds x cells/4 repeats,
bid cache off, into a temporary SQLite file. Once `--stop-after` cells have finished runs in the
store, the CLI process gets SIGINT (a user's Ctrl-C) and is waited for; then `sweep run
--resume ID --executor ray` finishes it. Checked at the end, from the store: every cell has
exactly one finished run and a `finished` claim pointing at it, and the resume ran only the
cells the first process had not finished. Prints the figures; asserts nothing on time.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import _harness as h

ROOT = h.ROOT


def finished_runs(path: Path) -> int:
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5) as conn:
            return int(conn.execute(
                "select count(*) from runs where status = 'finished'").fetchone()[0])
    except sqlite3.Error:  # not created yet, or busy
        return 0


def main(argv: list[str] | None = None) -> None:
    parser = h.options(__doc__)
    parser.add_argument("--cells", type=int, default=10_000)
    parser.add_argument("--stop-after", type=int, default=3000)
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="bench-ray-10k-"))
    db = folder / "sweep.db"
    env = {**os.environ, "GROUPCHAT_DB": f"sqlite:///{db}", "PYTHONPATH": str(ROOT),
           "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    agents = [{"agent_name": n, "system_prompt": f"You are {n}.", "model_name": "sim/balanced"}
              for n in ("Ann", "Bob", "Cy")]
    spec = {"name": "ten-thousand", "base": {"max_loops": 4, "agents": agents},
            "grid": {"threshold": [0.2, 0.3, 0.4, 0.5]}, "tasks": ["Go?"],
            "repeats": args.cells // 4, "concurrency": 2, "bid_cache": False}
    path = folder / "sweep.json"
    path.write_text(json.dumps(spec))
    cmd = [sys.executable, "-m", "groupchat_core", "sweep"]

    started = time.perf_counter()
    first = subprocess.Popen([*cmd, "run", str(path), "--executor", "ray", "--json", "--quiet"],
                             env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    while first.poll() is None and finished_runs(db) < args.stop_after:
        time.sleep(0.5)
    at_signal = finished_runs(db)
    first.send_signal(signal.SIGINT)
    out, err = first.communicate(timeout=600)
    first_s = time.perf_counter() - started
    print(f"first process: SIGINT after {at_signal} finished cells, exit {first.returncode} "
          f"after {first_s:.0f} s; {finished_runs(db)} finished cells in the store")
    print("  its last words:", (err.strip().splitlines() or [""])[-1][:300])
    listed = json.loads(subprocess.run([*cmd, "list", "--json"], env=env, cwd=ROOT,
                                       capture_output=True, text=True, check=True).stdout)
    sweep_id = listed[0]["sweep_id"]

    started = time.perf_counter()
    resumed = subprocess.run([*cmd, "run", "--resume", sweep_id, "--executor", "ray", "--json",
                              "--quiet"], env=env, cwd=ROOT, capture_output=True, text=True,
                             timeout=7200, check=False)
    resume_s = time.perf_counter() - started
    outcome = json.loads(resumed.stdout)
    print(f"resume: exit {resumed.returncode} after {resume_s:.0f} s: status "
          f"{outcome['status']}, cells_done {outcome['cells_done']}, cells_run "
          f"{outcome['cells_run']}")

    os.environ["GROUPCHAT_DB"] = env["GROUPCHAT_DB"]
    from groupchat_core.store import RunStore
    from groupchat_core.sweeps import parse_sweep

    store = RunStore(env["GROUPCHAT_DB"])
    runs = store.list_runs(sweep_id=sweep_id)
    done = runs[runs["status"] == "finished"]
    keys = sorted(c.key for c in parse_sweep(spec).cells())
    claims = store.cell_claims(sweep_id)
    every_once = (sorted(done["cell"]) == keys and sorted(claims["cell"]) == keys
                  and set(claims["state"]) == {"finished"}
                  and set(claims["run_id"]) == set(done["run_id"]))
    print(f"cells {len(keys)}; finished runs {len(done)}, distinct cells {done['cell'].nunique()};"
          f" other runs (interrupted attempts, kept and flagged) {len(runs) - len(done)}; "
          f"claims finished {int((claims['state'] == 'finished').sum())}; every cell exactly "
          f"once: {every_once}; the resume ran {outcome['cells_run']} = "
          f"{len(keys)} - {len(keys) - outcome['cells_run']} finished before the stop")
    print(f"| {len(keys)} cells on Ray (CLI, local cluster, 1 CPU a cell) | first process "
          f"{first_s:.0f} s, SIGINT at {at_signal} cells | resume {resume_s:.0f} s, "
          f"{outcome['cells_run']} cells | every cell exactly once: {every_once} |")


if __name__ == "__main__":
    main()
