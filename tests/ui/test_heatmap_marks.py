"""Issue 21 item 5: the heatmap's winner and silent marks never cover the printed value, and at
wide windows they stay one cell wide, so alternating winners do not merge into a monologue."""

from __future__ import annotations

import pandas as pd

from groupchat_core.analysis import charts

# Row height is one unit on the overlaid axis; the value's text (12 px) stays within this half
# height of the centre in every cell the heatmap labels (at most CELL_TEXT_MAX cells).
TEXT_HALF_HEIGHT = 0.25


def _bids(turns: int, agents: list[str], values: dict[tuple[int, str], float]) -> pd.DataFrame:
    rows = []
    for turn in range(1, turns + 1):
        for i, agent in enumerate(agents):
            value = values.get((turn, agent), 0.1 * (i + 1))
            winner = agents[(turn - 1) % len(agents)] == agent
            rows.append({"turn": turn, "agent": agent, "score": value, "adjusted": value,
                         "winner": winner, "message": "" if value < 0 else "hi"})
    return pd.DataFrame(rows)


def _label(template: str, value: float) -> str:
    """What Plotly prints for `value` with the heatmap's d3 format (only '.Nf' is used)."""
    assert template.startswith("%{z:.") and template.endswith("f}")
    return f"{value:.{int(template[5:-2])}f}"


def test_the_printed_values_are_whole_and_no_mark_sits_on_them():
    """0.93 prints as 0.93 (the star used to cover its last digit: "0.9*"), -0.21 keeps its minus
    sign (the silent ring sat on it); every mark is inside its own cell but off the text."""
    fig = charts.bids_heatmap(_bids(3, ["A", "B"], {(1, "A"): 0.93, (1, "B"): -0.21}), "score")
    heat, *marks = fig.data
    labels = {(agent, turn): _label(heat.texttemplate, heat.z[r][c])
              for r, agent in enumerate(heat.y) for c, turn in enumerate(heat.x)}
    assert labels[("A", 1)] == "0.93" and labels[("B", 1)] == "-0.21"
    rows = {agent: i for i, agent in enumerate(heat.y)}
    assert {m.name for m in marks} == {charts.WINNER_LABEL, charts.SILENT_LABEL}
    for mark in marks:
        assert mark.yaxis == "y2"  # the numeric overlay, aligned with the agent rows
        for x, y, agent, turn in zip(mark.x, mark.y, mark.text, mark.customdata, strict=True):
            assert x == turn  # centred on its own turn: no sideways offset into the text
            assert TEXT_HALF_HEIGHT < abs(y - rows[agent]) < 0.5, (mark.name, agent, turn, y)
    assert list(fig.layout.yaxis2.range) == list(fig.layout.yaxis.range)
    winners = next(m for m in marks if m.name == charts.WINNER_LABEL)
    assert sorted(zip(winners.customdata, winners.text, strict=True)) == [
        (1, "A"), (2, "B"), (3, "A")]


def test_at_a_200_turn_window_winner_marks_do_not_merge():
    """Two agents alternating for 200 turns (longest monologue 1): each winner mark is at most
    one cell wide, so the same agent's marks two turns apart stay apart."""
    fig = charts.bids_heatmap(_bids(200, ["A", "B"], {}), "adjusted")
    winners = next(t for t in fig.data if t.name == charts.WINNER_LABEL)
    assert len(winners.x) == 200 and list(winners.x) == list(range(1, 201))
    # an 11 px star spanned ~3 turns of a 600 px plot; the mark must fit in one turn's width
    assert winners.marker.size * 200 <= charts.MARK_PIXELS
    assert winners.marker.size >= charts.MARK_SIZE_MIN
    small = next(t for t in charts.bids_heatmap(_bids(3, ["A", "B"], {}), "adjusted").data
                 if t.name == charts.WINNER_LABEL)
    assert small.marker.size == charts.MARK_SIZE_MAX  # few turns: a mark big enough to see
