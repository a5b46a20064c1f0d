"""`sweep list|show|stop|export` and `sweep ... --json`: the sweeps in the store for people and
scripts. `sweep stop` is tested across real processes: a CLI sweep in a child process sees the
request, finishes its cells in flight, ends `cancelled`, and a resume runs the rest once.

Private imports (`cli._sweeps_manage`, `sweeps._results`, `sweeps._scheduler`): units or test hooks
with no public name; everything public comes from the public API.
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from groupchat_core.cli._sweeps_manage import LIST_FIELDS
from groupchat_core.store import RunStore
from groupchat_core.sweeps import aggregate, sweep_results
from groupchat_core.sweeps._results import METRICS
from groupchat_core.sweeps._scheduler import STOPPED_ON_REQUEST
from tests.helpers import ROOT
from tests.helpers.cli import run_cli
from tests.helpers.waits import eventually

pytestmark = pytest.mark.usefixtures("fresh_engines")


def write_spec(path: Path, *, latency: float = 0.0, repeats: int = 2, task: str = "Q?",
               name: str = "cli-sweep") -> Path:
    agents = [{"agent_name": n, "system_prompt": p, "model_name": "sim/balanced",
               "litellm_kwargs": {"sim_latency": latency}}
              for n, p in (("Pro", "You argue for."), ("Con", "You argue against."))]
    path.write_text(json.dumps({
        "name": name, "base": {"max_loops": 4, "agents": agents},
        "grid": {"threshold": [0.3, 0.5]}, "tasks": [task], "repeats": repeats,
        "concurrency": 1, "bid_cache": False}))
    return path



def finished_sweep(capsys, tmp_path: Path, **spec) -> str:
    code, out, err = run_cli(capsys, "sweep", str(write_spec(tmp_path / "s.json", **spec)),
                             "--quiet", "--json")
    assert code == 0, err
    return json.loads(out)["sweep_id"]


def test_sweep_json_outcome_list_and_show(capsys, tmp_path):
    code, out, _ = run_cli(capsys, "sweep", str(write_spec(tmp_path / "s.json")), "--estimate",
                           "--json")
    assert code == 0 and json.loads(out)["cells"] == 4
    sweep_id = finished_sweep(capsys, tmp_path)
    code, out, _ = run_cli(capsys, "sweep", "list", "--json")
    rows = json.loads(out)
    assert [(r["sweep_id"], r["status"], r["runs"]) for r in rows] == [(sweep_id, "finished", 4)]
    assert list(rows[0]) == list(LIST_FIELDS)
    code, out, _ = run_cli(capsys, "sweep", "show", sweep_id[:6], "--json")
    shown = json.loads(out)
    assert shown["sweep"]["cells_done"] == 4 and shown["sweep"]["status"] == "finished"
    expected = aggregate(sweep_results(RunStore(), sweep_id))
    assert len(shown["intervals"]) == len(expected) == 2 * len(METRICS)
    first = shown["intervals"][0]
    assert list(first) == ["threshold", "metric", "n", "mean", "std", "sem", "ci_low",
                           "ci_high", "range_low", "range_high", "interval_method",
                           "coverage_from_n", "note"]
    assert {row["metric"]: row["interval_method"] for row in shown["intervals"]}["lulled"] \
        == "wilson"
    assert first["n"] == 2 and first["mean"] == pytest.approx(expected["mean"].iloc[0])
    code, out, _ = run_cli(capsys, "sweep", "show", sweep_id)
    assert code == 0 and f"sweep_id: {sweep_id}" in out and "ci_high" in out
    code, out, _ = run_cli(capsys, "sweep", "list")
    assert sweep_id[:12] in out and "finished" in out


def test_sweep_export_has_every_cell_with_metrics_and_intervals(capsys, tmp_path):
    sweep_id = finished_sweep(capsys, tmp_path, task="=HYPERLINK(\"http://x\")")
    code, out, _ = run_cli(capsys, "sweep", "export", sweep_id)
    rows = list(csv.DictReader(line for line in io.StringIO(out) if not line.startswith("# ")))
    assert code == 0 and len(rows) == 4  # past the export's `# ` header
    assert {row["task"] for row in rows} == {"'=HYPERLINK(\"http://x\")"}  # defused
    results = sweep_results(RunStore(), sweep_id)
    intervals = aggregate(results)
    for row in rows:
        mine = intervals[(intervals["threshold"] == float(row["threshold"]))
                         & (intervals["metric"] == "messages")].iloc[0]
        assert float(row["messages_mean"]) == pytest.approx(mine["mean"])
        assert int(row["messages_n"]) == 2 and row["run_id"] in set(results["run_id"])
        assert {f"{m}_ci_low" for m in METRICS} <= set(row)
        assert row["lulled_interval_method"] == "wilson"  # each interval says how it was made
        assert row["evenness_interval_method"].startswith("bootstrap-t")
    target = tmp_path / "cells.json"
    code, _, err = run_cli(capsys, "sweep", "export", sweep_id, "--format", "json", "-o",
                           str(target))
    data = json.loads(target.read_text())
    assert code == 0 and f"wrote {target}" in err
    assert list(data) == ["sweep", "cells", "intervals", "meta"] and len(data["cells"]) == 4
    assert data["cells"][0]["messages_ci_high"] is None or isinstance(
        data["cells"][0]["messages_ci_high"], float)


def test_stopping_a_sweep_that_is_not_running_is_one_line(capsys, tmp_path):
    sweep_id = finished_sweep(capsys, tmp_path)
    code, out, err = run_cli(capsys, "sweep", "stop", sweep_id)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith(f"error: sweep {sweep_id[:12]} is not running (it is finished)")
    code, _, err = run_cli(capsys, "sweep", "stop", "nope")
    assert code == 2 and err == f"error: no sweep 'nope'; closest: {sweep_id[:12]}…\n"


def test_sweep_stop_ends_another_process_sweep_cleanly_and_it_resumes(capsys, tmp_path):
    db = tmp_path / "groupchat.db"
    spec = write_spec(tmp_path / "slow.json", latency=0.15, repeats=10)
    env = {**os.environ, "GROUPCHAT_DB": f"sqlite:///{db}", "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen([sys.executable, "-m", "groupchat_core", "sweep", str(spec),
                              "--quiet"], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        def a_run_recorded() -> str | None:  # the first finished cell: well under way
            sweeps = RunStore().list_sweeps() if db.exists() else None
            if sweeps is None or sweeps.empty or sweeps["runs"].iloc[0] < 1:
                return None
            return str(sweeps["sweep_id"].iloc[0])

        sweep_id = eventually(a_run_recorded, "the sweep's first recorded run", step=0.1,
                              alive=lambda: None if child.poll() is None
                              else str(child.communicate()))
        code, _, err = run_cli(capsys, "sweep", "stop", sweep_id[:10])
        assert code == 0 and f"asked sweep {sweep_id[:12]}" in err
        out, err = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 1, err
    assert f"sweep {sweep_id} cancelled" in out and STOPPED_ON_REQUEST in out
    store = RunStore()
    row = store.get_sweep(sweep_id)
    assert (row["status"], row["reason"]) == ("cancelled", STOPPED_ON_REQUEST)
    runs = store.list_runs(sweep_id=sweep_id)
    assert set(runs["status"]) == {"finished"}  # the cell in flight finished, none was cut
    assert 1 <= len(runs) < 20
    code, out, _ = run_cli(capsys, "sweep", "--resume", sweep_id, "--concurrency", "8", "--quiet",
                           "--json")  # the rest 8 at a time (the spec says 1)
    assert code == 0 and json.loads(out)["cells_done"] == 20
    done = store.list_runs(sweep_id=sweep_id)
    assert len(done) == 20 and done["cell"].is_unique


def test_ids_are_a_full_id_or_a_unique_prefix_else_one_line_naming_the_closest(capsys,
                                                                                 tmp_path):
    sweep_id = finished_sweep(capsys, tmp_path)
    code, out, _ = run_cli(capsys, "sweep", "show", sweep_id[:12], "--json")
    assert code == 0 and json.loads(out)["sweep"]["sweep_id"] == sweep_id
    code, _, err = run_cli(capsys, "sweep", "show", sweep_id[:3])
    assert code == 2 and err.count("\n") == 1
    assert err.startswith(f"error: sweep id '{sweep_id[:3]}' is too short: give at least 4")
    code, out, _ = run_cli(capsys, "list", "--json")
    run_id = json.loads(out)[0]["run_id"]
    code, out, _ = run_cli(capsys, "show", run_id[:8], "--json")
    assert code == 0 and json.loads(out)["run"]["run_id"] == run_id
    code, _, err = run_cli(capsys, "export", "zzzz", "--format", "csv")
    assert code == 2 and err.count("\n") == 1
    assert err.startswith("error: no run 'zzzz' in ") and "; closest: " in err
