"""Sweep statistics (issues 21, 38): intervals within each metric's range, comparisons,
importance, multiple-comparison adjustment, and self-describing exports.
Private imports: units with no public name (intervals, compare, importance, export helpers)."""

from __future__ import annotations

import io
import itertools
import json
import math
import random
import zlib

import numpy as np
import pandas as pd
import pytest

from groupchat_core.analysis import speaker_metrics
from groupchat_core.store import RunStore
from groupchat_core.sweeps import (
    METHODS_VERSION,
    NATURES,
    aggregate,
    benjamini_hochberg,
    bootstrap_mean,
    compare_cells,
    compare_values,
    export_meta,
    factor_importance,
    frame_csv,
    holm,
    importance,
    long_frame,
    methods_text,
    metric_interval,
    parse_sweep,
    run_sweep,
    studentized_mean,
    sweep_results,
    t_interval,
    wilson,
)
from groupchat_core.sweeps._compare import (
    cliffs_delta,
    cliffs_delta_interval,
    cohens_d,
    min_attainable_p,
    too_few,
)
from groupchat_core.sweeps._importance import MIN_PER_LEVEL
from groupchat_core.sweeps._intervals import clopper_pearson, t95
from groupchat_core.sweeps._results import METRICS
from tests.helpers.cli import run_cli
from tests.helpers.stores import release_store_engines
from tests.sweeps import PERSONAS as AGENTS

MAX_LOOPS = 6


def expected_range(metric: str, max_loops: int, agents: int) -> tuple[float, float]:
    """Each metric's feasible range, written out independently of _natures.py."""
    return {
        "messages": (0, max_loops - 1), "turns": (1, max_loops - 1),
        "lull_turn": (1, max_loops - 1),
        "longest_monologue": (0, max_loops - 1), "lulled": (0, 1), "evenness": (0, 1),
        "hit_rate": (0, 1), "gini": (0, (agents - 1) / agents),
        "entropy_bits": (0, math.log2(agents)),
    }.get(metric, (0, math.inf))


@pytest.fixture(scope="module")
def edges(tmp_path_factory):
    """threshold 0 (every chat runs to max_loops: counts at their bound, all equal, 0/n lulls),
    1 (every chat lulls on turn 1: n/n, no messages) and 0.5; 5 repeats; and a 1-repeat sweep."""
    path = tmp_path_factory.mktemp("edges") / "edges.db"
    store = RunStore(f"sqlite:///{path}")
    frames = []
    for repeats in (5, 1):
        spec = parse_sweep({"name": f"edges-{repeats}",
                            "base": {"max_loops": MAX_LOOPS, "agents": AGENTS},
                            "grid": {"threshold": [0.0, 0.5, 1.0]}, "tasks": ["Q?"],
                            "repeats": repeats, "concurrency": 2})
        outcome = run_sweep(spec, store)
        assert outcome.status == "finished"
        frames.append(sweep_results(store, outcome.sweep_id))
    store.test_url = f"sqlite:///{path}"
    yield store, frames
    release_store_engines()


def assert_honest(agg: pd.DataFrame) -> None:
    for row in agg.to_dict(orient="records"):
        low, high = expected_range(row["metric"], MAX_LOOPS, 3)
        if math.isnan(row["ci_low"]):
            assert row["note"], row  # no interval always says why
            continue
        assert low - 1e-9 <= row["ci_low"] <= row["mean"] <= row["ci_high"] <= high + 1e-9, row
        assert row["ci_high"] > row["ci_low"], row  # never zero width


