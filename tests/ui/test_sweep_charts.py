"""Sweep figure builders and the page's pure helpers (facets, parsing, estimate, statistics), and
issue 41's picture checks: texts apart, axes over what is there (Sweeps, outcome, Runs, Run).
Private imports (`sweeps._estimate`): a unit with no public name."""

from __future__ import annotations

import pandas as pd
import pytest

from groupchat_core import ConfigError, RunRecord
from groupchat_core.store import RunStore
from groupchat_core.sweeps import aggregate, compare_values, importance, run_sweep, sweep_results
from groupchat_ui.kit.outcome_charts import accuracy_chart
from groupchat_ui.kit.presets import DEBATE_TRIO
from groupchat_ui.kit.store_access import RunData
from groupchat_ui.run.live_view import NO_MARGIN, shown_turns
from groupchat_ui.runs.compare_view import overlaid_figures
from groupchat_ui.sweeps import charts, explore_charts
from groupchat_ui.sweeps import logic as svc
from tests.helpers.scripted_trio import trio_record

BY = ["threshold", "recency_penalty", "recency_window"]


@pytest.fixture
def frame() -> pd.DataFrame:
    spec = svc.build_spec(DEBATE_TRIO.build_agents(0), ["Debate."],
                          {"threshold": "0.4, 0.6", "recency_penalty": "0, 0.3",
                           "recency_window": "0, 1"},
                          {"max_loops": 6, "repeats": 2, "concurrency": 4})
    store = RunStore()
    outcome = run_sweep(spec, store)
    return sweep_results(store, outcome.sweep_id)


def test_heatmaps_have_one_panel_per_window_and_parallel_coordinates_labels_fit(
        frame: pd.DataFrame):
    agg = aggregate(frame, by=BY, metrics=list(charts.METRIC_LABELS))
    for metric in charts.METRIC_LABELS:
        fig = charts.sweep_heatmaps(agg, metric)
        assert [t.type for t in fig.data] == ["heatmap", "heatmap"]
        assert fig.data[0].z.shape == (2, 2)
    fig = charts.ci_chart(agg, frame, "messages", window=1)
    assert len(fig.data) == 4 and fig.data[0].error_y.array is not None
    par = charts.parcoords(frame, BY, ["messages", "gini"])
    assert par.data[0].type == "parcoords" and len(par.data[0].dimensions) == 5
    fig = charts.parcoords(frame, BY, list(charts.METRIC_LABELS))
    margin = fig.layout.margin
    assert margin.l >= 80 and margin.r >= 80 and margin.t >= 100
    for dim in fig.data[0].dimensions:
        assert all(len(line) <= 12 for line in dim.label.split("<br>")), dim.label
    assert fig.data[0].dimensions[0].label == "threshold"


def test_empty_frames_give_a_note_not_an_exception():
    empty_agg = pd.DataFrame(columns=[*BY, "metric", "n", "mean", "std", "sem", "ci_low",
                                      "ci_high"])
    for fig in (charts.sweep_heatmaps(empty_agg, "messages"),
                charts.ci_chart(empty_agg, pd.DataFrame(), "messages"),
                charts.parcoords(pd.DataFrame(columns=["status"]), BY, ["messages"]),
                charts.matrix_heatmap(pd.DataFrame(), "what-if")):
        assert not fig.data and fig.layout.annotations


def test_parse_numbers_names_the_bad_value():
    assert svc.parse_numbers("0.3, 0.5;0.7", "threshold") == [0.3, 0.5, 0.7]
    assert svc.parse_numbers("0, 2", "recency_window", integer=True) == [0, 2]
    for text, message in [("0.3, x", "'x' is not a number"), ("", "at least one value"),
                          ("1.5", "not a whole number"), ("0.3, 0.3", "listed twice")]:
        with pytest.raises(ConfigError, match=message):
            svc.parse_numbers(text, "recency_window" if text == "1.5" else "threshold",
                              integer=text == "1.5")
    with pytest.raises(ConfigError, match="1.5 is outside"):
        svc.parse_numbers("1.5", "threshold", bounds=(0.0, 1.0))


# --- issue 11: readable charts ----------------------------------------------------------------


def _agg(rows: list[tuple[float, float, float, float, float]], metric: str) -> pd.DataFrame:
    """(threshold, penalty, mean, ci_low, ci_high) rows as `aggregate` gives them."""
    return pd.DataFrame([{"threshold": t, "recency_penalty": p, "recency_window": 1,
                          "metric": metric, "n": 3, "mean": m, "std": 1.0, "sem": 1.0,
                          "ci_low": lo, "ci_high": hi} for t, p, m, lo, hi in rows])


