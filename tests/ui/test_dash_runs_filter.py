"""The Runs page's scope filter (issue 41): single runs apart from a sweep's, a sweep's own runs,
and a link (`?runs=single`, `?sweep=<id>`) that shows the same runs."""

from __future__ import annotations

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from groupchat_core.store import RunStore
from groupchat_ui.analysis import logic as analysis_logic
from groupchat_ui.kit import jobs as job_registry
from groupchat_ui.runs import logic
from tests.helpers.app_helpers import goto, new_app, query, sim_sweep


@pytest.fixture
def store() -> RunStore:
    return RunStore()  # GROUPCHAT_DB points into this test's tmp_path (tests/conftest.py)


def shown(at: AppTest) -> set[str]:
    return set(at.dataframe(key="runs_table").value["run_id"])


def test_the_scope_sets_single_runs_apart_from_a_sweeps(app: AppTest, store: RunStore):
    single = analysis_logic.run_demo(store)
    sweep_id = sim_sweep(store, "big", thresholds=(0.01, 0.2, 0.4))
    swept = set(store.list_runs(sweep_id=sweep_id)["run_id"])
    goto(app, "runs")
    scope = app.selectbox(key="filter_scope")
    assert scope.value == logic.ALL_RUNS and shown(app) == swept | {single}
    assert scope.options[:2] == ["all runs (4)", "single runs (1)"]
    assert scope.options[2].startswith("sweep big · ") and scope.options[2].endswith("(3 runs)")

    scope.set_value(logic.SINGLE_RUNS).run()
    assert shown(app) == {single}
    assert query(app, "runs") == "single"
    app.selectbox(key="filter_scope").set_value(sweep_id).run()
    assert shown(app) == swept
    assert query(app, "sweep") == sweep_id and query(app, "runs") is None
    app.text_input(key="filter_text").set_value("no such words")  # the other filters narrow it
    app.button(key="apply_filters").click().run()
    assert shown(app) == set()


def test_a_link_names_the_scope(store: RunStore):
    single = analysis_logic.run_demo(store)
    sweep_id = sim_sweep(store, "linked", thresholds=(0.01, 0.2))
    try:
        at = goto(new_app(), "runs", sweep=sweep_id[:6])  # a unique prefix, as elsewhere
        assert at.selectbox(key="filter_scope").value == sweep_id
        assert shown(at) == set(store.list_runs(sweep_id=sweep_id)["run_id"])
        at = goto(new_app(), "runs", runs="single")
        assert shown(at) == {single}
        at = goto(new_app(), "runs", sweep="nosuchsweep")  # names nothing here: every run
        assert at.selectbox(key="filter_scope").value == logic.ALL_RUNS
        assert len(shown(at)) == 3
    finally:
        job_registry.registry().shutdown()


def test_scopes_count_runs_and_keep_sweeps_without_runs_out():
    runs = pd.DataFrame({"run_id": ["a", "b", "c", "d"], "sweep_id": [None, "s1", "s1", None]})
    sweeps = pd.DataFrame({"sweep_id": ["s2", "s1"], "name": ["empty", "grid"],
                           "created_at": ["2026-12-07T06:00:00", "2026-12-06T05:04:03"]})
    scopes = logic.run_scopes(runs, sweeps)
    assert scopes == {"all": "all runs (4)", "single": "single runs (2)",
                      "s1": "sweep grid · 2026-12-06 05:04 · s1 (2 runs)"}
    assert list(logic.in_scope(runs, "single")["run_id"]) == ["a", "d"]
    assert list(logic.in_scope(runs, "s1")["run_id"]) == ["b", "c"]
    assert logic.in_scope(runs, "all") is runs
    assert logic.scope_from_query({"sweep": "s"}, scopes) == "s1"
    assert logic.scope_from_query({"runs": "single"}, scopes) == "single"
    assert logic.scope_from_query({}, scopes) == "all"
    assert logic.scope_query("s1") == {"sweep": "s1"} and logic.scope_query("all") == {}
