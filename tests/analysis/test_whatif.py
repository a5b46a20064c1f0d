"""What-if: re-selection from recorded bids, checked against scripted runs and real re-runs."""

from __future__ import annotations

import pytest

from groupchat_core import STRATEGIES, Agent, GroupChat
from groupchat_core.analysis import (
    WHATIF_COLUMNS,
    whatif_grid,
    whatif_pivot,
    whatif_record,
    whatif_run,
)
from groupchat_core.store import RunStore
from groupchat_core.testing import ScriptedBids

TASK = "Should hospitals adopt AI diagnosis?"


def scripted_run():
    """A (0.9) speaks, then B (0.7) as A is penalised, then A again; turn 4 lulls at 0.5."""
    script = ScriptedBids({
        "A": [(0.9, "a1"), (0.9, "a2"), (0.8, "a3"), (0.45, "a4")],
        "B": [(0.6, "b1"), (0.7, "b2"), (0.4, "b3"), (0.3, "b4")],
        "C": [(0.2, ""), (0.55, "c2"), (0.3, "c3"), (0.2, "")],
    })
    chat = GroupChat(agents=[Agent(agent_name=n, model_name=script.model_name) for n in "ABC"],
                     threshold=0.5, recency_penalty=0.3, recency_window=1, max_loops=10)
    chat.run("t")
    return chat.last_run


def point(grid, threshold, penalty, window=1):
    rows = grid[(grid["threshold"] == threshold) & (grid["recency_penalty"] == penalty)
                & (grid["recency_window"] == window)]
    assert len(rows) == 1
    return rows.iloc[0].to_dict()


def test_a_scripted_run_replayed_under_other_values():
    record = scripted_run()
    assert [m.role for m in record.messages] == ["User", "A", "B", "A"]
    assert record.stop_reason == "lull" and len(record.turns) == 4

    grid = whatif_grid(record.bids_frame(), [0.5, 0.65, 0.25], [0.3, 0.0, 0.5], [1, 0])
    assert list(grid.columns) == WHATIF_COLUMNS and len(grid) == 18

    same = point(grid, 0.5, 0.3)
    assert (same["outcome"], same["first_divergence"], same["exact_through"]) == (
        "same", None, 4)
    assert same["lull_turn"] == same["recorded_lull_turn"] == 4

    # Threshold 0.65: B's 0.7 at turn 2 still wins (A: 0.9 - 0.3); at turn 3 A's 0.8 wins;
    # nobody beats 0.65 at turn 4 either: identical. Threshold 0.25: B's 0.3 speaks at turn 4.
    assert point(grid, 0.65, 0.3)["outcome"] == "same"
    low = point(grid, 0.25, 0.3)
    assert (low["outcome"], low["first_divergence"], low["diverged_to"]) == (
        "diverges", 4, "B")
    assert pd_na(low["lull_turn"])

    # No penalty (or no window): A (0.9) beats B (0.7) at turn 2.
    unpenalised = point(grid, 0.5, 0.0)
    assert (unpenalised["outcome"], unpenalised["first_divergence"],
            unpenalised["diverged_to"]) == ("diverges", 2, "A")
    assert point(grid, 0.5, 0.0, window=0) == {**unpenalised, "recency_window": 0}

    # Threshold 0.85: A's 0.9 still opens, but nothing on turn 2 beats it: a lull there.
    strict = whatif_grid(record.bids_frame(), [0.85], [0.3])
    row = strict.iloc[0]
    assert (row["outcome"], row["first_divergence"], row["lull_turn"]) == ("lull", 2, 2)


def pd_na(value) -> bool:
    import pandas as pd

    return value is None or value is pd.NA


def trio(seed: int = 3, **config) -> GroupChat:
    agents = [Agent(agent_name=n, system_prompt=p, model_name=m) for n, p, m in (
        ("Optimist", "You argue for the benefits.", "sim/eager"),
        ("Pessimist", "You argue for the risks.", "sim/contrarian"),
        ("Realist", "You seek a balanced analysis.", "sim/balanced"))]
    return GroupChat(agents=agents, max_loops=16, seed=seed, **config)