def _results(rows: list[tuple[float, float, float]], metric: str) -> pd.DataFrame:
    return pd.DataFrame([{"threshold": t, "recency_penalty": p, "recency_window": 1,
                          "status": "finished", metric: v} for t, p, v in rows])


def test_interval_axis_and_bars_stop_at_the_metrics_bounds_and_lines_are_dodged():
    """A t-interval over chat lengths 0, 0, 3 runs to -10: the axis and the bar stop at 0."""
    agg = _agg([(0.4, 0.0, 1.0, -10.0, 15.0), (0.6, 0.0, 2.0, 1.0, 3.0)], "messages")
    fig = charts.ci_chart(agg, _results([(0.4, 0.0, 0.0), (0.4, 0.0, 3.0)], "messages"),
                          "messages", window=1)
    low, high = fig.layout.yaxis.range
    assert low == 0.0 and 15.0 <= high < 17.0
    means = fig.data[0]
    assert list(means.error_y.arrayminus) == [1.0, 1.0]  # 1 - max(-10, 0), 2 - 1
    assert means.cliponaxis is False  # a mean of 0 still shows its whole marker
    rate = charts.ci_chart(_agg([(0.5, 0.0, 0.9, 0.4, 1.6)], "lulled"),
                           _results([(0.5, 0.0, 1.0)], "lulled"), "lulled", window=1)
    assert rate.layout.yaxis.range[1] == 1.0 and list(rate.data[0].error_y.array) == \
        pytest.approx([0.1])
    # lines at one threshold are dodged side by side and see-through
    same = (0.4, 0.0, 2.0, 1.0, 3.0), (0.4, 0.3, 2.0, 1.0, 3.0), (0.6, 0.0, 2.0, 1.0, 3.0), \
        (0.6, 0.3, 2.0, 1.0, 3.0)
    fig = charts.ci_chart(_agg(list(same), "messages"), _results([], "messages").reindex(
        columns=["threshold", "recency_penalty", "recency_window", "status", "messages"]),
        "messages", window=1)
    lines = [t for t in fig.data if t.mode == "lines+markers"]
    assert [t.name for t in lines] == ["penalty 0", "penalty 0.3"]
    first, second = (list(t.x) for t in lines)
    assert all(a < b for a, b in zip(first, second, strict=True))  # side by side, not on top
    assert all(abs(b - a) < 0.05 for a, b in zip(first, second, strict=True))  # near the tick
    assert all(t.opacity is not None and t.opacity < 1 for t in lines)
    assert list(fig.layout.xaxis.tickvals) == [0.4, 0.6]  # ticks stay on the real thresholds
    assert [c for c in lines[0].customdata] == [0.4, 0.6]  # hover says the real threshold


def test_matrix_heatmap_labels_axes_and_a_turn_colour_bar_has_whole_number_ticks():
    matrix = pd.DataFrame([[1.0, None], [2.0, 3.0]], index=[0.0, 0.3], columns=[0.4, 0.6])
    fig = charts.matrix_heatmap(matrix, "first divergence turn", "turn")
    assert fig.data[0].type == "heatmap" and list(fig.data[0].x) == ["0.4", "0.6"]
    assert fig.data[0].colorbar.tickformat == "d" and fig.data[0].colorbar.dtick == 1
    assert charts.matrix_heatmap(matrix, "x", "share").data[0].colorbar.dtick is None


# --- issue 11: the estimate and the status ------------------------------------------------------


def test_a_sim_sweep_is_estimated_at_zero_tokens_and_its_wall_time_from_sim_latency():
    from groupchat_core.sweeps import estimate

    agents = DEBATE_TRIO.build_agents(latency_s=0.2)  # 0.2, 0.3 and 0.4 s per bid
    spec = svc.build_spec(agents, ["Debate."], {"threshold": "0.4, 0.6", "recency_penalty": "0",
                                                "recency_window": "1"},
                          {"max_loops": 11, "repeats": 3, "concurrency": 4})
    result = estimate(spec)
    assert result.cells == 6 and result.calls_upper == 6 * 3 * 10
    assert result.prompt_tokens_upper == 0 and result.completion_tokens_upper == 0
    assert result.cost_usd_upper == 0.0
    # 10 turns of 0.4 s (the slowest bid) per cell, plus its engine work (a cell, 30 bids);
    # 6 cells at 4 at once: two waves
    from groupchat_core.sweeps._estimate import BID_S, CELL_S

    assert result.wall_s_upper == pytest.approx(2 * (4.0 + CELL_S + 30 * BID_S))
    assert "wall time up to 9 s" in result.summary()
    _, text, head = svc.preflight(spec, RunStore())
    assert "0 prompt + 0 completion tokens" in text and "wall time up to 9 s" in text
    assert head == "estimated wall time up to 9 s · 0 tokens · up to $0.0000"
    from groupchat_core.sweeps import Estimate  # the wall time reads as text

    texts = [Estimate(cells=1, wall_s_upper=s).wall_time() for s in (0, 0.4, 42.1, 200, 7500)]
    assert texts == ["< 1 s", "< 1 s", "43 s", "3 min 20 s", "2 h 05 min"]


