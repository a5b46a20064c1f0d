"""Every exit status in the README's "Exit status" table, each from a real case: 0 done, 1 a
chat whose every bid failed, 2 bad input, 130 Ctrl-C (SIGINT) and 143 SIGTERM sent to a real
process mid-chat (the run recorded `cancelled`, no traceback). 141 (stdout's reader gone) is
test_cli_scripting.py's `| head` test; a sweep's 1 is test_cli_sweeps.py's."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from groupchat_core.store import RunStore
from tests.helpers import ROOT
from tests.helpers.cli import DEBATE, run_cli

pytestmark = pytest.mark.usefixtures("fresh_engines")


def spec(path: Path, **kwargs: float) -> str:
    """Two sim agents that never lull (threshold below every bid), each bid taking its time."""
    agents = [{"agent_name": n, "system_prompt": "You talk.", "model_name": "sim/eager",
               "litellm_kwargs": dict(kwargs)} for n in ("Ann", "Ben")]
    path.write_text(json.dumps({"schema_version": 1, "max_loops": 500, "threshold": -1.0,
                                "agents": agents}))
    return str(path)


def test_a_finished_chat_exits_0_bad_input_2_and_a_chat_whose_bids_all_fail_1(capsys, tmp_path):
    assert run_cli(capsys, "run", DEBATE, "--task", "t", "--quiet")[0] == 0
    code, _, err = run_cli(capsys, "run", DEBATE, "--task", "t", "--max-loops", "x")
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1
    failing = spec(tmp_path / "fail.json", sim_failure_rate=1.0)
    code, out, err = run_cli(capsys, "run", failing, "--task", "t", "--quiet")
    assert code == 1, err
    assert "error: the chat stopped because every bid failed" in err
    assert RunStore().list_runs()["stop_reason"].tolist()[0] == "error"
    assert RunStore().list_runs()["status"].tolist()[0] == "error"
    assert err.strip().splitlines()[-1].startswith("error: the chat stopped")  # the last line


def as_at_a_terminal() -> None:
    """In the child before it starts: Ctrl-C's default action, as at a terminal. A suite run as
    a shell's background job (`make test &`) starts with SIGINT ignored, which every child
    inherits, and a Python started so keeps ignoring it, as it should (nohup, `cmd &`): two
    fresh-clone runs started that way failed the SIGINT case with the chat run to its end."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize(("signum", "code", "word"), [
    (signal.SIGTERM, 143, "terminated"), (signal.SIGINT, 130, "interrupted")])
def test_a_signal_mid_chat_records_the_run_cancelled_and_exits_with_its_status(
        tmp_path, signum, code, word):
    db = f"sqlite:///{tmp_path}/cli.db"
    env = {**os.environ, "GROUPCHAT_DB": db, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "groupchat_core", "run", spec(tmp_path / "slow.json",
         sim_latency=0.3), "--task", "Talk on."], env=env, cwd=tmp_path,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=as_at_a_terminal)
    try:
        assert proc.stderr is not None
        seen = []
        for line in proc.stderr:  # wait for the real condition: a turn has been recorded
            seen.append(line)
            if line.startswith("turn 1:"):
                break
        else:
            pytest.fail("the chat never reached turn 1: " + "".join(seen))
        proc.send_signal(signum)
        out, rest = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == code, rest
    assert "Traceback" not in rest and rest.strip().splitlines()[-1] == word, rest
    (row,) = RunStore(db).list_run_rows(limit=5)
    assert (row["status"], row["stop_reason"]) == ("cancelled", "cancelled"), row
    assert row["turns"] >= 1 and RunStore(db).load_run(row["run_id"]).turns  # turns kept
