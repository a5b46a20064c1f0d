"""The Sweeps page's pure parts for the new axes and statistics: spec building, labels,
comparison text, interval charts along any axis, importance bars."""

from __future__ import annotations

import pandas as pd
import pytest

from groupchat_core import ConfigError
from groupchat_core.sweeps import aggregate, compare_values, importance
from groupchat_ui.kit.presets import DEBATE_TRIO
from groupchat_ui.sweeps import charts
from groupchat_ui.sweeps import logic as svc

OPTIONS = {"max_loops": 5, "repeats": 2, "concurrency": 2}
GRID = {"threshold": "0.4, 0.6", "recency_penalty": "0, 0.3", "recency_window": "1"}


def test_the_form_builds_random_search_order_roster_and_temperature_axes():
    agents = DEBATE_TRIO.build_agents(0)
    spec = svc.build_spec(agents, ["Debate."], GRID, OPTIONS, {
        "mode": "random", "samples": 3, "threshold_range": "0.2, 0.8",
        "penalty_range": "0, 0.5", "order": "sample", "order_samples": 4,
        "roster_sizes": "2, 3", "temperature": "0, 0.7"})
    axes = spec.axes()
    assert set(axes) == {"recency_window", "temperature", "order", "roster", "random"}
    assert "threshold" not in axes and len(axes["order"]) == 4 and len(axes["roster"]) == 4
    assert spec.cell_count() == 1 * 2 * 4 * 4 * 3 * 1 * 2
    assert all(0.2 <= c.params["threshold"] <= 0.8 for c in spec.cells())
    plain = svc.build_spec(agents, ["Debate."], GRID, OPTIONS, {"mode": "grid",
                                                                "order": "fixed"})
    assert set(plain.axes()) == {"threshold", "recency_penalty", "recency_window"}
    for search, message in (({"mode": "random", "threshold_range": "0.8, 0.2",
                              "penalty_range": "0, 0.1"}, "give low, high"),
                            ({"roster_sizes": "2, x"}, "'x' is not a number"),
                            ({"temperature": "3"}, "outside 0 to 2"),
                            ({"order": "sample", "order_samples": 7}, "only 6")):
        with pytest.raises(ConfigError, match=message):
            svc.build_spec(agents, ["Debate."], GRID, OPTIONS, search)


def test_cell_labels_name_every_axis_the_cell_has():
    row = {"threshold": 0.4, "recency_penalty": 0.0, "recency_window": 1, "task_index": 0,
           "repeat": 1, "order": "B → A", "roster": None, "temperature": 0.7,
           "sample": float("nan")}
    assert svc.cell_label(row) == ("threshold 0.4 · penalty 0 · window 1 · temperature 0.7 · "
                                   "order B → A · task 0 · repeat 1")


def test_the_comparison_reads_as_plain_sentences_with_its_caveat():
    few = svc.comparison_text(compare_values([1, 2, 3], [5, 6, 7], "messages"), "length")
    assert "Cliff's delta +1.00" in few and "Cohen's d" in few and "too few repeats" in few
    rate = svc.comparison_text(compare_values([0] * 6, [1] * 6, "lulled"), "lull rate")
    assert "95% interval" in rate and "a difference at the 5% level" in rate


def results_frame() -> pd.DataFrame:
    rows = []
    for order, base in (("A → B", 3.0), ("B → A", 6.0)):
        for threshold in (0.3, 0.6):
            for r in range(4):
                rows.append({"order": order, "threshold": threshold, "status": "finished",
                             "recency_window": 1, "messages": base + r + threshold * 10,
                             "lulled": float(r % 2), "evenness": 0.5 + r / 10})
    return pd.DataFrame(rows)