def test_a_real_model_sweep_assumes_seconds_per_bid_and_the_inflight_limit():
    from groupchat_core import Agent, max_inflight_calls, set_max_inflight_calls
    from groupchat_core.sweeps import estimate
    from groupchat_core.sweeps._estimate import ASSUMED_CALL_S, BID_S, CELL_S

    agents = [Agent(agent_name=n, system_prompt="You argue.", model_name="openai/gpt-4o-mini")
              for n in ("A", "B")]
    spec = svc.build_spec(agents, ["Debate."], {"threshold": "0.5", "recency_penalty": "0",
                                                "recency_window": "1"},
                          {"max_loops": 6, "repeats": 8, "concurrency": 8})
    before = max_inflight_calls()
    try:
        set_max_inflight_calls(4)  # 8 cells x 2 agents want 16 calls at once: 4 may fly
        limited = estimate(spec)
    finally:
        set_max_inflight_calls(before)
    assert limited.prompt_tokens_upper > 0
    assert limited.wall_s_upper == pytest.approx(8 * 2 * 5 * ASSUMED_CALL_S / 4)
    assert any(f"{ASSUMED_CALL_S:g} s per bid assumed" in a and "at most 4 real-model calls"
               in a for a in limited.assumptions)
    one_wave = 5 * ASSUMED_CALL_S + CELL_S + 10 * BID_S  # plus a cell's engine work
    assert estimate(spec).wall_s_upper == pytest.approx(one_wave)


def test_display_frames_show_a_dash_for_what_a_running_cell_lacks():
    frame = pd.DataFrame({"cell": ["a", "b"], "status": ["finished", "running"],
                          "messages": pd.array([4, None], dtype="Int64"),
                          "stop_reason": ["lull", None], "gini": [0.2, float("nan")]})
    shown = svc.display_frame(frame)
    assert list(shown.iloc[1]) == ["b", "running", "–", "–", "–"]
    assert "None" not in shown.astype(str).to_numpy().ravel().tolist()
    assert shown.iloc[0]["messages"] == "4" and shown.iloc[0]["gini"] == "0.2"
    assert {type(v) for v in shown["messages"]} == {str}  # one type per column, for Arrow
    assert shown["cell"].tolist() == ["a", "b"]


def test_progress_and_the_status_count_finished_and_running_cells_and_their_turns(monkeypatch):
    from groupchat_ui.kit import sweep_status as module
    from groupchat_ui.kit.sweep_status import forget_reads, sweep_status

    # A shared read lasts 0.3 s; the store writes below took longer on a loaded machine (a
    # fresh clone read `running` where the shared read was asserted), so it lasts the test here.
    monkeypatch.setattr(module, "SHARED_READ_S", 3600.0)
    events: list = []
    spec = svc.build_spec(DEBATE_TRIO.build_agents(0), ["Debate."],
                          {"threshold": "0.5", "recency_penalty": "0.3", "recency_window": "1"},
                          {"max_loops": 4, "repeats": 2, "concurrency": 2})
    store = RunStore()
    outcome = run_sweep(spec, store, on_event=events.append)
    prog = svc.progress(events)  # the events folded into a cell table
    assert (prog.done, prog.total, prog.fraction) == (2, 2, 1.0)
    assert list(prog.table()["status"]) == ["finished", "finished"]
    assert prog.outcome.status == "finished" and svc.all_sim(spec.base.agents)
    status = sweep_status(store, outcome.sweep_id)
    assert (status.state, status.cells_done, status.cells_total, status.cells_running) == \
        ("finished", 2, 2, 0)
    assert status.text() == "sweep status: finished · 2 / 2 cells finished"
    # a cell in flight: a run `running` in the store with two turns recorded so far
    store.reopen_sweep(outcome.sweep_id)
    run_id = store.list_runs(sweep_id=outcome.sweep_id)["run_id"].iloc[0]
    store._update_run(run_id, "pretend it runs", status="running")
    turns = int(store.list_runs(sweep_id=outcome.sweep_id).set_index("run_id").loc[
        run_id, "turns"])
    assert sweep_status(store, outcome.sweep_id).state == "finished"  # a shared read...
    forget_reads()  # ...that a refresh half a second later would not see
    live = sweep_status(store, outcome.sweep_id)
    assert live.live and (live.cells_done, live.cells_running, live.turns_running) == \
        (1, 1, turns)
    assert f"1 / 2 cells finished · 1 running ({turns} turns so far)" in live.text()

    class Job:  # a TaskSnapshot as the registry gives it
        status, error = "cancelled", None

    Job.events = tuple(events)
    assert sweep_status(store, job=Job()).state == "stopping"  # Stop pressed, cells unwinding
    Job.events, Job.status = (), "running"
    assert sweep_status(store, job=Job()).state == "starting"  # no sweep row yet


