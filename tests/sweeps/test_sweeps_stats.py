"""Sweep statistics on recorded sweeps: bounded intervals in the export, parameter importance,
two-cell comparisons, and the "too few repeats" rules. Private imports (`sweeps._compare`,
`sweeps._importance`): units with no public name."""

from __future__ import annotations

import io
import math

import numpy as np
import pandas as pd
import pytest

from groupchat_core.store import RunStore
from groupchat_core.sweeps import (
    NATURES,
    aggregate,
    compare_cells,
    compare_values,
    factor_importance,
    frame_csv,
    importance,
    parse_sweep,
    run_sweep,
    sweep_results,
)
from groupchat_core.sweeps._compare import min_attainable_p, too_few
from groupchat_core.sweeps._importance import MIN_PER_LEVEL
from tests.helpers.stores import release_store_engines

AGENTS = [{"agent_name": n, "model_name": m} for n, m in (
    ("Optimist", "sim/eager"), ("Pessimist", "sim/balanced"), ("Realist", "sim/reserved"))]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """threshold × order × roster, 3 repeats, recorded once for the module."""
    path = tmp_path_factory.mktemp("stats") / "stats.db"
    store = RunStore(f"sqlite:///{path}")
    spec = parse_sweep({"name": "stats", "base": {"max_loops": 8, "agents": AGENTS},
                        "grid": {"threshold": [0.3, 0.6], "order": {"sample": 2},
                                 "roster": {"sizes": [2, 3]}},
                        "tasks": ["Should hospitals adopt AI diagnosis?"], "repeats": 3,
                        "concurrency": 4})
    outcome = run_sweep(spec, store)
    assert outcome.status == "finished"
    yield sweep_results(store, outcome.sweep_id)
    release_store_engines()


def test_every_interval_in_the_export_lies_within_its_metrics_bounds(recorded):
    for by in (["threshold"], ["threshold", "order"], ["roster"], ["threshold", "roster",
                                                                      "order"]):
        agg = aggregate(recorded, by=by)
        shown = agg[agg["ci_low"].notna()]
        assert not shown.empty
        for _, row in shown.iterrows():
            nature = NATURES[row["metric"]]
            assert row["ci_low"] <= row["mean"] <= row["ci_high"], row.to_dict()
            if nature.low is not None:
                assert row["ci_low"] >= nature.low, row.to_dict()
            if nature.high is not None:
                assert row["ci_high"] <= nature.high, row.to_dict()
            if row["metric"] == "entropy_bits":  # at most log2(agents) of the chats
                assert row["ci_high"] <= math.log2(3) + 1e-12
            assert row["interval_method"].split(",")[0] == nature.interval_method
    lull = aggregate(recorded, by=["threshold"])
    lull = lull[lull["metric"] == "lulled"]
    assert ((lull["ci_high"] - lull["ci_low"]) > 0).all()  # never [1, 1] or [0, 0]
    exported = pd.read_csv(io.StringIO(frame_csv(lull)))
    assert set(exported["interval_method"]) == {"wilson"}


def test_a_rosters_evenness_is_over_its_own_agents(recorded):
    pairs = recorded[(recorded["agents"] == 2) & recorded["evenness"].notna()]
    assert not pairs.empty
    for _, row in pairs.iterrows():  # two agents: entropy in bits is evenness (log2 2 = 1)
        assert row["evenness"] == pytest.approx(row["entropy_bits"])


def test_importance_ranks_the_threshold_first_for_the_lull_rate(recorded):
    table = importance(recorded, metrics=["lulled", "messages"], permutations=199)
    assert set(table["parameter"]) == {"threshold", "order", "roster"}
    top = table[table["metric"] == "lulled"].iloc[0]
    assert top["parameter"] == "threshold" and top["enough"]
    assert top["eta_squared"] >= 0.3 and top["p_value"] <= 0.01
    again = importance(recorded, metrics=["lulled", "messages"], permutations=199)
    pd.testing.assert_frame_equal(table, again)  # seeded