def test_edge_sweeps_keep_every_interval_in_range_and_never_zero_width(edges):
    _, (five, one) = edges
    zero = five[five["threshold"] == 0.0]
    assert (zero["messages"] == MAX_LOOPS - 1).all()  # the sweep does hit the bound
    assert (zero["turns"] == MAX_LOOPS - 1).all()  # issue 38: turns top out at max_loops - 1
    assert five["turns"].min() >= 1
    assert (five[five["threshold"] == 1.0]["lulled"] == 1.0).all()  # and n/n lulls
    for frame in (five, one):
        for by in (["threshold"], []):
            assert_honest(aggregate(frame, by=by))
    agg = aggregate(five, by=["threshold"]).set_index(["threshold", "metric"])
    at_bound = agg.loc[(0.0, "messages")]
    assert math.isnan(at_bound["ci_low"])  # not [5, 5]
    assert at_bound["note"].startswith(f"no variation in 5 repeats (all {MAX_LOOPS - 1})")
    assert "up to 52% of chats could differ" in at_bound["note"]
    none_lulled, all_lulled = agg.loc[(0.0, "lulled")], agg.loc[(1.0, "lulled")]
    assert (none_lulled["ci_low"], round(none_lulled["ci_high"], 4)) == (0.0, 0.4345)  # 0/5
    assert (round(all_lulled["ci_low"], 4), all_lulled["ci_high"]) == (0.5655, 1.0)  # 5/5
    assert agg.loc[(1.0, "lull_turn")]["note"].startswith("no variation in 5 repeats (all 1)")
    # lull_turn is defined only for chats that lulled: "no repeats" said of 5 chats misled
    assert agg.loc[(0.0, "lull_turn")]["note"] == "none of the 5 chats lulled"
    assert agg.loc[(0.0, "lull_turn")]["n"] == 0
    single = aggregate(one, by=["threshold"])
    assert (single[single["metric"] != "lulled"]["ci_low"].isna()).all()
    assert set(single[single["metric"] == "messages"]["note"]) == {"one repeat: no interval"}


def test_a_count_near_its_bound_gets_an_interval_that_stops_there():
    values = [5.0, 5.0, 4.0, 5.0, 5.0, 5.0, 3.0]  # messages, max_loops 6: at most 5
    i = metric_interval("messages", values, max_loops=MAX_LOOPS)
    assert i.high <= 5.0 and i.low >= 0.0 and i.low < i.estimate < i.high
    lull = metric_interval("lull_turn", [1.0, 1.0, 2.0, 1.0, 1.0], max_loops=12)
    assert lull.low >= 1.0 and lull.high <= 12.0  # the issue's [0.64, 1.76] is gone
    gini = metric_interval("gini", [0.5, 0.66, 0.66, 0.6, 0.66], agents=3)
    assert gini.high <= 2 / 3 + 1e-12
    entropy = metric_interval("entropy_bits", [1.5, 1.58, 1.2, 1.58, 1.0], agents=3)
    assert entropy.high <= math.log2(3) + 1e-12


def test_the_studentized_bootstrap_covers_at_five_repeats_where_the_percentile_did_not():
    rng = np.random.default_rng(11)
    true = 2 / 7  # the mean of Beta(2, 5)
    samples = [rng.beta(2, 5, size=5).tolist() for _ in range(400)]
    new = [studentized_mean(x, low=0.0, high=1.0, seed=i) for i, x in enumerate(samples)]
    old = [bootstrap_mean(x, seed=i) for i, x in enumerate(samples)]
    new, old = (sum(i.low <= true <= i.high for i in found) / 400 for found in (new, old))
    assert new >= 0.92 > old


def test_studentized_interval_is_reproducible_and_refuses_below_five_repeats():
    data = [0.2, 0.9, 0.95, 1.0, 0.99]
    assert studentized_mean(data, low=0, high=1) == studentized_mean(data, low=0, high=1)
    few = metric_interval("evenness", [0.2, 0.5, 0.4])  # issue 38: was [0, 1] "may under-cover"
    assert math.isnan(few.low) and few.note.startswith("3 repeats are too few for an informative")
    assert metric_interval("total_cost_usd", [0.1, 0.3]).note.endswith("add repeats")
    cost = metric_interval("total_cost_usd", [0.1, 0.3, 0.2, 0.25, 0.4])
    assert cost.low > 0 and cost.note.startswith("below 30 repeats this interval may under-cover")


def reference_holm(p):
    m, order = len(p), sorted(range(len(p)), key=lambda i: p[i])
    out, best = [0.0] * m, 0.0
    for rank, i in enumerate(order):
        best = max(best, min(1.0, (m - rank) * p[i]))
        out[i] = best
    return out