def test_a_finished_job_reads_the_store_afresh_not_a_shared_running_read():
    """The views draw an ended sweep once (no timer): a running line read a moment before the
    job ended must not stay on screen (the e2e sweep-status test once waited 60 s on it)."""
    from groupchat_ui.kit.sweep_status import forget_reads, sweep_status

    events: list = []
    spec = svc.build_spec(DEBATE_TRIO.build_agents(0), ["Debate."],
                          {"threshold": "0.5", "recency_penalty": "0.3", "recency_window": "1"},
                          {"max_loops": 3, "repeats": 1, "concurrency": 1})
    store = RunStore()
    outcome = run_sweep(spec, store, on_event=events.append)
    store.reopen_sweep(outcome.sweep_id)
    forget_reads()

    class Job:  # a TaskSnapshot as the registry gives it
        status, error, done = "running", None, False

    Job.events = tuple(events)
    assert sweep_status(store, job=Job()).state == "running"  # shared with the next reads
    store.finish_sweep(outcome.sweep_id)
    assert sweep_status(store, job=Job()).state == "running"  # still live: the timer redraws
    Job.status, Job.done = "finished", True
    assert sweep_status(store, job=Job()).text() == \
        "sweep status: finished · 1 / 1 cells finished"


def test_the_selector_fields_of_the_sweeps_form_reach_the_spec_and_blank_ones_do_not():
    grid = {"threshold": "0.5", "recency_penalty": "0.3", "recency_window": "1"}
    options = {"max_loops": 4, "repeats": 1, "concurrency": 1}
    agents = DEBATE_TRIO.build_agents(0)
    spec = svc.build_spec(agents, ["Debate."], grid, options, {
        "strategies": ["bidding", "selector"], "selector_model": " openai/picker ",
        "selector_api_base": " http://127.0.0.1:8080/v1 "})
    assert spec.base.selector_model == "openai/picker"
    assert spec.base.selector_api_base == "http://127.0.0.1:8080/v1"
    blank = svc.build_spec(agents, ["Debate."], grid, options,
                           {"selector_model": "", "selector_api_base": "  "})
    assert blank.base.selector_model == "sim/balanced" and blank.base.selector_api_base is None


# --- the new axes and statistics: spec building, labels, comparisons, importance -----------

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
    fig = charts.parcoords(frame, ["threshold", "order"], ["messages"])  # no text axes
    assert [d.label for d in fig.data[0].dimensions] == ["threshold", "chat length<br>(messages)"]


def test_importance_bars_rank_the_parameters_and_leave_out_too_few():
    frame = results_frame()
    table = importance(frame, parameters=["order", "threshold"], metrics=["messages"],
                       permutations=99)
    fig = charts.importance_chart(table, "messages")
    assert list(fig.data[0].y)[-1] == "order"  # the biggest bar on top
    few = importance(frame.iloc[:3], parameters=["order"], metrics=["messages"])
    empty = charts.importance_chart(few, "messages")
    assert not empty.data and "too few" in empty.layout.annotations[0].text


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


def test_the_comparison_reads_as_plain_sentences_with_its_caveat():
    few = svc.comparison_text(compare_values([1, 2, 3], [5, 6, 7], "messages"), "length")
    assert "Cliff's delta +1.00" in few and "Cohen's d" in few and "too few repeats" in few
    rate = svc.comparison_text(compare_values([0] * 6, [1] * 6, "lulled"), "lull rate")
    assert "95% interval" in rate and "a difference at the 5% level" in rate
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
