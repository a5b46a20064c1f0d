"""Links naming a run or a sweep by id (issue 38, item 11): a full id or a unique prefix opens
that item; an unknown one says so, naming what was asked and the closest ids, and shows no
run or sweep, never the newest, and leaves the link's id in the address."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from groupchat_core.store import RunStore
from groupchat_ui.analysis import logic as analysis_logic
from groupchat_ui.kit import store_access
from tests.helpers.app_helpers import errors, goto, query, sim_sweep


def test_a_run_prefix_opens_that_run_and_an_unknown_id_opens_none(app: AppTest):
    store = RunStore()
    first, newest = analysis_logic.run_demo(store), analysis_logic.run_demo(store)
    store_access.invalidate()
    goto(app, "analysis", run=first[:8])  # the id the app's own labels show
    assert app.selectbox(key="analysis_run").value == first
    assert query(app, "run") == first  # the same run's full id
    assert not app.error

    goto(app, "analysis", run="zzzz")
    said = errors(app)
    assert "zzzz" in said and "closest: " in said and newest[:12] in said
    assert app.selectbox(key="analysis_run").value is None  # neither the newest nor the last
    assert query(app, "run") == "zzzz"
    assert not app.get("plotly_chart") and not app.get("download_button")

    app.selectbox(key="analysis_run").set_value(newest).run()  # a pick leaves the bad link
    assert query(app, "run") == newest and not app.error
    assert app.selectbox(key="analysis_run").value == newest


def test_a_sweep_prefix_opens_that_sweep_and_an_unknown_id_opens_none(app: AppTest):
    store = RunStore()
    first, newest = sim_sweep(store, "first"), sim_sweep(store, "newest")
    goto(app, "sweeps", sweep=first[:12])  # the id `sweep list` prints
    assert app.selectbox(key="sw_pick").value == first
    assert query(app, "sweep") == first
    assert not app.error

    goto(app, "sweeps", sweep="6e88a4da9a76")
    said = errors(app)
    assert "6e88a4da9a76" in said and "closest: " in said and first[:12] in said
    assert app.selectbox(key="sw_pick").value is None
    assert query(app, "sweep") == "6e88a4da9a76"
    assert not any(b.label == "Export sweep to MLflow" for b in app.button)

    app.selectbox(key="sw_pick").set_value(newest).run()
    assert query(app, "sweep") == newest and not app.error
    assert app.selectbox(key="sw_pick").value == newest