def reference_bh(p):
    """q_(i) = min over j >= i of m p_(j) / j, on the sorted p-values (1-based ranks)."""
    m, order = len(p), sorted(range(len(p)), key=lambda i: p[i])
    ranked = [p[i] for i in order]
    out = [0.0] * m
    for i, index in enumerate(order):
        out[index] = min(1.0, min(m * ranked[j] / (j + 1) for j in range(i, m)))
    return out


@pytest.mark.parametrize("p", [[0.01, 0.04, 0.03, 0.005], [0.2, 0.5, 0.001, 0.04, 0.049],
                               [0.05] * 4])
def test_holm_and_bh_match_their_textbook_definitions(p):
    assert holm(p) == pytest.approx(reference_holm(p))
    assert benjamini_hochberg(p) == pytest.approx(reference_bh(p))
    # statsmodels' documented example values (multipletests, Holm and fdr_bh)
    assert holm([0.01, 0.02, 0.03]) == pytest.approx([0.03, 0.04, 0.04])
    assert benjamini_hochberg([0.01, 0.02, 0.03]) == pytest.approx([0.03, 0.03, 0.03])
    assert holm([0.1, None, 0.02]) == pytest.approx([0.1, None, 0.04])  # missing stays missing


def test_pure_noise_importance_is_adjusted_across_its_rows():
    rng = np.random.default_rng(5)
    frame = pd.DataFrame({"status": "finished", "a": rng.integers(0, 3, 60),
                          "b": rng.integers(0, 2, 60), "messages": rng.normal(5, 1, 60),
                          "turns": rng.normal(5, 1, 60)})
    table = importance(frame, parameters=["a", "b"], metrics=["messages", "turns"],
                       permutations=199)
    assert {"p_holm", "p_bh"} <= set(table.columns)
    assert (table["p_holm"] >= table["p_value"]).all()
    assert list(table["p_holm"]) == pytest.approx(reference_holm(list(table["p_value"])))


def test_a_six_level_grid_axis_is_six_groups_not_five_bins():
    levels = pd.Series(np.repeat([0.1, 0.2, 0.3, 0.4, 0.5, 0.6], 4))
    rng = np.random.default_rng(2)
    values = np.repeat([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], 4) + rng.normal(0, 0.5, 24)
    stats = factor_importance(values.tolist(), levels, permutations=199)
    assert stats["levels"] == 6 and stats["note"] == ""
    groups = [values[i * 4:(i + 1) * 4] for i in range(6)]
    between = sum(len(g) * (g.mean() - values.mean()) ** 2 for g in groups)
    assert stats["eta_squared"] == pytest.approx(between / ((values - values.mean()) ** 2).sum())


def test_the_too_few_rule_is_the_one_applied_and_the_one_stated():
    levels = pd.Series(["x"] * 10 + ["y"] * 10 + ["z"])
    values = [1.0] * 5 + [2.0] * 5 + [3.0] * 5 + [4.0] * 5 + [9.0]
    stats = factor_importance(values, levels, permutations=199)
    assert stats["enough"] and stats["levels"] == 2 and stats["n"] == 20
    assert "left out 1 level(s) with fewer than 2 chats" in stats["note"]
    refused = factor_importance([1.0, 2.0, 3.0], pd.Series(["x", "x", "y"]))
    assert not refused["enough"]
    assert refused["note"] == ("too few to say anything: needs 2+ levels with 2+ finished "
                               "chats each; 1 of 2 level(s) have that (3 chats)")


def test_cells_sharing_seeds_are_compared_paired_by_exact_sign_flips():
    a = [3.0, 5.0, 4.0, 6.0, 5.0, 7.0, 4.0]
    b = [x + d for x, d in zip(a, [1.0, 0.5, 1.5, 1.0, 0.5, 2.0, -0.5], strict=True)]
    rows = [{"status": "finished", "threshold": t, "task_index": 0, "seed": s, "messages": v}
            for t, values in ((0.3, a), (0.6, b)) for s, v in enumerate(values)]
    result = compare_cells(pd.DataFrame(rows), {"threshold": 0.3}, {"threshold": 0.6},
                           "messages")
    diffs = np.array(b) - np.array(a)
    flips = [abs(np.dot(s, diffs)) / 7 for s in itertools.product((1, -1), repeat=7)]
    expected = sum(f >= abs(diffs.mean()) - 1e-12 for f in flips) / len(flips)
    assert result.paired and result.p_value == pytest.approx(expected)
    assert "sign-flip" in result.test
    unpaired = compare_cells(pd.DataFrame(rows), {"threshold": 0.3}, {"threshold": 0.6},
                             "messages", paired=False)
    assert not unpaired.paired and unpaired.p_value > result.p_value  # pairing has power
    few = compare_values(a[:5], b[:5], "messages", paired=True)
    assert not few.enough and "6 pairs suffice" in few.note