def test_importance_on_known_data_and_its_too_few_rule():
    rng = np.random.default_rng(0)
    levels = pd.Series(["a"] * 10 + ["b"] * 10)
    strong = [*rng.normal(0, 0.1, 10), *rng.normal(5, 0.1, 10)]
    noise = list(rng.normal(0, 1, 20))
    hit = factor_importance(strong, levels)
    assert hit["enough"] and hit["eta_squared"] > 0.99 and hit["p_value"] < 0.01
    miss = factor_importance(noise, levels)
    assert miss["enough"] and miss["p_value"] > 0.05 and miss["omega_squared"] < 0.1
    # one chat at a level: no figures, a note
    few = factor_importance([1.0, 2.0, 3.0], pd.Series(["a", "a", "b"]))
    assert not few["enough"] and few["eta_squared"] is None and "too few" in str(few["note"])
    just = factor_importance([1.0, 2.0, 3.0, 4.0], pd.Series(["a", "a", "b", "b"]))
    assert just["enough"] and MIN_PER_LEVEL == 2
    # a continuous parameter (random search): a rank correlation, not 5 quantile bins (issue
    # 38: the bins grouped every drawn axis by the same samples)
    ranked = factor_importance(list(range(40)), pd.Series(np.linspace(0, 1, 40)))
    assert ranked["test"].startswith("Spearman rank correlation")
    assert ranked["rho"] == pytest.approx(1.0) and ranked["p_value"] < 0.001


def test_the_too_few_threshold_is_the_smallest_attainable_p():
    assert min_attainable_p(3, 3) == pytest.approx(2 / 20)
    assert min_attainable_p(4, 4) == pytest.approx(2 / 70)
    assert min_attainable_p(3, 4) == pytest.approx(1 / 35)
    assert too_few(3, 3) is not None and "4 vs 4" in too_few(3, 3)
    assert too_few(4, 4) is None and too_few(3, 4) is None
    assert too_few(1, 30) is not None
    small = compare_values([1, 2, 3], [7, 8, 9], "messages")
    assert not small.enough and small.p_value is None and "too few" in small.note
    assert small.cliffs_delta == 1.0  # the effect size is still shown


def test_exact_permutation_p_matches_enumeration_by_hand():
    a, b = [1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]
    result = compare_values(a, b, "messages")
    assert result.p_value == pytest.approx(2 / 70)  # only the split itself and its mirror
    assert "exact" in result.test and result.cliffs_delta == 1.0
    assert result.cohens_d == pytest.approx(4 / float(np.std(a, ddof=1)))


def test_rates_compare_by_difference_in_proportions_within_minus_one_to_one():
    result = compare_values([0, 0, 0, 0, 0], [1, 1, 1, 1, 1], "lulled")
    assert result.difference == 1.0 and result.cliffs_delta is None
    assert -1.0 <= result.difference_low < 1.0 and result.difference_high == 1.0
    assert result.p_value == pytest.approx(2 / 252)


def test_comparing_two_cells_of_a_recorded_sweep(recorded):
    result = compare_cells(recorded, {"threshold": 0.3}, {"threshold": 0.6}, "messages")
    assert result.n_a == result.n_b == 24 and result.enough
    assert result.difference < 0 and result.p_value < 0.05 and "permutation" in result.test
    assert compare_cells(recorded, {"threshold": 0.3}, {"threshold": 0.6}, "messages") == result
    one = recorded[recorded["status"] == "finished"].iloc[0]
    cell = {"threshold": one["threshold"], "order": one["order"], "roster": one["roster"]}
    tiny = compare_cells(recorded, cell, {**cell, "threshold": 0.9 - one["threshold"]},
                         "evenness")
    assert tiny.n_a == 3 and not tiny.enough and "too few" in tiny.note
    with pytest.raises(ValueError, match="unknown result columns"):
        compare_cells(recorded, {"colour": 1}, {"colour": 2}, "messages")


def test_cliffs_delta_matches_the_pairwise_definition_with_ties():
    from groupchat_core.sweeps._compare import cliffs_delta

    rng = np.random.default_rng(2)
    for _ in range(200):
        a = list(rng.integers(0, 5, rng.integers(1, 9)).astype(float))
        b = list(rng.integers(0, 5, rng.integers(1, 9)).astype(float))
        brute = (sum(y > x for x in a for y in b) - sum(y < x for x in a for y in b)) / (
            len(a) * len(b))
        assert cliffs_delta(a, b) == pytest.approx(brute, abs=1e-12)
    assert cliffs_delta([0.1 + 0.2], [0.3]) == 0.0  # equal up to rounding is a tie
