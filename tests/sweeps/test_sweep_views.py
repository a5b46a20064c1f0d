"""The numbers behind the Sweeps page's exploring views (top_k, log_axis, group_bands, differing,
run_matrix, bid_stability, failures), on frames built here so every figure is worked by hand.
Private imports (`failure_reason`): the one-bid rule behind `failures`, not exported."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from groupchat_core import ConfigError
from groupchat_core.sweeps import (
    bid_stability,
    differing,
    failures,
    group_bands,
    log_axis,
    run_matrix,
    top_k,
)
from groupchat_core.sweeps._views import failure_reason


def _results() -> pd.DataFrame:
    rows = []
    for t_i, threshold in enumerate((0.3, 0.6)):
        for penalty in (0.0, 0.2):
            for repeat in range(3):
                rows.append({"run_id": f"r{t_i}{int(penalty * 10)}{repeat}", "status": "finished",
                             "threshold": threshold, "recency_penalty": penalty,
                             "recency_window": 1, "max_loops": 10, "agents": 2,
                             "models": "A=sim/eager; B=sim/reserved", "task_index": 0,
                             "repeat": repeat, "messages": 4 + 2 * t_i + repeat + penalty * 10,
                             "lulled": float(repeat == 0)})
    rows.append({**rows[0], "run_id": None, "status": "pending", "messages": None,
                 "repeat": 9})
    return pd.DataFrame(rows)


def test_log_axis_only_for_positive_values_spanning_a_factor_of_ten():
    assert log_axis([0.001, 0.01, 0.1])
    assert log_axis([1, 5, 50])
    assert not log_axis([0.3, 0.5, 0.7])  # a factor of 2.3
    assert not log_axis([0.0, 0.1, 1.0])  # zero has no log
    assert not log_axis([1, 100])  # two values: a line, not an axis worth a log
    assert not log_axis(["a", "b", "c"])


def test_top_k_keeps_the_best_percent_of_finished_cells_and_ties_at_the_cut():
    frame = _results()
    best = top_k(frame, "messages", 25)  # 12 finished cells: ceil(3) = 3
    assert list(best["messages"]) == [10.0, 9.0, 8.0, 8.0, 8.0]  # 8 three times: ties kept
    assert (best["status"] == "finished").all()
    low = top_k(frame, "messages", 10, highest=False)
    assert list(low["messages"]) == [4.0, 5.0]  # ceil(1.2) = 2: 4, then 5 (no tie at 5)
    with pytest.raises(ConfigError, match="percent"):
        top_k(frame, "messages", 0)


def test_group_bands_collapse_seeds_into_an_interval_within_the_feasible_range():
    frame = _results()
    bands = group_bands(frame, ["threshold", "recency_penalty"], "messages")
    assert len(bands) == 4
    assert set(bands["band"]) == {"recency_penalty 0", "recency_penalty 0.2"}
    row = bands[(bands["threshold"] == 0.3) & (bands["recency_penalty"] == 0.0)].iloc[0]
    assert row["n"] == 3 and row["mean"] == pytest.approx(5.0)
    # issue 38: 3 repeats give no interval (any would span most of 0 to max_loops - 1), in words
    assert math.isnan(row["ci_low"]) and "too few for an informative interval" in row["note"]
    one = group_bands(frame, ["threshold"], "messages")
    assert list(one["band"]) == ["all cells", "all cells"] and list(one["n"]) == [6, 6]


def test_group_bands_of_equal_repeats_give_no_zero_width_interval():
    frame = _results()
    frame["messages"] = 5
    bands = group_bands(frame, ["threshold"], "messages")
    assert bands["ci_low"].isna().all()
    assert bands["note"].str.contains("no variation").all()


def test_differing_keeps_only_the_columns_that_tell_configurations_apart():
    table = differing(_results())
    assert list(table.columns) == ["threshold", "recency_penalty", "cells"]
    assert list(table["cells"]) == [4, 3, 3, 3]  # the pending cell is a fourth at 0.3/0.0
    full = differing(_results(), only_differs=False)
    assert {"recency_window", "max_loops", "models"} <= set(full.columns)


def test_run_matrix_has_a_column_per_configuration_and_deltas_to_the_baseline():
    values, deltas, base = run_matrix(_results(), "messages",
                                      baseline="threshold 0.6 · recency_penalty 0")
    assert base == "threshold 0.6 · recency_penalty 0"
    assert values.shape == (3, 4)  # three seeds x four configurations
    assert values.loc["task 0 · repeat 1", base] == 7.0
    assert (deltas[base] == 0).all()
    assert deltas.loc["task 0 · repeat 2", "threshold 0.3 · recency_penalty 0"] == -2.0
    _, _, default = run_matrix(_results(), "messages", baseline="no such config")
    assert default == "threshold 0.3 · recency_penalty 0"


def test_bid_stability_is_the_spread_of_each_agents_mean_bid_across_seeds():
    results = _results()
    bids = []
    for run_id, repeat in zip(results["run_id"], results["repeat"], strict=True):
        if run_id is None:
            continue
        bids += [{"run_id": run_id, "agent": "A", "score": 0.5, "outcome": "read"},
                 {"run_id": run_id, "agent": "A", "score": 0.5, "outcome": "read"},
                 {"run_id": run_id, "agent": "B", "score": 0.1 * repeat, "outcome": "read"},
                 {"run_id": run_id, "agent": "B", "score": 0.9, "outcome": "failed"}]
    table = bid_stability(pd.DataFrame(bids), results)
    assert list(table.columns[:3]) == ["threshold", "recency_penalty", "agent"]
    first = table[(table["threshold"] == 0.3) & (table["recency_penalty"] == 0.0)]
    b = first[first["agent"] == "B"].iloc[0]
    a = first[first["agent"] == "A"].iloc[0]
    assert b["seeds"] == 3 and b["mean_bid"] == pytest.approx(0.1)  # the failed 0.9 left out
    assert b["std_bid"] == pytest.approx(0.1) and b["range"] == pytest.approx(0.2)
    assert a["std_bid"] == 0 and a["range"] == 0
    assert list(first["agent"]) == ["B", "A"]  # the least stable first


def test_failures_are_grouped_by_the_bids_outcome_and_error():
    bids = pd.DataFrame([
        {"run_id": "r1", "agent": "A", "outcome": "unreadable", "error": "unreadable: no score"},
        {"run_id": "r1", "agent": "B", "outcome": "failed", "error": "Timeout: timed out"},
        {"run_id": "r2", "agent": "A", "outcome": "failed",
         "error": "RateLimitError: too many requests"},
        {"run_id": "r2", "agent": "B", "outcome": "failed", "error": "APIError: 500"},
        {"run_id": "r2", "agent": "A", "outcome": "read", "error": None},
        {"run_id": "r2", "agent": "A", "outcome": "cached", "error": None},
        {"run_id": "other", "agent": "A", "outcome": "failed", "error": "APIError: 500"},
    ])
    table = failures(bids, pd.DataFrame({"run_id": ["r1", "r2"]}))
    assert list(table["reason"]) == ["unreadable", "provider error", "timeout"]
    assert list(table["bids"]) == [1, 2, 1]
    assert table.set_index("reason").loc["provider error", "agents"] == "A, B"
    assert failure_reason("read", "unreadable: looks like one") is None  # outcome decides
    assert failures(bids[bids["outcome"].isin(["read", "cached"])]).empty