def test_effect_sizes_carry_intervals_and_say_when_they_cannot():
    a, b = [3.0, 4.0, 5.0, 6.0, 4.5], [4.0, 5.5, 6.0, 7.0, 5.0, 3.5]
    result = compare_values(a, b, "messages")
    d = cohens_d(a, b)
    se = math.sqrt(11 / 30 + d * d / 22)
    assert (result.cohens_low, result.cohens_high) == pytest.approx(
        (d - 1.959964 * se, d + 1.959964 * se), abs=1e-5)
    delta = cliffs_delta(a, b)
    assert -1 <= result.cliffs_low < delta < result.cliffs_high <= 1
    assert cliffs_delta_interval([1.0], [2.0, 3.0, 4.0, 5.0, 6.0]) == (None, None)  # 1 vs 5
    apart = compare_values([1.0, 2.0], [5.0, 6.0, 7.0], "messages")
    assert apart.cliffs_delta == 1.0 and apart.cliffs_low is None
    assert "do not overlap, so it has no interval" in apart.note


def test_one_rule_for_chats_without_messages(edges):
    _, (five, _) = edges
    silent = five[five["threshold"] == 1.0]
    assert (silent["messages"] == 0).all() and (silent["turns"] == 1).all()
    # before: entropy 0 bits (a "monologue") while evenness and Gini left the chat out
    assert silent[["entropy_bits", "evenness", "gini"]].isna().all().all()
    agg = aggregate(five, by=["threshold"]).set_index(["threshold", "metric"])
    assert {agg.loc[(1.0, m)]["n"] for m in ("entropy_bits", "evenness", "gini")} == {0}
    empty = speaker_metrics(pd.DataFrame({"turn": pd.Series([], dtype=int),
                                          "winner": pd.Series([], dtype=object)}))
    assert (empty.entropy_bits, empty.evenness, empty.gini) == (None, None, None)


def test_calls_needed_and_made_are_apart_and_importance_skips_the_cache(edges):
    _, (five, _) = edges
    done = five[five["status"] == "finished"]
    assert (done["calls_needed"] == done["calls_made"] + done["cache_hits"]).all()
    assert (done["calls_made"] == done["total_calls"]).all()
    assert done["cache_hits"].sum() > 0  # repeats share prompts: the cache answered some
    table = importance(five, permutations=199)
    assert "calls_needed" in set(table["metric"])
    assert not {"calls_made", "hit_rate", "total_cost_usd"} & set(table["metric"])


def test_exports_carry_spec_seeds_settings_models_and_a_methods_paragraph(edges):
    store, _ = edges
    sweep_id = store.list_sweeps().sort_values("created_at")["sweep_id"].iloc[0]
    meta = export_meta(store, sweep_id)
    assert meta["spec"]["repeats"] == 5 and meta["seeds"]["repeat_seeds"] == [0, 1, 2, 3, 4]
    assert meta["seeds"]["sample_seed"] == 0 and meta["simulated"] is True
    assert meta["statistics"]["confidence"] == 0.95
    assert meta["statistics"]["intervals"]["bootstrap_resamples"] == 2000
    assert set(meta["statistics"]["importance"]) >= {"test", "seed"}  # issue 38: analytic p
    assert meta["statistics"]["intervals"]["sd_floor"] == 0.25
    first = next(iter(meta["models"].values()))
    assert first == {"Optimist": "sim/eager", "Pessimist": "sim/balanced",
                     "Realist": "sim/reserved"}
    assert meta["methods"]["version"] == METHODS_VERSION
    assert meta["methods"]["text"].endswith(f"[{METHODS_VERSION}]")
    assert "studentized" in meta["methods"]["text"] and "Holm" in meta["methods"]["text"]
    assert "92 %" not in meta["methods"]["text"]  # issue 38: a promise the study did not keep
    assert "Spearman" in meta["methods"]["text"]
    results = sweep_results(store, sweep_id)
    long = long_frame(results, aggregate(results))
    assert len(long) == len(results) * len(METRICS)
    assert long.groupby(["cell", "metric"]).size().max() == 1  # one row per cell and metric
    assert {"value", "ci_low", "note", "simulated", "models", "seed", "sample_seed",
            "confidence", "bootstrap_seed"} <= set(long.columns)


