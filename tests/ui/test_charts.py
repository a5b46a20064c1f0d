"""Figure builders: the right traces and shapes for a small run, threshold lines, empty inputs."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import pytest

from groupchat_core import RunRecord
from groupchat_core.analysis import charts, speaker_metrics, transition_matrix
from tests.helpers.chats import scripted_chat
from tests.helpers.scripted_trio import trio_record


@pytest.fixture(scope="module")
def record() -> RunRecord:
    """Alice wins, Bob wins (Alice penalised), then a lull on turn 3."""
    return trio_record("Debate.")


def lines_at(fig: go.Figure, **coords: float) -> list:
    return [s for s in fig.layout.shapes if s.type == "line"
            and all(getattr(s, k) == v for k, v in coords.items())]


def annotation_texts(fig: go.Figure) -> list[str]:
    return [a.text for a in fig.layout.annotations]


def test_agent_colours_are_stable_by_list_order():
    two = charts.agent_colors(["A", "B"])
    three = charts.agent_colors(["A", "B", "C"])
    assert two["A"] == three["A"] and two["B"] == three["B"] and len(set(three.values())) == 3
    assert len(charts.agent_colors([str(i) for i in range(50)])) == 50  # the palette cycles


def test_bids_heatmap_has_agents_by_turns_with_winners_starred(record: RunRecord):
    fig = charts.bids_heatmap(record.bids_frame(), value="adjusted", threshold=0.5)
    heat, stars, silent = fig.data
    assert heat.type == "heatmap" and list(heat.y) == ["Alice", "Bob", "Cara"]
    assert list(heat.x) == [1, 2, 3]
    assert heat.z[0][1] == pytest.approx(0.6)  # Alice's penalised bid on turn 2
    assert list(zip(stars.customdata, stars.text, strict=True)) == [(1, "Alice"), (2, "Bob")]
    assert "threshold 0.5" in fig.layout.title.text
    assert "threshold 0.5" in heat.colorbar.ticktext
    assert heat.colorbar.tickvals[1] == 0.5  # the threshold is a tick on the one scale
    with pytest.raises(ValueError, match="'score' or 'adjusted'"):
        charts.bids_heatmap(record.bids_frame(), value="latency_ms")


def test_heatmap_marks_sit_on_the_cell_edge_and_the_legend_explains_them(record: RunRecord):
    """The value is printed at the cell's centre: the winner's mark sits on the cell's top edge,
    a silent bid's ring on its bottom edge, both inside the cell and off the value's line, and
    both are named."""
    fig = charts.bids_heatmap(record.bids_frame(), value="adjusted", threshold=0.5)
    heat, stars, silent = fig.data
    assert heat.texttemplate == "%{z:.2f}"  # the value is shown in every cell
    rows = {agent: i for i, agent in enumerate(heat.y)}
    for trace, side in ((stars, -1), (silent, 1)):
        assert trace.yaxis == "y2" and list(trace.x) == list(trace.customdata)
        offsets = [y - rows[a] for y, a in zip(trace.y, trace.text, strict=True)]
        assert all(0.3 <= side * o < 0.5 for o in offsets), (trace.name, offsets)
        assert trace.showlegend is not False and "turn %{customdata}" in trace.hovertemplate
    assert "winner" in stars.name and stars.marker.symbol == "triangle-down"
    assert "silent" in silent.name and silent.marker.symbol == "circle-open"
    # Cara's empty message on turn 1 and Alice's on turn 3 are silent; nothing else is
    assert sorted(zip(silent.customdata, silent.text, strict=True)) == [(1, "Cara"), (3, "Alice")]
    assert fig.layout.showlegend is True
    assert list(fig.layout.xaxis.range) == [0.5, 3.5]  # the marks do not widen the axis
    # the marks' numeric rows line up with the agent rows: one range for both axes
    assert list(fig.layout.yaxis2.range) == list(fig.layout.yaxis.range) == [2.5, -0.5]
    assert fig.layout.yaxis2.overlaying == "y" and fig.layout.yaxis2.visible is False


def test_heatmap_marks_failed_bids_apart_from_silent_ones():
    bids = pd.DataFrame([
        {"turn": 1, "agent": "A", "score": 0.9, "adjusted": 0.9, "winner": True,
         "message": "hi", "error": None, "path": "tool"},
        {"turn": 1, "agent": "B", "score": 0.0, "adjusted": 0.0, "winner": False,
         "message": "", "error": "Timeout: no answer", "path": "none"},
    ])
    fig = charts.bids_heatmap(bids)
    names = [t.name for t in fig.data[1:]]
    assert names == [charts.WINNER_LABEL, charts.FAILED_LABEL]


def test_turn_axes_have_whole_number_ticks(record: RunRecord):
    bids, turns = record.bids_frame(), record.turns_frame()
    for fig in (charts.bids_heatmap(bids), charts.bid_lines(bids, turns, 0.5),
                charts.winner_timeline(turns)):
        axis = fig.layout.xaxis
        assert axis.dtick == 1 and axis.tickformat == "d" and axis.tickmode == "linear"
    long = pd.DataFrame({"turn": list(range(1, 301)), "agent": "A", "score": 0.5,
                         "adjusted": 0.5, "winner": False, "message": "x"})
    axis = charts.bids_heatmap(long).layout.xaxis
    assert float(axis.dtick).is_integer() and 300 / axis.dtick <= charts.MAX_TURN_TICKS


def test_bid_lines_draw_one_line_per_agent_the_threshold_and_the_lull(record: RunRecord):
    fig = charts.bid_lines(record.bids_frame(), record.turns_frame(), threshold=0.5)
    names = [t.name for t in fig.data]
    assert names == ["Alice", "Bob", "Cara", "winner"]
    colors = charts.agent_colors(["Alice", "Bob", "Cara"])
    assert [t.line.color for t in fig.data[:3]] == list(colors.values())
    assert len(lines_at(fig, y0=0.5, y1=0.5)) == 1  # horizontal threshold line
    assert len(lines_at(fig, x0=3, x1=3)) == 1  # vertical line at the lull
    assert "lull" in annotation_texts(fig) and "threshold 0.5" in annotation_texts(fig)


def test_winner_timeline_puts_each_turn_on_its_winner_and_marks_the_lull(record: RunRecord):
    fig = charts.winner_timeline(record.turns_frame(), agents=["Alice", "Bob", "Cara"])
    by_name = {t.name: t for t in fig.data}
    assert list(by_name["Alice"].x) == [1] and list(by_name["Bob"].x) == [2]
    assert list(by_name["Cara"].x) == []
    assert len(lines_at(fig, x0=3, x1=3)) == 1 and "lull" in annotation_texts(fig)


def test_transition_heatmap_shows_the_matrix(record: RunRecord):
    matrix = transition_matrix(record.turns_frame(), agents=["Alice", "Bob", "Cara"])
    fig = charts.transition_heatmap(matrix)
    (heat,) = fig.data
    assert list(heat.x) == list(heat.y) == ["Alice", "Bob", "Cara"]
    assert heat.z.tolist() == [[0, 1, 0], [0, 0, 0], [0, 0, 0]]


@pytest.mark.parametrize("kind", ["metrics", "dict", "series"])
def test_turn_shares_accepts_metrics_dicts_and_series(record: RunRecord, kind: str):
    metrics = speaker_metrics(record.turns_frame(), record.bids_frame())
    given = {"metrics": metrics, "dict": metrics.shares,
             "series": pd.Series(metrics.shares)}[kind]
    fig = charts.turn_shares(given)
    bars, equal = fig.data
    assert list(bars.x) == ["Alice", "Bob", "Cara"] and list(bars.y) == [0.5, 0.5, 0.0]
    assert len(lines_at(fig, y0=pytest.approx(1 / 3))) == 1  # the equal-share reference
    assert equal.name == "equal share 33%"  # named in the legend, not over the bars


def test_bidding_floor_shows_raw_and_adjusted_with_penalties_and_threshold(record: RunRecord):
    turn_two = [b for b in record.bids if b.turn == 2]
    fig = charts.bidding_floor(turn_two, threshold=0.5, recency_penalty=0.3)
    raw, adjusted = fig.data
    assert (raw.name, adjusted.name) == ("raw score", "adjusted")
    assert list(raw.y) == [0.9, 0.7, 0.65]
    assert adjusted.y[0] == pytest.approx(0.6)
    assert list(adjusted.text) == ["−0.3 recency", "", ""]
    assert list(adjusted.marker.pattern.shape) == ["/", "", ""]
    assert list(adjusted.marker.line.width) == [0, 3, 0]  # Bob won
    assert len(lines_at(fig, y0=0.5, y1=0.5)) == 1
    assert "recency penalty 0.3" in fig.layout.title.text


def test_bidding_floor_mid_turn_shows_who_is_still_thinking(record: RunRecord):
    arrived = [record.bids[0]]  # only Alice's first bid so far
    fig = charts.bidding_floor(arrived, 0.5, 0.3, agents=["Alice", "Bob", "Cara"])
    assert list(fig.data[1].text) == ["", "waiting…", "waiting…"]
    silent = charts.bidding_floor(record.bids_frame().query("turn == 1"), 0.5, 0.3)
    assert list(silent.data[1].text) == ["", "", "silent"]


def test_bidding_floor_labels_failed_bids():
    record = scripted_chat({"A": [(0.9, "a"), (0.1, "")], "B": [RuntimeError("down"), (0.1, "")]},
                           output_type="basemodel").run("t")
    fig = charts.bidding_floor([b for b in record.bids if b.turn == 1], 0.5, 0.3)
    assert list(fig.data[1].text) == ["", "failed"]


def test_empty_inputs_give_a_figure_with_a_note():
    empty = RunRecord(run_id="r", config={}, task="t")
    bids, turns = empty.bids_frame(), empty.turns_frame()
    figures = [
        charts.bids_heatmap(bids, threshold=0.5),
        charts.bid_lines(bids, turns, 0.5),
        charts.winner_timeline(turns),
        charts.transition_heatmap(transition_matrix(turns)),
        charts.turn_shares({}),
        charts.bidding_floor(bids, 0.5, 0.3),
        charts.bidding_floor([], 0.5, 0.3),
        charts.bidding_floor(None, 0.5, 0.3),
    ]
    for fig in figures:
        assert isinstance(fig, go.Figure) and not fig.data
        assert annotation_texts(fig)[0] in ("no bids yet", "no turns yet", "no messages yet")
        fig.to_json()  # a valid figure


def test_every_figure_serialises(record: RunRecord):
    bids, turns = record.bids_frame(), record.turns_frame()
    for fig in (charts.bids_heatmap(bids, "score", 0.5), charts.bid_lines(bids, turns, 0.5),
                charts.winner_timeline(turns), charts.bidding_floor(bids.query("turn == 3"),
                                                                    0.5, 0.3)):
        assert fig.to_json()

