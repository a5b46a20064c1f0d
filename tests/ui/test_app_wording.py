"""What a user reads (issues 21.5 and 41): job labels, the logo, the Task placeholder, where the
store is (`make run`, Settings), refusals in good grammar, the stream note, a reloaded sweep form,
the Ray line. Private imports (`groupchat_core._home`): a test hook."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from groupchat_core import _home as home
from groupchat_core.store import RunStore
from groupchat_ui.kit import jobs as job_registry
from groupchat_ui.kit import store_access
from groupchat_ui.kit.components import APP_LOGO, job_link_label
from groupchat_ui.kit.presets import PRESETS
from groupchat_ui.run import form
from groupchat_ui.run import logic as run_logic
from groupchat_ui.run.actions import STREAM_KEY
from groupchat_ui.run.view import TASK_PLACEHOLDER
from groupchat_ui.runs import logic as runs_logic
from groupchat_ui.sweeps import logic as sweep_logic
from groupchat_ui.sweeps import view as sweep_view
from tests.helpers import ROOT
from tests.helpers.app_helpers import (
    fill,
    goto,
    new_app,
    preset_run_form,
    session,
    sim_agents,
    widget,
)

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
    """Inline, nothing to fetch (drawn: tests/e2e/test_smoke_browser.py)."""
    assert APP_LOGO.startswith("<svg") and ">GroupChat Lab</text>" in APP_LOGO
    assert "href" not in APP_LOGO and "http://" not in APP_LOGO.replace(
        'xmlns="http://www.w3.org/2000/svg"', "")


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


@pytest.fixture
def settings(monkeypatch, tmp_path) -> Iterator[Callable[[], AppTest]]:
    monkeypatch.chdir(tmp_path)
    # the page also looks in the checkout's data/ (`make run`'s store): only this test's files
    monkeypatch.setattr(home, "CHECKOUT_ROOT", tmp_path / "checkout")

    def open_page() -> AppTest:
        at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=60)
        at.run()
        at.switch_page("app_pages/settings.py").run()
        assert not at.exception, [e.value for e in at.exception]
        return at

    yield open_page
    job_registry.registry().shutdown()


def test_settings_names_the_store_why_and_an_older_one_not_in_use(settings, tmp_path,
                                                                  monkeypatch):
    at = settings()
    data = next(m.value for m in at.markdown if "are stored at" in m.value)
    assert f"`sqlite:///{tmp_path}/groupchat.db`" in data
    assert "set by the `GROUPCHAT_DB` environment variable" in data
    assert not at.warning and not at.code

    monkeypatch.delenv("GROUPCHAT_DB")
    monkeypatch.setenv("GROUPCHAT_HOME", str(tmp_path / "home"))
    at = settings()
    data = next(m.value for m in at.markdown if "are stored at" in m.value)
    assert f"`sqlite:///{tmp_path / 'home' / 'groupchat.db'}`" in data
    assert "`GROUPCHAT_HOME` environment variable" in data

    old = tmp_path / "data" / "groupchat.db"  # an older store, not in use
    old.parent.mkdir()
    old.write_bytes(b"")
    at = settings()
    assert [w.value for w in at.warning if "not in use" in w.value]
    assert [c.value for c in at.code] == [f"GROUPCHAT_DB=sqlite:///{old.resolve()}"]


def test_a_refused_delete_names_the_runs_in_good_grammar():
    """It said "1 of the selected runs were started by someone else"."""
    runs = pd.DataFrame([{"run_id": "abcdef0123", "name": "*my* run", "task": "t",
                          "started_at": None},
                         {"run_id": "0123456789", "name": "", "task": "Second task",
                          "started_at": None}])
    one = runs_logic.refusal_text(runs_logic.run_names(runs, ["abcdef0123"]))
    assert one.startswith("Nothing was deleted: the run *my* run · abcdef01 was started by")
    two = runs_logic.refusal_text(runs_logic.run_names(runs, ["abcdef0123", "0123456789"]))
    assert "2 of the selected runs (*my* run · abcdef01; Second task · 01234567) were" in two
    assert "1 of the selected runs were" not in one + two


def test_the_task_placeholder_instructs_and_where_streaming_is_offered_sims_never_stream(
        app: AppTest):
    """Settings and the README promised every candidate streams; sims never do."""
    goto(app, "run")
    task = app.text_area(key=form.TASK_KEY)
    assert task.placeholder == TASK_PLACEHOLDER and task.value in ("", None)
    assert TASK_PLACEHOLDER.startswith("Type ") and not TASK_PLACEHOLDER.endswith("?")
    assert all(TASK_PLACEHOLDER != p.task for p in PRESETS.values())
    toggle = goto(app, "settings").toggle(key="pref_stream_bids")
    assert toggle.value is True and "never stream" in toggle.help and "sim/" in toggle.help
    preset_run_form(app)  # the debate trio: three sims
    notes = [c.value for c in app.caption if "stream" in c.value.lower()]
    assert any("simulated agents" in n and "never stream" in n for n in notes), notes
    goto(app, "settings").toggle(key="pref_stream_bids").set_value(False).run()
    assert app.session_state[STREAM_KEY] is False
    goto(app, "run")
    assert not any("never stream" in c.value for c in app.caption)  # nothing streams anyway
    assert goto(app, "settings").toggle(key="pref_stream_bids").value is False


def test_the_stream_note_counts_real_and_simulated_agents():
    mixed = run_logic.stream_note(["gpt-4o-mini", "sim/eager"], True)
    assert mixed is not None and "1 agent(s) on real models" in mixed and "never stream" in mixed
    real = run_logic.stream_note(["gpt-4o-mini"], True)
    assert real is not None and "never" not in real
    assert run_logic.stream_note(["sim/eager"], False) is None


def test_a_reload_keeps_the_sweep_form_and_its_agent_choice(app: AppTest, store: RunStore):
    """A reload reset the sweep's agents (an estimate for others) and the Run form."""
    sim_agents(store, *"ABCD")
    goto(app, "sweeps").selectbox(key="sw_room").set_value("Saved agents").run()
    assert app.multiselect(key="sw_saved").value == ["A", "B", "C"]  # the default
    form = {"sw_saved": ["B", "D"], "sw_name": "my sweep", "sw_repeats": 2,
            "sw_strategy": ["bidding", "round_robin"], "sw_selector_model": "openai/picker",
            "sw_selector_api_base": "http://127.0.0.1:8080/v1"}
    for key, value in form.items():
        fill(app, **{key: value}).run()
    goto(app, "run")  # the Run form is an st.form: its values reach the server on Start
    app.button(key="use_preset").click().run()
    fill(app, run_task="Remembered task", run_param_max_loops=3)
    app.button(key="start_run").click().run()
    assert session(app).job_ids

    again = goto(new_app(sid=session(app).owner), "sweeps")  # a reload: the same URL
    assert again.selectbox(key="sw_room").value == "Saved agents"
    assert {key: widget(again, key).value for key in form} == form
    goto(again, "run")
    assert again.text_area(key="run_task").value == "Remembered task"
    assert again.number_input(key="run_param_max_loops").value == 3

    store.delete_agent("D")  # a remembered agent deleted meanwhile: dropped, not an error
    store_access.invalidate()
    third = goto(new_app(sid=session(again).owner), "sweeps")
    assert third.multiselect(key="sw_saved").value == ["B"]


def test_after_a_ray_sweep_ends_the_page_no_longer_says_connected():
    ray = sweep_logic.RayState("10.0.0.1:6379", "connected")
    assert sweep_view.ray_line(ray, done=False).endswith("connected")
    ended = sweep_view.ray_line(ray, done=True)
    assert "connected" not in ended.replace("disconnected", "") and "ended" in ended
    assert "10.0.0.1:6379" in ended
