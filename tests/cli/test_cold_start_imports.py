"""Which libraries the quick CLI commands load (issue 24, target 5: a cold start).

`--version`, `list` and `show` answer in well under a second only if they leave the heavy
libraries alone: litellm (seconds), pandas and the sweeps package (half a second), and for
`--version` SQLAlchemy too. These tests pin the import sets, never a time (the CPU figures
are bench/cold_start.py's, in BENCHMARKS.md).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT

HEAVY = ("litellm", "pandas", "numpy", "sqlalchemy", "groupchat_core.sweeps", "ray")

# Runs the CLI in a fresh interpreter and prints which of HEAVY it left in sys.modules.
PROBE = """
import contextlib, io, json, sys
from groupchat_core.cli import main
argv = json.loads(sys.argv[1])
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
heavy = json.loads(sys.argv[2])
print(json.dumps({"code": code, "loaded": [m for m in heavy if m in sys.modules]}))
"""


def loaded_by(argv: list[str], home: Path,
              watch: tuple[str, ...] = HEAVY) -> tuple[object, set[str]]:
    env = {**os.environ, "GROUPCHAT_HOME": str(home)}
    env.pop("GROUPCHAT_DB", None)
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(argv), json.dumps(watch)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
                          check=True)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return result["code"], set(result["loaded"])


def recorded_run(home: Path) -> str:
    """A store in `home` with one finished sim run; its id."""
    env = {**os.environ, "GROUPCHAT_HOME": str(home)}
    env.pop("GROUPCHAT_DB", None)
    subprocess.run([sys.executable, "-m", "groupchat_core", "run", "examples/debate.yaml",
                    "--task", "cold start", "--quiet", "--max-loops", "2"], cwd=ROOT, env=env,
                   capture_output=True, text=True, timeout=120, check=True)
    listed = subprocess.run([sys.executable, "-m", "groupchat_core", "list", "--json"],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
                            check=True)
    return str(json.loads(listed.stdout)[0]["run_id"])


@pytest.mark.parametrize("flag", ["--version", "--help"])  # --help builds the whole parser
def test_version_and_the_parser_load_no_heavy_library(tmp_path, flag):
    code, loaded = loaded_by([flag], tmp_path)
    assert code == 0
    assert loaded == set()


# The engine and the agent/spec models (pydantic schemas built at import) are not needed to
# read the store's rows; `show` reads a run's record, so it builds the records' models only.
ENGINE_PARTS = ("groupchat_core.engine", "groupchat_core.engine._groupchat",
                "groupchat_core._agent", "groupchat_core._config",
                "groupchat_core.providers._model_calls")


def test_list_and_show_load_neither_litellm_nor_pandas_nor_the_engine(tmp_path):
    run_id = recorded_run(tmp_path)
    for argv in (["list"], ["list", "--json"], ["show", run_id[:8]]):
        code, loaded = loaded_by(argv, tmp_path, HEAVY + ENGINE_PARTS)
        assert code == 0, argv
        assert loaded <= {"sqlalchemy"}, (argv, loaded)  # the store itself, nothing more


def test_importing_the_package_loads_only_its_version():
    """`import groupchat_core` resolves its public names on first use (PEP 562). Besides its
    version it loads only `_display` (standard library only: html), where the package root
    installs the builder that `RunRecord.figures()` reaches the charts through."""
    probe = ("import sys, groupchat_core; print(sorted(m for m in sys.modules "
             "if m.startswith('groupchat_core') or m in ('pydantic', 'litellm')))")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, check=True)
    assert done.stdout.strip() == ("['groupchat_core', 'groupchat_core._display', "
                                   "'groupchat_core._version']")
    check = ("from groupchat_core import Agent, GroupChat, SIM_MODELS; import groupchat_core; "
             "assert GroupChat.__module__.startswith('groupchat_core.engine'); "
             "assert SIM_MODELS[0] == 'sim/balanced'; "
             "assert set(groupchat_core.__all__) <= set(dir(groupchat_core)); "
             "assert groupchat_core.engine is not None")
    subprocess.run([sys.executable, "-c", check], cwd=ROOT, timeout=120, check=True)
