"""A sweep on PostgreSQL whose connections are cut at every cell claim still runs every cell
exactly once, and the terminal shows none of the driver's own lines (the real throwaway server).

The CLI runs in a child process, so what reaches its terminal is exactly its stdout and stderr
(pytest's log capture would otherwise swallow stray log lines). At the first attempt of each
cell's claim, every other backend of the database is killed with `pg_terminate_backend`: the
claim's own connection (before its INSERT runs, or right after its COMMIT succeeded, whose reply
is then lost) and the connections of the runs in flight, often mid-executemany (psycopg's
pipeline: the source of the issue's stray `psycopg.Pipeline [BAD]` lines).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from groupchat_core.store import RunStore
from tests.helpers import ROOT

CELLS = 12

CHILD = """
import sys, threading, weakref
from contextlib import suppress
import psycopg
from sqlalchemy import event
from sqlalchemy.engine import make_url
from groupchat_core.cli import main
from groupchat_core.store import RunStore

url, spec, mode = sys.argv[1:4]
target = make_url(url)


def kill_all():
    with psycopg.connect(host=target.host, port=target.port, user=target.username,
                         dbname=target.database, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
                      "datname = current_database() AND pid <> pg_backend_pid()")


engine = RunStore(url).engine  # the process-wide engine the CLI will use for this URL
seen, committing, lock = set(), weakref.WeakKeyDictionary(), threading.Lock()


@event.listens_for(engine, "before_cursor_execute")
def before(conn, cursor, statement, params, context, executemany):
    if "INSERT INTO sweep_cells" not in statement:
        return
    with lock:
        if params["cell"] in seen:
            return  # a retry: let it through
        seen.add(params["cell"])
    if mode == "before-insert":
        kill_all()
    else:
        committing[conn.connection.dbapi_connection] = params["cell"]


real_commit = engine.dialect.do_commit


def commit_then_drop(connection):
    real_commit(connection)
    if committing.pop(connection.dbapi_connection, None) is not None:
        # The claim is committed; its reply never arrives (this backend ends, and the others).
        with suppress(psycopg.Error):
            connection.dbapi_connection.execute("SELECT pg_terminate_backend(pg_backend_pid())")
        kill_all()
        raise psycopg.OperationalError("server closed the connection unexpectedly")


if mode == "after-commit":
    engine.dialect.do_commit = commit_then_drop
code = main(["--db", url, "sweep", spec, "--quiet", "--json"])
print(f"claims cut: {len(seen)}", file=sys.stderr)
sys.exit(code)
"""


def write_spec(path: Path) -> Path:
    agents = [{"agent_name": n, "system_prompt": p, "model_name": "sim/balanced",
               "litellm_kwargs": {"sim_latency": 0.01}}
              for n, p in (("Pro", "You argue for."), ("Con", "You argue against."))]
    path.write_text(json.dumps({
        "name": "claims-cut", "base": {"max_loops": 6, "agents": agents},
        "grid": {"threshold": [0.3, 0.5, 0.7]}, "tasks": ["Q?"], "repeats": CELLS // 3,
        "concurrency": 4}))
    return path


@pytest.mark.parametrize("mode", ["before-insert", "after-commit"])
def test_cut_connections_at_every_claim_run_each_cell_once_and_print_no_driver_lines(
        pg_url, tmp_path, mode):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    spec = write_spec(tmp_path / "s.json")
    done = subprocess.run([sys.executable, "-c", CHILD, pg_url, str(spec), mode], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=300, check=False)
    assert f"claims cut: {CELLS}" in done.stderr, done.stderr  # every claim lost its connection
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout)
    assert (outcome["status"], outcome["cells_done"], outcome["cells_run"]) == (
        "finished", CELLS, CELLS), outcome
    for stream in (done.stdout, done.stderr):
        assert "Pipeline" not in stream and "Traceback" not in stream, stream
    assert done.stderr.strip().splitlines() == [f"claims cut: {CELLS}"]  # nothing else at all

    store = RunStore(pg_url)
    claims = store.cell_claims(outcome["sweep_id"])
    assert len(claims) == CELLS and set(claims["state"]) == {"finished"}
    runs = store.list_runs(sweep_id=outcome["sweep_id"], limit=1000)
    assert len(runs) == CELLS and runs["cell"].nunique() == CELLS  # no cell was run twice
    assert set(runs["status"]) == {"finished"}
    assert sorted(claims["run_id"]) == sorted(runs["run_id"])
