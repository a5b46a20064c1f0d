"""The Sweeps page's exploring views through AppTest (issue 21 item 4; moved from the browser
tests, issue 39): parallel coordinates with a log axis and a top-k % brush, group by with a band
per other parameter, only the configuration columns that differ, a run matrix named by its
baseline, bid stability per agent, and failed bids grouped by reason. How they draw on a phone:
tests/e2e/test_phone_layout.py."""

from __future__ import annotations

import json
from typing import Any

from streamlit.testing.v1 import AppTest

from groupchat_core import Agent
from groupchat_core.store import RunStore
from groupchat_core.sweeps import parse_sweep, run_sweep, sweep_results, top_k
from groupchat_core.testing import ScriptedBids
from groupchat_ui.kit.presets import DEBATE_TRIO
from tests.helpers.app_helpers import goto


def _figure(app: AppTest, key: str) -> dict[str, Any]:
    chart = next(c for c in app.get("plotly_chart") if c.key == key)
    return dict(json.loads(chart.proto.spec))


def _texts(app: AppTest) -> str:
    return " ".join(str(e.value) for kind in ("caption", "markdown", "warning", "success")
                    for e in getattr(app, kind))


def test_the_exploring_views_of_a_sim_sweep(app: AppTest):
    store = RunStore()  # GROUPCHAT_DB: this test's own SQLite file (tests/conftest.py)
    agents = [a.to_spec() for a in DEBATE_TRIO.build_agents(latency_s=0.0)]
    sweep_id = run_sweep(parse_sweep({
        "name": "views", "repeats": 2, "tasks": ["Plan a picnic."],
        "base": {"max_loops": 10, "agents": agents, "seed": 11},
        "grid": {"threshold": [0.4, 0.6], "recency_window": [1, 4, 16]}}), store).sweep_id
    goto(app, "sweeps", sweep=sweep_id)

    # parallel coordinates: recency_window 1, 4, 16 spans a factor of 16, so its axis is
    # logarithmic and threshold's is not; the top-k % slider keeps the best cells
    dims = _figure(app, "sw_parcoords")["data"][0]["dimensions"]
    assert [d["label"] for d in dims if "(log)" in d["label"]] == ["recency<br>window (log)"]
    kept = next(m for m in app.metric if m.label == "Cells kept")
    assert kept.value == "12 of 12"
    app.slider(key="sw_pc_topk").set_value(25).run()
    expected = len(top_k(sweep_results(store, sweep_id), "messages", 25))
    assert next(m for m in app.metric if m.label == "Cells kept").value == f"{expected} of 12"
    assert "Top 25% on mean chat length (messages)" in _texts(app)

    # group by: a band per other parameter's value, seeds collapsed
    bands = _figure(app, "sw_grp_chart")
    assert [t["name"] for t in bands["data"] if t.get("showlegend", True) and t.get("name")
            ][:3] == ["recency_window 1", "recency_window 4", "recency_window 16"]
    assert "seeds collapsed into 95% bands" in bands["layout"]["title"]["text"]

    # configurations: only the columns that differ, then all of them
    assert "6 configuration(s); columns that differ: threshold, recency_window" in _texts(app)
    app.toggle(key="sw_diff_only").set_value(False).run()
    assert "6 configuration(s); all columns" in _texts(app)

    # the run matrix names its baseline; one row per task and repeat
    matrix = _figure(app, "sw_mx_chart")["data"][0]
    assert str(matrix["x"][0]).startswith("baseline: threshold 0.4"), matrix["x"]
    assert sorted(set(matrix["y"])) == ["task 0 · repeat 0", "task 0 · repeat 1"]

    # stability: one line per agent
    names = {t["name"] for t in _figure(app, "sw_stab_chart")["data"] if t.get("name")}
    assert names == {"Optimist", "Pessimist", "Realist"}
    assert "No failed bids: every bid of this sweep's runs was read." in _texts(app)


def test_failed_bids_are_grouped_by_reason(app: AppTest):
    store = RunStore()
    script = ScriptedBids({"Ann": [(0.9, "hi"), {"score": "high?", "message": "x"}],
                           "Ben": [TimeoutError("request timed out"),
                                   RuntimeError("APIError: 500 from the provider")]})
    try:
        agents = [Agent(agent_name=n, model_name=script.model_name).to_spec()
                  for n in ("Ann", "Ben")]
        sweep_id = run_sweep(parse_sweep({
            "name": "fails", "tasks": ["Plan it."], "base": {"max_loops": 3, "agents": agents},
            "grid": {"threshold": [0.5]}}), store).sweep_id
        script.assert_complete()
    finally:
        script.close()
    goto(app, "sweeps", sweep=sweep_id)
    warnings = [str(w.value) for w in app.warning]
    assert [w.split(". ")[0] for w in warnings if " bid(s) in " in w] == [
        "**unreadable**: 1 bid(s) in 1 run(s), by Ann",
        "**provider error**: 1 bid(s) in 1 run(s), by Ben",
        "**timeout**: 1 bid(s) in 1 run(s), by Ben"], warnings
    assert "1 cell run(s) ended in error" in _texts(app)