@pytest.mark.parametrize("seed", [3, 11])
def test_predictions_match_real_reruns_of_deterministic_agents(seed):
    grid = check_against_reruns(seed, "bidding")
    assert set(grid["outcome"]) >= {"same", "diverges", "lull"}  # the grid exercises each case


@pytest.mark.parametrize("strategy", [s for s in STRATEGIES if s != "bidding"])
def test_what_if_under_every_strategy_matches_real_reruns(strategy):
    """bid_then_speak chooses by §6 on its scores, so other values move its speakers; the
    strategies that name their speakers never read threshold, penalty or window, so every
    point of the grid is the recorded run, and real reruns say the same."""
    grid = check_against_reruns(3, strategy)
    if strategy == "bid_then_speak":
        assert set(grid["outcome"]) >= {"same", "diverges", "lull"}
    else:
        assert set(grid["outcome"]) == {"same"}


def check_against_reruns(seed: int, strategy: str):
    """What-if of a recorded run (whatif_record: the run's own strategy) against real reruns
    of the same deterministic agents at each point of the grid; returns the grid."""
    chat = trio(seed, threshold=0.45, recency_penalty=0.2, strategy=strategy)
    chat.run(TASK)
    recorded = chat.last_run
    winners = [t.winner for t in recorded.turns]
    thresholds, penalties = [0.3, 0.45, 0.55, 0.65, 0.75], [0.0, 0.2, 0.4]
    grid = whatif_record(recorded, thresholds, penalties, [1, 2])

    for row in grid.to_dict("records"):
        rerun = trio(seed, threshold=row["threshold"], recency_penalty=row["recency_penalty"],
                     recency_window=row["recency_window"], bid_cache=False, strategy=strategy)
        rerun.run(TASK)
        actual = [t.winner for t in rerun.last_run.turns]
        exact = row["exact_through"]
        assert actual[:exact - 1] == winners[:exact - 1], row  # identical before
        if row["outcome"] == "same":
            assert actual == winners, row
        else:
            turn = row["first_divergence"]
            predicted = None if row["outcome"] == "lull" else row["diverged_to"]
            assert actual[turn - 1] == predicted, row
            assert predicted != winners[turn - 1] if turn <= len(winners) else True
        if row["outcome"] == "lull":
            assert rerun.last_run.stop_reason == "lull"
            assert len(rerun.last_run.turns) == row["lull_turn"]
    return grid


def test_a_stored_run_needs_no_model_calls_and_pivots_for_a_heatmap(tmp_path):
    store = RunStore(f"sqlite:///{tmp_path}/w.db")
    chat = trio()
    store.attach(chat)
    chat.run(TASK)
    script = ScriptedBids({})  # any model call in what-if would fail loudly
    assert script.remaining() == {}

    grid = whatif_run(store, chat.last_run.run_id)
    assert 0.5 in set(grid["threshold"]) and 0.3 in set(grid["recency_penalty"])
    own = point(grid, 0.5, 0.3)
    assert own["outcome"] == "same" and own["exact_through"] == len(chat.last_run.turns)

    matrix = whatif_pivot(grid, "exact_through")
    assert matrix.index.name == "recency_penalty" and matrix.columns.name == "threshold"
    assert matrix.shape == (grid["recency_penalty"].nunique(), grid["threshold"].nunique())
    assert matrix.loc[0.3, 0.5] == len(chat.last_run.turns)

    two = whatif_run(store, chat.last_run.run_id, [0.5], [0.3], [1, 2])
    with pytest.raises(ValueError, match="several recency windows"):
        whatif_pivot(two)
    assert whatif_pivot(two, window=2).shape == (1, 1)
    with pytest.raises(ValueError, match="not a what-if column"):
        whatif_pivot(grid, "nope")


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"thresholds": []}, "thresholds must not be empty"),
    ({"windows": [-1]}, "integers >= 0"),
    ({"windows": [1.5]}, "integers >= 0"),
    ({"penalties": [True]}, "must be numbers"),
])
def test_bad_axes_are_clear_errors(kwargs, message):
    bids = scripted_run().bids_frame()
    with pytest.raises(ValueError, match=message):
        whatif_grid(bids, **kwargs)