def test_the_cli_exports_long_parquet_importance_compare_and_methods(edges, capsys, tmp_path,
                                                                     monkeypatch):
    import pyarrow.parquet as pq

    from groupchat_core.sweeps._export import read_parquet_meta

    store, _ = edges
    monkeypatch.setenv("GROUPCHAT_DB", store.test_url)
    sweep_id = store.list_sweeps().sort_values("created_at")["sweep_id"].iloc[0]
    code, out, err = run_cli(capsys, "sweep", "export", sweep_id, "--table", "importance",
                             "--format", "json")
    data = json.loads(out)
    assert code == 0, err
    assert data["meta"]["seeds"]["sample_seed"] == 0 and data["rows"][0]["p_holm"] is not None
    code, out, _ = run_cli(capsys, "sweep", "export", sweep_id, "--table", "compare", "--a",
                           "threshold=0", "--b", "threshold=1")
    table = pd.read_csv(io.StringIO(out), comment="#")  # past the export's `# ` header
    assert code == 0 and set(table["metric"]) == set(METRICS)
    assert table.set_index("metric").loc["messages", "paired"]  # same seeds on both sides
    assert {"p_holm", "p_bh", "cliffs_low"} <= set(table.columns)
    target = tmp_path / "long.parquet"
    code, _, err = run_cli(capsys, "sweep", "export", sweep_id, "--table", "long", "--format",
                           "parquet", "-o", str(target))
    assert code == 0, err
    frame = pq.read_table(target).to_pandas()
    assert len(frame) == 15 * len(METRICS) and frame["simulated"].all()
    meta = read_parquet_meta(target.read_bytes())
    assert meta["spec"]["grid"]["threshold"] == [0.0, 0.5, 1.0]
    wide = tmp_path / "cells.csv"
    code, _, _ = run_cli(capsys, "sweep", "export", sweep_id, "-o", str(wide))
    side = json.loads((tmp_path / "cells.csv.meta.json").read_text())
    assert code == 0 and side["methods"]["version"] == METHODS_VERSION
    assert {"seed", "sample_seed", "models", "simulated", "confidence"} <= set(
        pd.read_csv(wide, comment="#").columns)
    code, out, _ = run_cli(capsys, "sweep", "export", sweep_id, "--table", "methods")
    assert code == 0 and out.strip().endswith(f"[{METHODS_VERSION}]")
    code, _, err = run_cli(capsys, "sweep", "export", sweep_id, "--format", "parquet")
    assert code == 2 and "give -o FILE" in err
    code, _, err = run_cli(capsys, "sweep", "export", sweep_id, "--table", "compare")
    assert code == 2 and err.count("\n") == 1 and "--a PARAM=VALUE" in err
    cells = ["--a", "threshold=0", "--b", "threshold=1"]
    for extra in (["--table", "importance"], ["--table", "compare", *cells]):
        code, _, err = run_cli(capsys, "sweep", "export", sweep_id, *extra, "--metric", "nope")
        assert code == 2 and err.count("\n") == 1 and "'nope'" in err, err


