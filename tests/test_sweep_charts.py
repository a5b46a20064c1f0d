"""Sweep figure builders and the page's pure helpers: traces per facet, empty frames, parsing."""

from __future__ import annotations

import pandas as pd
import pytest

from groupchat_core import ConfigError
from groupchat_core.store import RunStore
from groupchat_core.sweeps import aggregate, run_sweep, sweep_results
from ui.kit.presets import DEBATE_TRIO
from ui.sweeps import charts
from ui.sweeps import logic as svc

BY = ["threshold", "recency_penalty", "recency_window"]


@pytest.fixture
def frame() -> pd.DataFrame:
    spec = svc.build_spec(DEBATE_TRIO.build_agents(0), ["Debate."],
                          {"threshold": "0.4, 0.6", "recency_penalty": "0, 0.3",
                           "recency_window": "0, 1"},
                          {"max_loops": 6, "repeats": 2, "concurrency": 4})
    store = RunStore()
    outcome = run_sweep(spec, store)
    return sweep_results(store, outcome.sweep_id)


def test_heatmaps_have_one_panel_per_window(frame: pd.DataFrame):
    agg = aggregate(frame, by=BY, metrics=list(charts.METRIC_LABELS))
    for metric in charts.METRIC_LABELS:
        fig = charts.sweep_heatmaps(agg, metric)
        assert [t.type for t in fig.data] == ["heatmap", "heatmap"]
        assert fig.data[0].z.shape == (2, 2)
    fig = charts.ci_chart(agg, frame, "messages", window=1)
    assert len(fig.data) == 4 and fig.data[0].error_y.array is not None
    par = charts.parcoords(frame, BY, ["messages", "gini"])
    assert par.data[0].type == "parcoords" and len(par.data[0].dimensions) == 5


def test_empty_frames_give_a_note_not_an_exception():
    empty_agg = pd.DataFrame(columns=[*BY, "metric", "n", "mean", "std", "sem", "ci_low",
                                      "ci_high"])
    for fig in (charts.sweep_heatmaps(empty_agg, "messages"),
                charts.ci_chart(empty_agg, pd.DataFrame(), "messages"),
                charts.parcoords(pd.DataFrame(columns=["status"]), BY, ["messages"]),
                charts.matrix_heatmap(pd.DataFrame(), "what-if")):
        assert not fig.data and fig.layout.annotations


def test_matrix_heatmap_labels_axes():
    matrix = pd.DataFrame([[1.0, None], [2.0, 3.0]], index=[0.0, 0.3], columns=[0.4, 0.6])
    fig = charts.matrix_heatmap(matrix, "first divergence turn", "turn")
    assert fig.data[0].type == "heatmap" and list(fig.data[0].x) == ["0.4", "0.6"]


def test_parse_numbers_names_the_bad_value():
    assert svc.parse_numbers("0.3, 0.5;0.7", "threshold") == [0.3, 0.5, 0.7]
    assert svc.parse_numbers("0, 2", "recency_window", integer=True) == [0, 2]
    for text, message in [("0.3, x", "'x' is not a number"), ("", "at least one value"),
                          ("1.5", "not a whole number"), ("0.3, 0.3", "listed twice")]:
        with pytest.raises(ConfigError, match=message):
            svc.parse_numbers(text, "recency_window" if text == "1.5" else "threshold",
                              integer=text == "1.5")
    with pytest.raises(ConfigError, match="1.5 is outside"):
        svc.parse_numbers("1.5", "threshold", bounds=(0.0, 1.0))


def test_progress_folds_events_into_a_cell_table():
    events: list = []
    spec = svc.build_spec(DEBATE_TRIO.build_agents(0), ["Debate."],
                          {"threshold": "0.5", "recency_penalty": "0.3", "recency_window": "1"},
                          {"max_loops": 4, "repeats": 2, "concurrency": 2})
    run_sweep(spec, RunStore(), on_event=events.append)
    prog = svc.progress(events)
    assert (prog.done, prog.total, prog.fraction) == (2, 2, 1.0)
    assert list(prog.table()["status"]) == ["finished", "finished"]
    assert prog.outcome.status == "finished" and svc.all_sim(spec.base.agents)
