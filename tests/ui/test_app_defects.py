"""Issue 21 item 5, defects seen in the browser, through AppTest: what a user reads."""

from __future__ import annotations

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from groupchat_core.store import RunStore
from groupchat_ui.kit import store_access
from groupchat_ui.run import logic as run_logic
from groupchat_ui.run.actions import STREAM_KEY
from groupchat_ui.runs import logic as runs_logic
from tests.helpers.app_helpers import (
    fill,
    goto,
    new_app,
    preset_run_form,
    session,
    sim_agents,
    widget,
)


@pytest.fixture
def store() -> RunStore:
    return RunStore()


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
    """Settings and the README promised every candidate streams; sims never do. The toggle
    (on by default) is what the Run page reads, and it survives page switches."""
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
    """The sweep's agent choice went back to the default on reload, so the estimate was for
    other agents; the Run form's task and parameters (as last started) were reset too."""
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
    from groupchat_ui.sweeps import logic as sweep_logic
    from groupchat_ui.sweeps import view as sweep_view
    ray = sweep_logic.RayState("10.0.0.1:6379", "connected")
    assert sweep_view.ray_line(ray, done=False).endswith("connected")
    ended = sweep_view.ray_line(ray, done=True)
    assert "connected" not in ended.replace("disconnected", "") and "ended" in ended
    assert "10.0.0.1:6379" in ended