def test_interval_chart_along_a_categorical_axis_and_the_bounds():
    frame = results_frame()
    agg = aggregate(frame, by=["order", "threshold"], metrics=["messages", "lulled"])
    fig = charts.ci_chart(agg, frame, "messages", x="order", line="threshold")
    lines = [t for t in fig.data if t.mode == "lines+markers"]
    assert [t.name for t in lines] == ["threshold 0.3", "threshold 0.6"]
    assert list(fig.layout.xaxis.ticktext) == ["A → B", "B → A"]
    assert list(fig.layout.xaxis.tickvals) == [0.0, 1.0]
    assert list(lines[0].customdata) == ["A → B", "B → A"]
    rate = charts.ci_chart(aggregate(frame, by=["order"], metrics=["lulled"]), frame, "lulled",
                           x="order", line=None)
    assert rate.layout.yaxis.range[0] >= 0.0 and rate.layout.yaxis.range[1] <= 1.0
    assert [t.name for t in rate.data if t.mode == "lines+markers"] == ["mean"]


def test_importance_bars_rank_the_parameters_and_leave_out_too_few():
    frame = results_frame()
    table = importance(frame, parameters=["order", "threshold"], metrics=["messages"],
                       permutations=99)
    fig = charts.importance_chart(table, "messages")
    assert list(fig.data[0].y)[-1] == "order"  # the biggest bar on top
    few = importance(frame.iloc[:3], parameters=["order"], metrics=["messages"])
    empty = charts.importance_chart(few, "messages")
    assert not empty.data and "too few" in empty.layout.annotations[0].text


def test_parallel_coordinates_leave_out_text_axes():
    frame = results_frame()
    fig = charts.parcoords(frame, ["threshold", "order"], ["messages"])
    assert [d.label for d in fig.data[0].dimensions] == ["threshold", "chat length<br>(messages)"]


def test_the_page_says_no_variation_and_warns_below_the_coverage_floor():
    rows = [{"status": "finished", "threshold": t, "max_loops": 6, "agents": 3, "messages": m}
            for t, values in ((0.2, [5, 5, 5, 5, 5]), (0.5, [1, 3, 2])) for m in values]
    agg = aggregate(pd.DataFrame(rows), by=["threshold"], metrics=["messages"])
    lines = svc.interval_notes(agg)
    assert lines[0].startswith("1 of 2 points have no variation in their repeats (n = 5): "
                               "no interval is drawn")
    assert lines[1].startswith("1 of 2 points have too few repeats (n = 3) for an informative "
                               "interval: none is drawn")  # issue 38: was [0, 5], "may under-cover"
    charts.ci_chart(agg, pd.DataFrame(rows), "messages", x="threshold", line=None)  # draws


def test_a_paired_comparison_and_effect_size_intervals_read_in_the_sentence():
    a, b = [3.0, 5.0, 4.0, 6.0, 5.0, 7.0], [4.0, 5.5, 5.5, 7.0, 5.5, 9.0]
    text = svc.comparison_text(compare_values(a, b, "messages", paired=True), "length")
    assert "6 pairs of chats with the same seeds" in text and "sign-flip" in text
    assert "Cliff's delta" in text and "(95% interval" in text.split("Cohen's d")[1]


def test_the_status_line_reports_calls_needed_and_made_apart():
    assert svc.calls_text({"calls": 12, "cache_hits": 30}) == (
        "42 model calls needed, 12 made (the cache answered 30)")
    assert svc.calls_text({"calls": 12, "cache_hits": 0}) == "12 model calls"


def test_the_compare_tab_reads_its_verdict_from_holm_across_the_pairs_it_offers():
    raw = compare_values([0] * 6, [1] * 6, "lulled")  # raw p 0.0022
    assert raw.p_value is not None and raw.p_value < 0.05
    passed = svc.family_verdict(raw, p_holm=0.0022 * 28, pairs=28)
    assert "no clear difference at the 5% level after Holm's correction across all 28 pairs" \
        in passed.note and "Holm p = 0.0616" in passed.note
    kept = svc.family_verdict(raw, p_holm=0.004, pairs=3)
    assert kept.note.startswith("a difference at the 5% level after Holm's correction")
    refused = svc.family_verdict(raw, p_holm=None, pairs=None)
    assert refused.p_value is None and not refused.enough and "too many cells" in refused.note
