"""Issue 41's small wording items: the sidebar names the app and its job labels tell jobs apart
even when cut short; the Task field's placeholder is an instruction, not a task that looks
filled in; `make run` says where the store really is (GROUPCHAT_HOME), not always data/."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from streamlit.testing.v1 import AppTest

from groupchat_ui.kit.components import APP_LOGO, job_link_label
from groupchat_ui.kit.presets import PRESETS
from groupchat_ui.run import form
from groupchat_ui.run.view import TASK_PLACEHOLDER
from tests.helpers import ROOT
from tests.helpers.app_helpers import goto

LONG_TASK = "Plan the offsite for the sales team in the spring, with a budget and a venue"
SIDEBAR_CHARS = 28  # about what the sidebar shows of a label before it cuts it


def test_job_labels_start_with_what_tells_jobs_apart():
    """Two jobs of the same long task read the same when the title came first."""
    a = job_link_label(None, LONG_TASK, 1_780_000_000, "a1b2c3d4e5")
    b = job_link_label(None, LONG_TASK, 1_780_000_060, "f6e7d8c9b0")
    assert a[:SIDEBAR_CHARS] != b[:SIDEBAR_CHARS]
    assert re.match(r"\d\d:\d\d · a1b2c3d4 · Plan the offsite", a), a
    assert job_link_label("DB choice", LONG_TASK, None, "a1b2c3d4e5") == "a1b2c3d4 · DB choice"


def test_the_app_logo_names_the_app():
    """The sidebar's logo (st.logo; tests/e2e/test_smoke_browser.py sees it drawn) is the
    app's name, inline: no file to ship, nothing to fetch."""
    assert APP_LOGO.startswith("<svg") and ">GroupChat Lab</text>" in APP_LOGO
    assert "href" not in APP_LOGO and "http://" not in APP_LOGO.replace(
        'xmlns="http://www.w3.org/2000/svg"', "")


def test_the_task_placeholder_is_an_instruction(app: AppTest):
    goto(app, "run")
    task = app.text_area(key=form.TASK_KEY)
    assert task.placeholder == TASK_PLACEHOLDER and task.value in ("", None)
    assert TASK_PLACEHOLDER.startswith("Type ") and not TASK_PLACEHOLDER.endswith("?")
    assert all(TASK_PLACEHOLDER != p.task for p in PRESETS.values())


def test_make_run_says_where_the_store_is(tmp_path: Path):
    """The recipe's echo, run as make runs it (BIN and PORT filled in, $$ as $)."""
    recipe = (ROOT / "Makefile").read_text().split("\nrun:", 1)[1]
    echo = next(line.strip().lstrip("@") for line in recipe.splitlines()
                if line.strip().startswith("@echo"))
    command = echo.replace("$(BIN)", str(ROOT / ".venv" / "bin")).replace(
        "$(PORT)", "8501").replace("$$", "$")
    home = tmp_path / "elsewhere"
    out = subprocess.run(["bash", "-c", command], capture_output=True, text=True, check=True,
                         cwd=ROOT, env={"PATH": "/usr/bin:/bin", "GROUPCHAT_HOME": str(home)},
                         timeout=120).stdout
    assert f"{home}/groupchat.db" in out and "(from GROUPCHAT_HOME)" in out, out
    assert "data/" not in out.replace(str(home), "")
