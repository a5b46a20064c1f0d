"""The sweep CLI, and resuming a sweep whose process was SIGKILLed mid-way."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from groupchat_core.cli import main
from groupchat_core.store import RunStore
from tests.helpers import ROOT

AGENTS = [{"agent_name": n, "system_prompt": p, "model_name": "sim/balanced"} for n, p in (
    ("Optimist", "You argue for the benefits."), ("Pessimist", "You argue for the risks."),
    ("Realist", "You seek a balanced analysis."))]


def write_spec(path: Path, latency: float = 0.0, **changes) -> Path:
    agents = [{**a, "litellm_kwargs": {"sim_latency": latency}} for a in AGENTS]
    data = {"name": "resume-me", "base": {"max_loops": 8, "agents": agents},
            "grid": {"threshold": [0.3, 0.35, 0.4, 0.45]}, "tasks": ["Should we?"],
            "repeats": 4, "concurrency": 2, "bid_cache": False}
    data.update(changes)
    path.write_text(json.dumps(data))
    return path


def cli(db: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "GROUPCHAT_DB": f"sqlite:///{db}"}
    return subprocess.run([sys.executable, "-m", "groupchat_core", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def query(db: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(db, timeout=10) as conn:
        return conn.execute(sql).fetchall()


def test_a_sigkilled_sweep_resumes_without_running_a_finished_cell_twice(tmp_path):
    db = tmp_path / "sweeps.db"
    spec = write_spec(tmp_path / "sweep.json", latency=0.05)
    env = {**os.environ, "GROUPCHAT_DB": f"sqlite:///{db}"}
    proc = subprocess.Popen([sys.executable, "-m", "groupchat_core", "sweep", str(spec)],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    finished: list[tuple] = []
    running: list[tuple] = []
    while len(finished) < 3 or not running:  # kill with cells done and a cell mid-run
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the sweep never got going"
        time.sleep(0.02)
        if db.exists():
            try:
                finished = query(db, "SELECT cell FROM runs WHERE status = 'finished'")
                running = query(db, "SELECT cell FROM runs WHERE status = 'running'")
            except sqlite3.OperationalError:  # the schema is being created
                finished = []
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate()

    (sweep_id, status), = query(db, "SELECT sweep_id, status FROM sweeps")
    before = dict(query(db, "SELECT cell, run_id FROM runs WHERE status = 'finished'"))
    in_flight = dict(query(db, "SELECT run_id, cell FROM runs WHERE status = 'running'"))
    assert status == "running" and 3 <= len(before) < 16 and in_flight  # killed mid-way

    store = RunStore(f"sqlite:///{db}")  # opening marks the dead process's runs and sweep
    assert store.get_sweep(sweep_id)["status"] == "interrupted"
    assert set(store.list_runs(status="interrupted")["run_id"]) == set(in_flight)

    resumed = cli(db, "sweep", str(spec), "--resume", sweep_id[:10])
    assert resumed.returncode == 0, resumed.stderr
    assert f"sweep {sweep_id} finished: 16/16 cells done; this session " \
           f"{16 - len(before)} cells" in resumed.stdout
    assert "resumed" in resumed.stderr and f"{len(before)} already done" in resumed.stderr

    runs = store.list_runs(sweep_id=sweep_id)
    done = runs[runs["status"] == "finished"]
    assert len(done) == 16 and done["cell"].is_unique  # every cell exactly once
    after = dict(zip(done["cell"], done["run_id"], strict=True))
    assert {cell: after[cell] for cell in before} == before  # finished cells were not re-run
    for run_id, cell in in_flight.items():  # interrupted cells were re-run
        assert after[cell] != run_id
    assert set(runs["status"]) == {"finished", "interrupted"}
    assert store.get_sweep(sweep_id)["status"] == "finished"


def test_the_cli_reports_budget_stops_and_estimates(tmp_path, capsys):
    db = tmp_path / "cli.db"
    spec = write_spec(tmp_path / "s.json")
    os.environ["GROUPCHAT_DB"] = f"sqlite:///{db}"  # the autouse fixture restores it

    assert main(["sweep", str(spec), "--estimate"]) == 0
    out, _ = capsys.readouterr()
    assert out.startswith("16 cells to run (0 already done): up to 336 model calls")
    assert RunStore().list_sweeps().empty  # an estimate runs nothing

    assert main(["sweep", str(spec), "--max-calls", "60"]) == 1
    out, err = capsys.readouterr()
    assert "stopped_budget" in out and "max_calls 60 reached" in out
    assert "budget cap: max_calls 60 reached" in err and "cells done" in err
    sweep_id = RunStore().list_sweeps()["sweep_id"].iloc[0]

    assert main(["sweep", "--resume", sweep_id, "--quiet"]) == 0
    out, err = capsys.readouterr()
    assert "finished: 16/16" in out and err == ""


@pytest.mark.parametrize(("args", "message"), [
    (["sweep"], "give a sweep spec file, or --resume SWEEP"),
    (["sweep", "nope.yaml"], "cannot read sweep file 'nope.yaml'"),
    (["sweep", "--resume", "zzz"], "no sweep 'zzz'"),
    (["sweep", "x.yaml", "--max-usd", "-1"], "--max-usd must be positive"),
    (["sweep", "x.yaml", "--take-over"], "--take-over only applies with --resume SWEEP"),
])
def test_cli_errors_are_one_line(args, message, capsys):
    assert main(args) == 2
    _, err = capsys.readouterr()
    assert err.startswith("error: ") and message in err and err.count("\n") == 1
