"""`-` reads standard input wherever the CLI reads a file: a chat spec (`run -`), a sweep spec
(`sweep -`), a run bundle (`import -`), an agents file (`agents import -`); `-o -` writes
standard output."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import pytest

from groupchat_core.store import RunStore
from tests.helpers import ROOT
from tests.helpers.cli import DEBATE, run_cli

pytestmark = pytest.mark.usefixtures("fresh_engines")


def stdin(monkeypatch, data: str | bytes) -> None:
    raw = data.encode() if isinstance(data, str) else data
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(raw)))


def test_run_and_import_read_standard_input(capsys, monkeypatch, tmp_path):
    stdin(monkeypatch, (ROOT / "examples" / "debate.yaml").read_text())
    code, out, err = run_cli(capsys, "run", "-", "--task", "From a pipe.", "--quiet")
    assert code == 0, err
    run_id = err.strip().splitlines()[-1].removeprefix("run ")
    assert RunStore().run_info(run_id)["task"] == "From a pipe."

    code, bundle, _ = run_cli(capsys, "export", run_id, "-o", "-")
    assert code == 0 and json.loads(bundle)["run"]["run_id"] == run_id
    other = f"sqlite:///{tmp_path}/other.db"
    stdin(monkeypatch, bundle)
    code, _, err = run_cli(capsys, "--db", other, "import", "-")
    assert code == 0 and err == "" and RunStore(other).run_info(run_id)["task"] == "From a pipe."


def test_agents_import_and_a_sweep_read_standard_input(capsys, monkeypatch):
    agents = {"schema_version": 1, "agents": [
        {"agent_name": "Piped", "system_prompt": "By pipe.", "model_name": "sim/eager"}]}
    stdin(monkeypatch, json.dumps(agents))
    code, out, err = run_cli(capsys, "agents", "import", "-")
    assert code == 0 and out.strip() == "saved 1 agent(s): Piped", err
    assert [a.agent_name for a in RunStore().list_agents()] == ["Piped"]

    sweep = {"name": "piped", "base": {"max_loops": 3, "agents": [
        {"agent_name": n, "system_prompt": "p", "model_name": "sim/balanced"} for n in "AB"]},
        "grid": {"threshold": [0.4, 0.6]}, "tasks": ["Q?"], "repeats": 1}
    stdin(monkeypatch, json.dumps(sweep))
    code, out, err = run_cli(capsys, "sweep", "-", "--quiet", "--json")
    assert code == 0, err
    assert json.loads(out)["cells_done"] == 2 and len(RunStore().list_runs()) == 2


def test_bad_or_oversized_standard_input_is_one_line(capsys, monkeypatch):
    stdin(monkeypatch, "agents: [unclosed")
    code, _, err = run_cli(capsys, "run", "-", "--task", "t")
    assert code == 2 and err.count("\n") == 1 and "stdin" in err, err
    stdin(monkeypatch, b"x" * 3_000_000)  # a spec's limit is 1 MB
    code, _, err = run_cli(capsys, "agents", "import", "-")
    assert code == 2 and err.count("\n") == 1 and "standard input is over the" in err, err
    assert RunStore().list_runs().empty


def test_a_spec_piped_into_a_real_process(tmp_path):
    env = {**os.environ, "GROUPCHAT_DB": f"sqlite:///{tmp_path}/cli.db", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "groupchat_core", "run", "-", "--task", "t",
                           "--quiet"], input=open(DEBATE).read(), env=env, capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() and done.stderr.startswith("run ")
