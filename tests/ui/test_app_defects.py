"""Issue 21 item 5, defects seen in the browser, through AppTest: what a user reads."""

from __future__ import annotations

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from groupchat_core import Agent
from groupchat_core.store import RunStore
from groupchat_ui.analysis import logic as analysis_logic
from groupchat_ui.kit import store_access
from groupchat_ui.kit.labels import row_label
from groupchat_ui.run import logic as run_logic
from groupchat_ui.runs import logic as runs_logic
from tests.helpers import ROOT
from tests.helpers.app_helpers import goto, save_agents, session, texts


@pytest.fixture
def store() -> RunStore:
    return RunStore()


def _select(at: AppTest, rows: list[int]) -> None:
    at.session_state["runs_table"] = {"selection": {"rows": rows, "columns": [], "cells": []}}
    at.run()


def test_the_delete_question_names_the_runs(app: AppTest, store: RunStore):
    """It said "Delete 1 run(s) ... for good?"; now it names the run, and for two, both."""
    first, second = analysis_logic.run_demo(store), analysis_logic.run_demo(store)
    store_access.invalidate()
    goto(app, "runs")
    table = app.dataframe[0].value
    labels = {str(r["run_id"]): row_label(r) for r in store.list_runs().to_dict("records")}
    row = int(table.index[table["run_id"] == first][0])
    _select(app, [row])
    app.button(key="delete_runs").click().run()
    question = texts(app.warning)
    assert f"Delete the run {labels[first]} and its bid log for good?" in question
    assert "run(s)" not in question and first[:8] in question and second[:8] not in question
    app.button(key="confirm_delete_no").click().run()

    _select(app, [0, 1])
    app.button(key="delete_runs").click().run()
    question = texts(app.warning)
    assert "Delete these 2 runs and their bid logs for good?" in question
    assert first[:8] in question and second[:8] in question
    app.button(key="confirm_delete_yes").click().run()
    assert store.list_runs().empty


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


def test_where_streaming_is_offered_it_says_sims_never_stream(app: AppTest):
    """Settings and the README promised every candidate streams; sims never do."""
    goto(app, "settings")
    toggle = app.toggle(key="pref_stream_bids")
    assert "never stream" in toggle.help and "sim/" in toggle.help
    goto(app, "agents")
    app.button(key="load_preset").click().run()  # the debate trio: three sims
    goto(app, "run")
    notes = [c.value for c in app.caption if "stream" in c.value.lower()]
    assert any("simulated agents" in n and "never stream" in n for n in notes), notes
    goto(app, "settings")
    app.toggle(key="pref_stream_bids").set_value(False).run()
    goto(app, "run")
    assert not any("never stream" in c.value for c in app.caption)  # nothing streams anyway


def test_the_stream_note_counts_real_and_simulated_agents():

    mixed = run_logic.stream_note(["gpt-4o-mini", "sim/eager"], True)
    assert mixed is not None and "1 agent(s) on real models" in mixed and "never stream" in mixed
    real = run_logic.stream_note(["gpt-4o-mini"], True)
    assert real is not None and "never" not in real
    assert run_logic.stream_note(["sim/eager"], False) is None


def _reload(at: AppTest, page: str) -> AppTest:
    """A browser reload: a new Streamlit session with the same URL (`?sid=` and the page)."""
    again = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=60)
    again.query_params["sid"] = session(at).owner
    again.run()
    return goto(again, page)


def test_a_reload_keeps_the_sweep_form_and_its_agent_choice(app: AppTest, store: RunStore):
    """The sweep's agent choice went back to the default on reload, so the estimate was for
    other agents; the Run form's task and parameters (as last started) were reset too."""
    save_agents(store, [Agent(agent_name=n, model_name="sim/eager") for n in "ABCD"])
    goto(app, "sweeps")
    app.selectbox(key="sw_room").set_value("Saved agents").run()
    assert app.multiselect(key="sw_saved").value == ["A", "B", "C"]  # the default
    app.multiselect(key="sw_saved").set_value(["B", "D"]).run()
    app.text_input(key="sw_name").set_value("my sweep").run()
    app.number_input(key="sw_repeats").set_value(2).run()
    app.multiselect(key="sw_strategy").set_value(["bidding", "round_robin"]).run()
    app.text_input(key="sw_selector_model").set_value("openai/picker").run()
    app.text_input(key="sw_selector_api_base").set_value("http://127.0.0.1:8080/v1").run()
    goto(app, "run")  # the Run form is an st.form: its values reach the server on Start
    app.button(key="use_preset").click().run()
    app.text_area(key="run_task").set_value("Remembered task")
    app.number_input(key="run_param_max_loops").set_value(3)
    app.button(key="start_run").click().run()
    assert session(app).job_ids

    again = _reload(app, "sweeps")
    assert again.selectbox(key="sw_room").value == "Saved agents"
    assert again.multiselect(key="sw_saved").value == ["B", "D"]
    assert again.text_input(key="sw_name").value == "my sweep"
    assert again.number_input(key="sw_repeats").value == 2
    assert again.multiselect(key="sw_strategy").value == ["bidding", "round_robin"]
    assert again.text_input(key="sw_selector_model").value == "openai/picker"
    assert again.text_input(key="sw_selector_api_base").value == "http://127.0.0.1:8080/v1"
    goto(again, "run")
    assert again.text_area(key="run_task").value == "Remembered task"
    assert again.number_input(key="run_param_max_loops").value == 3

    store.delete_agent("D")  # a remembered agent deleted meanwhile: dropped, not an error
    store_access.invalidate()
    third = _reload(again, "sweeps")
    assert third.multiselect(key="sw_saved").value == ["B"]


def test_after_a_ray_sweep_ends_the_page_no_longer_says_connected():
    from groupchat_ui.sweeps import logic as sweep_logic
    from groupchat_ui.sweeps import view as sweep_view
    ray = sweep_logic.RayState("10.0.0.1:6379", "connected")
    assert sweep_view.ray_line(ray, done=False).endswith("connected")
    ended = sweep_view.ray_line(ray, done=True)
    assert "connected" not in ended.replace("disconnected", "") and "ended" in ended
    assert "10.0.0.1:6379" in ended
