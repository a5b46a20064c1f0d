"""A recorded run's key Analysis figures, for `RunRecord.figures()` in a notebook: the same
builders and the same inputs as the dashboard's Analysis page (charts.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._config import chat_default
from ._metrics import agent_order, speaker_metrics, transition_matrix

if TYPE_CHECKING:
    from .._records import RunRecord

NO_PLOTLY = "figures need plotly: pip install 'groupchat-lab[dashboard]'"


def record_figures(record: RunRecord) -> dict[str, Any]:
    """bids_heatmap, bid_lines, winner_timeline, transitions and turn_shares of `record`;
    a one-line ImportError without plotly."""
    try:
        from . import charts
    except ImportError:
        raise ImportError(NO_PLOTLY) from None
    bids, turns = record.bids_frame(), record.turns_frame()
    agents = agent_order(bids)  # every agent bids every turn: the silent ones too
    threshold = float(record.config.get("threshold", chat_default("threshold")))
    return {
        "bids_heatmap": charts.bids_heatmap(bids, "adjusted", threshold, agents),
        "bid_lines": charts.bid_lines(bids, turns, threshold, "adjusted", agents),
        "winner_timeline": charts.winner_timeline(turns, agents),
        "transitions": charts.transition_heatmap(transition_matrix(turns, agents)),
        "turn_shares": charts.turn_shares(speaker_metrics(turns, bids,
                                                         stop_reason=record.stop_reason)),
    }
