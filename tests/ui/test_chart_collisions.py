"""Issue 41: texts apart from each other and from the edges, axes over what is there. Picture
checks on the figure objects of the Sweeps, Analysis outcome and Runs comparison charts, and
the Run page's past-turns table."""

from __future__ import annotations

import pandas as pd
import pytest

from groupchat_core import RunRecord
from groupchat_ui.kit.outcome_charts import accuracy_chart
from groupchat_ui.kit.store_access import RunData
from groupchat_ui.run.live_view import NO_MARGIN, shown_turns
from groupchat_ui.runs.compare_view import overlaid_figures
from groupchat_ui.sweeps import charts, explore_charts
from tests.helpers.scripted_trio import trio_record

BY = ["threshold", "recency_penalty", "recency_window"]


@pytest.fixture
def cells() -> pd.DataFrame:
    """Four finished cells of a sim sweep: nothing cost anything, one window for all."""
    return pd.DataFrame([
        {"status": "finished", "threshold": t, "recency_penalty": p, "recency_window": 2,
         "messages": 5 + i, "lulled": 0.1 * i, "entropy_bits": 1.2, "gini": 0.2 + 0.05 * i,
         "total_cost_usd": 0.0}
        for i, (t, p) in enumerate([(0.3, 0.1), (0.5, 0.2), (0.7, 0.3), (0.5, 0.1)])])


def test_parallel_coordinates_axes_over_a_constant_start_at_zero(cells: pd.DataFrame):
    """An all-zero cost axis ran from -1 to 1 (plotly's range for a constant)."""
    for fig in (charts.parcoords(cells, BY, list(charts.METRIC_LABELS)),
                explore_charts.parcoords_brushed(cells, BY, list(charts.METRIC_LABELS), "gini")):
        dims = {d.label: d for d in fig.data[0].dimensions}
        assert list(dims["cost<br>(USD)"].range) == [0.0, 1.0]
        assert list(dims["recency<br>window"].range) == [0.0, 2.0]
        assert dims["threshold"].range is None  # a spread keeps plotly's own range
        # the min/max labels above each axis are hidden: a title's second line sat on them
        assert fig.data[0].rangefont.color == "rgba(0,0,0,0)"


def test_the_accuracy_count_is_printed_under_its_group_never_past_the_edge():
    """'210 of 300 right' beside the last point ran past the plot's right edge."""
    table = pd.DataFrame({"strategy": ["bidding", "round_robin"], "correct": [210, 12],
                          "n": [300, 40], "accuracy": [0.7, 0.3], "ci_low": [0.65, 0.17],
                          "ci_high": [0.75, 0.46]})
    fig = accuracy_chart(table, ["strategy"])
    (points,) = fig.data
    assert "text" not in points.mode and points.text is None
    assert list(fig.layout.xaxis.ticktext) == ["bidding<br>210 of 300 right",
                                               "round_robin<br>12 of 40 right"]


def test_the_runs_comparison_ticks_whole_turns():
    """Plotly's own ticks put a 'turn 1.5' between two three-turn runs' turns."""
    record: RunRecord = trio_record("Debate.")
    data = RunData(info={"spec": {"threshold": 0.5}}, record=record, bids=record.bids_frame(),
                   turns=record.turns_frame(), messages=pd.DataFrame())
    for fig in overlaid_figures(data, data, ("A", "B")):
        axis = fig.layout.xaxis
        assert axis.dtick == 1 and axis.tickformat == "d" and axis.tickmode == "linear"


def test_a_turn_without_a_winner_shows_a_dash_for_its_margin_not_none():
    """The past-turns table drew a grey `None` in a lull turn's margin."""
    table = pd.DataFrame({"turn": [2, 1], "spoke": ["lull", "Alice"], "margin": [None, 0.2]})
    assert list(shown_turns(table)["margin"]) == [NO_MARGIN, "0.200"]
    assert list(table["margin"].isna()) == [True, False]  # the table itself is left as it was