def test_sims_reached_through_the_model_axis_mark_the_export_simulated(sqlite_store):
    spec = parse_sweep({"name": "axis", "base": {"max_loops": 3, "agents": [
        {"agent_name": "A", "model_name": "sim/eager"},
        {"agent_name": "B", "model_name": "sim/balanced"}]},
        "grid": {"model": ["sim/reserved"]}, "tasks": ["Q?"], "repeats": 1})
    outcome = run_sweep(spec, sqlite_store)
    meta = export_meta(sqlite_store, outcome.sweep_id)
    assert meta["simulated"] is True
    assert set(next(iter(meta["models"].values())).values()) == {"sim/reserved"}
    results = sweep_results(sqlite_store, outcome.sweep_id)
    assert results["models"].iloc[0] == "A=sim/reserved; B=sim/reserved"


@pytest.mark.parametrize("metric", [m for m in METRICS if m != "lulled"])
def test_seeded_property_every_interval_stays_in_range_for_values_at_the_edges(metric):
    """300 seeded samples per metric, n 1-12, values at the range's ends and between."""
    rng = np.random.default_rng(zlib.crc32(metric.encode()))
    for _ in range(300):
        max_loops, agents = int(rng.integers(2, 15)), int(rng.integers(2, 6))
        low, high = expected_range(metric, max_loops, agents)
        top = high if math.isfinite(high) else 50.0
        points = np.array([low, top, low + (top - low) * rng.random(), top - 1e-9])
        values = rng.choice(points, size=int(rng.integers(1, 13))).tolist()
        if metric in ("messages", "turns", "lull_turn", "longest_monologue"):
            values = [float(round(v)) for v in values]
        i = metric_interval(metric, values, max_loops=max_loops, agents=agents)
        if math.isnan(i.low):
            assert i.note and math.isnan(i.high)
            continue
        assert low - 1e-9 <= i.low <= i.estimate <= i.high <= high + 1e-9, (values, i)
        assert i.high > i.low, (values, i)


# --- interval methods against independently computed values ---

Z = 1.959963984540054  # the 0.975 normal quantile, as printed in every table


def textbook_wilson(k: int, n: int) -> tuple[float, float]:
    """Wilson (1927) as in Agresti & Coull (1998), eq. 2, written out independently."""
    p = k / n
    centre = p + Z * Z / (2 * n)
    spread = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n))
    return (centre - spread) / (1 + Z * Z / n), (centre + spread) / (1 + Z * Z / n)


@pytest.mark.parametrize(("k", "n"), [(0, 5), (5, 5), (3, 10), (1, 1), (17, 40)])
def test_wilson_matches_the_textbook_formula(k, n):
    interval = wilson(k, n)
    low, high = textbook_wilson(k, n)
    assert interval.method == "wilson" and interval.estimate == pytest.approx(k / n)
    assert interval.low == pytest.approx(max(0.0, low), abs=1e-12)
    assert interval.high == pytest.approx(min(1.0, high), abs=1e-12)


def test_wilson_known_values_never_zero_width_never_outside_0_1():
    assert (round(wilson(0, 5).low, 4), round(wilson(0, 5).high, 4)) == (0.0, 0.4345)
    assert (round(wilson(5, 5).low, 4), round(wilson(5, 5).high, 4)) == (0.5655, 1.0)
    assert (round(wilson(3, 10).low, 4), round(wilson(3, 10).high, 4)) == (0.1078, 0.6032)
    for n in range(1, 40):
        for k in range(n + 1):
            i = wilson(k, n)
            assert 0.0 <= i.low < i.high <= 1.0 and i.low <= i.estimate <= i.high
    with pytest.raises(ValueError, match="successes <= n"):  # bad counts are refused
        wilson(6, 5)


def test_clopper_pearson_known_values_and_its_defining_tail_identity():
    # closed forms at the ends: (alpha/2)^(1/n)
    assert clopper_pearson(0, 5).high == pytest.approx(1 - 0.025 ** (1 / 5), abs=1e-9)
    assert clopper_pearson(5, 5).low == pytest.approx(0.025 ** (1 / 5), abs=1e-9)
    three = clopper_pearson(3, 10)  # published: 0.0667, 0.6525
    assert (round(three.low, 4), round(three.high, 4)) == (0.0667, 0.6525)

    def tail_at_least(k, n, p):
        return sum(math.comb(n, i) * p ** i * (1 - p) ** (n - i) for i in range(k, n + 1))

    i = clopper_pearson(7, 23)
    assert tail_at_least(7, 23, i.low) == pytest.approx(0.025, abs=1e-9)
    assert 1 - tail_at_least(8, 23, i.high) == pytest.approx(0.025, abs=1e-9)
    assert i.low < wilson(7, 23).low and i.high > wilson(7, 23).high  # exact is wider


