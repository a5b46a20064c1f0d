"""What an engine-only install (no `[dashboard]`, no `[parquet]`) says when a command needs an
extra: one line naming the pip command. The real engine-only install is
tests/install/test_install.py's; here the missing packages are hidden in this process."""

from __future__ import annotations

import importlib.util
import json
import sys

import pytest

from groupchat_core.store import RunStore
from tests.helpers.cli import run_cli

pytestmark = pytest.mark.usefixtures("fresh_engines")


def test_serve_without_streamlit_says_how_to_install_the_dashboard(capsys, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "streamlit" else real(name, *a))
    code, out, err = run_cli(capsys, "serve")
    assert (code, out) == (2, "")
    assert err == ("error: the dashboard is not installed (Streamlit is missing): pip install "
                   "'groupchat-lab[dashboard]'\n")


def test_a_parquet_export_without_pyarrow_says_how_to_install_it(capsys, monkeypatch, tmp_path):
    agents = [{"agent_name": n, "system_prompt": "p", "model_name": "sim/balanced"} for n in "AB"]
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"name": "pq", "base": {"max_loops": 3, "agents": agents},
                                "grid": {"threshold": [0.5]}, "tasks": ["Q?"], "repeats": 1}))
    code, out, err = run_cli(capsys, "sweep", str(path), "--quiet", "--json")
    assert code == 0, err
    sweep = json.loads(out)["sweep_id"]
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)  # its import raises ImportError
    code, out, err = run_cli(capsys, "sweep", "export", sweep, "--format", "parquet",
                             "-o", str(tmp_path / "x.parquet"))
    assert (code, out) == (2, "") and err.count("\n") == 1
    assert "Parquet exports need pyarrow: pip install 'groupchat-lab[parquet]'" in err
    assert not (tmp_path / "x.parquet").exists() and len(RunStore().list_runs()) == 1
