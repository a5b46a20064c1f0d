"""Outcome against cost and dynamics (issue 20 item 4) and the numbers behind the Sweeps page's
views, on hand-worked frames and sim sweeps. Private imports: units with no public name."""

from __future__ import annotations

import csv
import io
import json
import math

import numpy as np
import pandas as pd
import pytest

from groupchat_core import ConfigError
from groupchat_core.cli import main
from groupchat_core.outcomes import du_math_tasks
from groupchat_core.sweeps import (
    SweepSpec,
    accuracy_table,
    bid_stability,
    differing,
    equality_outcome,
    failures,
    group_bands,
    log_axis,
    run_matrix,
    run_sweep,
    runs_outcomes,
    sweep_results,
    top_k,
    wilson,
)
from groupchat_core.sweeps._outcomes import correlation, scored_chats
from groupchat_core.sweeps._views import failure_reason

pytestmark = pytest.mark.usefixtures("fresh_engines")
TRIO = [{"agent_name": n, "model_name": f"sim/{m}"}
        for n, m in (("A", "balanced"), ("B", "eager"), ("C", "reserved"))]


def _du_spec(name: str, strategies: list[str], agents: list[dict] = TRIO, max_loops: int = 4,
             **extra: object) -> SweepSpec:
    """One cell per strategy on 3 Du problems, one at a time."""
    return SweepSpec.model_validate({
        "name": name, "base": {"max_loops": max_loops, "agents": agents},
        "grid": {"strategy": strategies}, "tasks": [t.model_dump() for t in du_math_tasks(3)],
        "concurrency": 1, **extra})


def export(url: str, sweep_id: str) -> list[str]:
    return ["--db", url, "sweep", "export", sweep_id, "--table", "accuracy"]


def _frame() -> pd.DataFrame:
    """Two strategies: bidding 3 of 4 right, round_robin 1 of 4; one unscored and one
    unfinished cell that must not count."""
    rows = []
    for strategy, right, calls, gini in (("bidding", [1, 1, 1, 0], 6, [0.1, 0.2, 0.1, 0.5]),
                                         ("round_robin", [1, 0, 0, 0], 2, [0.0, 0.4, 0.6, 0.5])):
        for i, c in enumerate(right):
            rows.append({"strategy": strategy, "status": "finished", "correct": float(c),
                         "calls_needed": calls, "total_prompt_tokens": 100,
                         "total_completion_tokens": 20, "total_cost_usd": 0.01,
                         "gini": gini[i], "evenness": 1 - gini[i], "simulated": False,
                         "cell": f"{strategy}-{i}", "run_id": f"r-{strategy}-{i}"})
    rows.append({**rows[0], "correct": math.nan, "cell": "unscored"})
    rows.append({**rows[0], "status": "error", "cell": "failed"})
    return pd.DataFrame(rows)


def test_accuracy_per_strategy_counts_only_scored_finished_chats() -> None:
    table = accuracy_table(_frame(), by=["strategy"]).set_index("strategy")
    bidding, robin = table.loc["bidding"], table.loc["round_robin"]
    assert (bidding["n"], bidding["correct"], bidding["accuracy"]) == (4, 3, 0.75)
    assert (robin["n"], robin["correct"], robin["accuracy"]) == (4, 1, 0.25)
    expected = wilson(3, 4)
    assert (bidding["ci_low"], bidding["ci_high"]) == (expected.low, expected.high)
    assert bidding["interval_method"] == "wilson"
    # totals over the group, divided by its correct answers
    assert bidding["calls"] == 24 and bidding["calls_per_correct"] == 8
    assert robin["calls"] == 8 and robin["calls_per_correct"] == 8
    assert bidding["tokens"] == 480 and bidding["tokens_per_correct"] == 160
    assert robin["tokens_per_correct"] == 480
    assert bidding["cost_per_correct"] == pytest.approx(0.04 / 3)


def test_no_correct_answer_gives_no_cost_per_correct_and_says_why() -> None:
    frame = _frame()
    frame["correct"] = frame["correct"].where(frame["correct"].isna(), 0.0)
    row = accuracy_table(frame, by=["strategy"]).iloc[0]
    assert row["correct"] == 0 and row["ci_low"] == 0.0 and row["ci_high"] > 0.4
    assert math.isnan(row["calls_per_correct"]) and "no correct answer" in row["note"]


def test_simulated_groups_say_so() -> None:
    frame = _frame()
    frame.loc[frame["strategy"] == "bidding", "simulated"] = True
    table = accuracy_table(frame, by=["strategy"]).set_index("strategy")
    assert bool(table.loc["bidding", "simulated"]) is True
    assert "simulated" in table.loc["bidding", "note"]
    assert bool(table.loc["round_robin", "simulated"]) is False