def test_t_interval_is_the_student_interval_and_is_cut_at_the_floor():
    values = [4.0, 6.0, 5.0, 7.0]
    i = t_interval(values)
    sd = float(np.std(values, ddof=1))
    assert i.method == "t"
    assert (i.low, i.high) == pytest.approx((5.5 - 3.182 * sd / 2, 5.5 + 3.182 * sd / 2))
    cut = t_interval([0.0, 0.0, 3.0], floor=0.0)
    assert cut.low == 0.0 and cut.method == "t, cut at 0" and cut.high > 1.0
    assert math.isnan(t_interval([2.0]).low)
    assert (t95(1), t95(30), t95(45), t95(5000), t95(10_000)) == (
        12.706, 2.042, 2.021, 1.96, 1.96)


def test_bootstrap_is_reproducible_bounded_and_covers_about_95_percent():
    data = [0.2, 0.9, 0.95, 1.0, 0.99]
    first, again = bootstrap_mean(data), bootstrap_mean(data)
    assert first == again and first.method == "bootstrap"
    assert bootstrap_mean(data, seed=1) != first
    assert min(data) <= first.low <= first.estimate <= first.high <= max(data)
    # coverage: the mean of Beta(2, 5) is 2/7; 300 samples of 25
    rng, true, hits = np.random.default_rng(7), 2 / 7, 0
    for i in range(300):
        sample = rng.beta(2, 5, size=25)
        interval = bootstrap_mean(sample.tolist(), seed=i, resamples=1000)
        hits += interval.low <= true <= interval.high
    assert 0.88 <= hits / 300 <= 0.99


def test_each_metric_gets_its_method_and_stays_within_its_bounds():
    assert metric_interval("lulled", [1.0] * 5).method == "wilson"
    assert metric_interval("lulled", [1.0] * 5).low > 0.5  # 5/5 is not [1, 1]
    rate = metric_interval("lulled", [1, 0, 0, 0, 0, 0, 1, 0, 1, 0])
    assert rate.low > 0 and rate.high < 1  # 0.3 has no negative bound
    rng = random.Random(3)
    for _ in range(50):  # issue 38: below 5 repeats no interval, and the note says so
        near_one = [min(1.0, 0.9 + rng.random() / 10) for _ in range(rng.randint(2, 8))]
        for metric in ("evenness", "gini", "hit_rate"):
            i = metric_interval(metric, near_one)
            assert i.method.startswith("bootstrap-t")
            if len(near_one) < 5:
                assert math.isnan(i.low) and "too few for an informative interval" in i.note
            else:
                assert 0.0 <= i.low <= i.high <= 1.0
    counts = metric_interval("messages", [0, 0, 1, 5, 0], max_loops=10)
    assert counts.method == "bootstrap-t, cut to range" and counts.low == 0.0
    assert counts.high < 9.0  # at most max_loops - 1 messages, and not the whole range
    whole = metric_interval("messages", [0, 0, 1, 9, 0], max_loops=10)  # values span 0 to 9
    assert math.isnan(whole.low) and "whole feasible range [0, 9]" in whole.note
    assert {n.interval_method for n in NATURES.values()} == {"wilson", "bootstrap-t"}
    assert "Wilson" in methods_text() and "lulled" in methods_text()


# --- on a recorded threshold × order × roster sweep; importance and two-cell comparisons ---


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
    rng = np.random.default_rng(2)
    for _ in range(200):
        a = list(rng.integers(0, 5, rng.integers(1, 9)).astype(float))
        b = list(rng.integers(0, 5, rng.integers(1, 9)).astype(float))
        brute = (sum(y > x for x in a for y in b) - sum(y < x for x in a for y in b)) / (
            len(a) * len(b))
        assert cliffs_delta(a, b) == pytest.approx(brute, abs=1e-12)
    assert cliffs_delta([0.1 + 0.2], [0.3]) == 0.0  # equal up to rounding is a tie