def test_correlation_matches_a_hand_computation() -> None:
    x, y = [0.0, 0.2, 0.4, 0.6, 0.8], [1.0, 1.0, 0.0, 1.0, 0.0]
    # mx = 0.4, my = 0.6; sxy = -0.4; sxx = 0.4; syy = 1.2 -> r = -0.4 / sqrt(0.48)
    result = correlation(x, y, min_chats=3)  # the default refuses below 20 chats (issue 38)
    assert math.isnan(correlation(x, y).r) and "no r below 20" in correlation(x, y).note
    r = -0.4 / math.sqrt(0.48)
    assert result.r == pytest.approx(r) and result.n == 5
    half = 1.959964 / math.sqrt(2)
    assert result.low == pytest.approx(math.tanh(math.atanh(r) - half), abs=1e-5)
    assert result.high == pytest.approx(math.tanh(math.atanh(r) + half), abs=1e-5)
    assert "r = -0.58" in result.text("Gini", "correct")


def test_no_correlation_when_a_side_does_not_vary() -> None:
    flat = correlation([0.0, 0.0, 0.0, 0.0], [1.0, 0.0, 1.0, 0.0], min_chats=3)
    assert math.isnan(flat.r) and "equality takes one value" in flat.note
    assert "No correlation" in flat.text("Gini", "correct")
    assert math.isnan(correlation([0.1, 0.2], [1.0, 0.0]).r)


def test_equality_outcome_points_are_the_scored_chats() -> None:
    points, result = equality_outcome(_frame(), "gini", "correct")
    assert len(points) == 8 and list(points.columns[-2:]) == ["gini", "correct"]
    # issue 38: two strategies are not pooled, and 4 chats each are below 20: no r at all
    assert math.isnan(result.r) and "not pooled across 2 strategies" in result.note
    assert "bidding: no r (4 chat(s) with both values; no r below 20)" in result.note
    with pytest.raises(Exception, match="equality must be one of"):
        equality_outcome(_frame(), "entropy")


def _clustered(tasks: int, cells: int, effect: float, seed: int) -> tuple[list, list, list]:
    """Chats of `tasks` tasks x `cells` cells: a task-level shock moves equality and outcome
    together (within-task chats are alike), plus chat noise."""
    rng = np.random.default_rng(seed)
    x, y, task = [], [], []
    for t in range(tasks):
        shock = rng.normal()
        for _ in range(cells):
            x.append(0.3 + 0.1 * shock + 0.05 * rng.normal())
            y.append(float(rng.random() < 1 / (1 + math.exp(-(effect + 1.5) * shock))))
            task.append(f"t{t}")
    return x, y, task


def test_the_cluster_bootstrap_is_wider_than_fisher_on_tasks_x_cells() -> None:
    x, y, task = _clustered(100, 12, 0.0, 4)  # the 1,200 chats = 100 tasks x 12 cells
    fisher, clustered = correlation(x, y), correlation(x, y, task)
    assert clustered.r == pytest.approx(fisher.r)
    assert "cluster bootstrap over 100 tasks" in clustered.method
    assert clustered.high - clustered.low > 1.5 * (fisher.high - fisher.low)
    few = correlation(x[:96], y[:96], task[:96])  # 8 tasks: r, but no interval
    assert not math.isnan(few.r) and math.isnan(few.low) and "needs 10+ tasks" in few.note
    again = correlation(x, y, task)
    assert (again.low, again.high) == (clustered.low, clustered.high)  # seeded


def test_the_clustered_interval_covers_where_fisher_does_not() -> None:
    """Coverage: the process's true r, from one big sample, against 40 sweeps of 20 x 12."""
    bx, by, _ = _clustered(4000, 12, 0.0, 99)
    truth = correlation(bx, by).r
    fisher_hits = cluster_hits = 0
    for seed in range(40):
        x, y, task = _clustered(20, 12, 0.0, seed)
        f, c = correlation(x, y), correlation(x, y, task)
        fisher_hits += f.low <= truth <= f.high
        cluster_hits += c.low <= truth <= c.high
    assert cluster_hits >= 34 > fisher_hits  # about 95 % vs far below


def test_a_strategy_sweep_on_sims_exports_the_accuracy_table(capsys, store) -> None:
    """Three strategies on sims: the results carry the strategy, and `sweep export --table
    accuracy` gives one row per strategy, simulated."""
    agents = [{"agent_name": n, "model_name": m, "system_prompt": f"You are {n}."}
              for n, m in (("Solver", "sim/balanced"), ("Checker", "sim/reserved"))]
    spec = _du_spec("strategies", ["bidding", "round_robin", "all_speak"], agents, max_loops=3)
    outcome = run_sweep(spec, store)
    results = sweep_results(store, outcome.sweep_id)
    assert sorted(set(results["strategy"])) == ["all_speak", "bidding", "round_robin"]
    assert len(scored_chats(results)) == 9
    table = accuracy_table(results)
    assert list(table["strategy"]) == ["all_speak", "bidding", "round_robin"]
    assert list(table["n"]) == [3, 3, 3] and table["simulated"].all()
    for row in table.itertuples():
        right = int(results.loc[results["strategy"] == row.strategy, "correct"].sum())
        assert row.correct == right

    capsys.readouterr()
    assert main(export(store.url, outcome.sweep_id)) == 0
    rows = list(csv.DictReader(line for line in io.StringIO(capsys.readouterr().out)
                               if not line.startswith("# ")))  # past the `# ` header
    assert [r["strategy"] for r in rows] == ["all_speak", "bidding", "round_robin"]
    assert all(r["simulated"] == "True" and r["interval_method"] == "wilson" for r in rows)
    assert main([*export(store.url, outcome.sweep_id), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["meta"]["sweep"]["simulated"] is True


def test_accuracy_export_of_an_unscored_sweep_is_one_line(capsys, store) -> None:
    spec = SweepSpec.model_validate({
        "name": "plain", "tasks": ["Plan it."], "grid": {"threshold": [0.2, 0.4]},
        "base": {"max_loops": 2, "agents": [{"agent_name": n, "model_name": "sim/eager"}
                                            for n in ("A", "B")]}})
    outcome = run_sweep(spec, store)
    capsys.readouterr()
    assert main(export(store.url, outcome.sweep_id)) != 0
    err = capsys.readouterr().err
    assert "needs scored tasks" in err and "Traceback" not in err


def test_stored_runs_give_the_same_rows_as_the_sweep_results(store) -> None:
    """runs_outcomes (for Analysis) gives the same verdicts, Gini, evenness and calls as
    sweep_results for the same runs, so the same table follows."""
    spec = _du_spec("pair", ["bidding", "round_robin"])
    results = sweep_results(store, run_sweep(spec, store).sweep_id)
    stored = runs_outcomes(store).set_index("run_id")
    assert set(stored.index) == set(results["run_id"])
    for row in results.itertuples():
        again = stored.loc[row.run_id]
        assert (again["correct"], again["gini"], again["evenness"]) == pytest.approx(
            (row.correct, row.gini, row.evenness))
        assert again["calls_needed"] == row.calls_needed and bool(again["simulated"])
    ours, theirs = accuracy_table(stored.reset_index(), by=[]), accuracy_table(results, by=[])
    assert ours[["n", "correct", "calls"]].equals(theirs[["n", "correct", "calls"]])
    assert runs_outcomes(store, run_ids=["nope"]).empty


def test_calls_needed_on_a_warm_cache_are_the_calls_made_on_a_cold_one(store) -> None:
    """bid_then_speak's winner makes two calls a turn in one bid row, both cached on sims;
    calls_needed counts both: a warm cache needs exactly a cold one's calls, everywhere."""
    def calls(cache: bool) -> pd.DataFrame:
        spec = _du_spec(f"cache-{cache}", ["bidding", "bid_then_speak"], bid_cache=cache)
        results = sweep_results(store, run_sweep(spec, store).sweep_id)
        return results.set_index(["strategy", "task_id"]).sort_index()

    cold, warm = calls(False), calls(True)
    assert (cold["calls_needed"] == cold["calls_made"]).all()
    assert warm["cache_hits"].sum() > 0
    assert warm["calls_needed"].tolist() == cold["calls_needed"].tolist()
    speak = cold.loc["bid_then_speak"]
    assert (speak["calls_needed"] == speak["turns"] * 3 + speak["messages"]).all()
    stored = runs_outcomes(store, run_ids=list(warm["run_id"])).set_index("run_id")
    assert stored.loc[list(warm["run_id"]), "calls_needed"].tolist() == \
        warm["calls_needed"].tolist()
    assert accuracy_table(warm.reset_index())["calls"].tolist() == \
        accuracy_table(cold.reset_index())["calls"].tolist()


# --- the numbers behind the Sweeps page's exploring views, on a frame worked by hand -------------


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
