"""The Sweeps page through AppTest: empty store, sim sweeps to heatmaps, bad input, stop then
resume (every cell once), the live status, tasks with answers (issue 41), the exploring views and
failed bids by reason (issue 21.4; on a phone: tests/e2e/test_phone_layout.py; Ray: *_ray.py)."""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from groupchat_core import Agent, ConfigError
from groupchat_core.store import RunStore
from groupchat_core.sweeps import arun_sweep, parse_sweep, run_sweep, sweep_results, top_k
from groupchat_core.testing import ScriptedBids
from groupchat_ui.kit import jobs as job_registry
from groupchat_ui.kit import store_access
from groupchat_ui.kit.presets import DEBATE_TRIO
from groupchat_ui.sweeps import task_sets
from groupchat_ui.sweeps.logic import page_behind, progress
from tests.helpers.app_helpers import (
    fill,
    goto,
    new_app,
    open_tab,
    query,
    small_grid,
    sweep_status,
    wait_for,
)
from tests.helpers.app_helpers import poll as poll_app
from tests.helpers.waits import HANG_GUARD_S

status = sweep_status  # the status line these tests read


@pytest.fixture
def at() -> Iterator[AppTest]:
    yield goto(new_app(), "sweeps")
    job_registry.registry().shutdown()


def poll(at: AppTest, check: Callable[[AppTest], bool], what: str) -> None:
    poll_app(at, check, what, shown=sweep_status)


def test_the_page_renders_on_an_empty_store_bad_grid_input_starts_nothing_and_a_sim_sweep_runs(
        at: AppTest):
    assert at.title[0].value == "Sweeps"
    assert any("simulations" in i.value for i in at.info)
    assert any("No sweeps in the store yet" in i.value for i in at.info)
    assert "sweep status: idle" in status(at)
    assert any("cells" in m.value for m in at.markdown)  # the live count for the defaults
    at.text_input(key="sw_threshold").input("0.4, abc").run()
    assert any("'abc' is not a number" in e.value for e in at.error)
    assert at.button(key="sw_start").disabled  # a browser cannot click it
    assert "sweep status: idle" in status(at)
    at.text_input(key="sw_threshold").input("0.4, 5").run()  # the engine's range: -1 to 2
    assert any("threshold: 5 is outside -1 to 2" in e.value for e in at.error)
    assert RunStore().list_sweeps().empty

    small_grid(at)  # then a small sim sweep finishes and its heatmaps render
    assert any("**8 cells**" in m.value for m in at.markdown)
    at.button(key="sw_start").click().run()
    poll(at, lambda a: status(a).startswith("sweep status: finished"), "the sweep to finish")
    assert "8 / 8 cells" in status(at)
    assert at.selectbox(key="sw_pick").value == query(at, "sweep")
    assert len(at.get("plotly_chart")) >= 1
    store = RunStore()
    frame = sweep_results(store, at.selectbox(key="sw_pick").value)
    assert (frame["status"] == "finished").all() and len(frame) == 8
    # the downloads come with what makes them reproducible (issue 21)
    open_tab(at, "sw_results_tab", "Cells & runs")  # only the open tab runs
    labels = {b.label for b in at.get("download_button")}
    assert "Download methods & metadata (JSON)" in labels
    assert any("Simulated: some agents of this sweep are sim/ models" in c.value
               for c in at.caption)


def test_stop_then_resume_finishes_every_cell_exactly_once(at: AppTest):
    at.selectbox(key="sw_room").select("Saved agents").run()  # none saved: no agents
    assert at.error  # a chat needs at least 2 agents
    store = RunStore()
    store.save_agents(DEBATE_TRIO.build_agents(latency_s=0.02))  # slow enough to stop midway
    store_access.invalidate()
    at.run()
    at.multiselect(key="sw_saved").set_value(["Optimist", "Pessimist", "Realist"]).run()
    assert not at.error, [e.value for e in at.error]
    small_grid(at, repeats=6, max_loops=12)
    at.number_input(key="sw_concurrency").set_value(1).run()
    at.button(key="sw_start").click().run()
    poll(at, lambda a: status(a).startswith("sweep status: running"), "the sweep to start")
    at.button(key="sw_stop").click().run()
    poll(at, lambda a: status(a).startswith("sweep status: cancelled"), "the stop")
    poll(at, lambda a: len(a.button) and any(b.key == "sw_resume" for b in a.button),
         "the Resume button")
    sweep_id = at.selectbox(key="sw_pick").value
    assert store.get_sweep(sweep_id)["status"] == "cancelled"
    stopped_at = len(store.list_runs(sweep_id=sweep_id, status="finished"))
    assert stopped_at < 24
    at.button(key="sw_resume").click().run()
    poll(at, lambda a: status(a).startswith("sweep status: finished"), "the resumed sweep")
    runs = store.list_runs(sweep_id=sweep_id)
    finished = runs[runs["status"] == "finished"]
    assert len(finished) == 24 and finished["cell"].is_unique
    assert store.get_sweep(sweep_id)["status"] == "finished"


def cells_part(text: str) -> str:
    """'3 / 12 cells finished · 1 running (5 turns so far)' out of any status line."""
    line = status_line(text)
    return line.split(" · ", 1)[1] if " · " in line else ""


def status_line(text: str) -> str:
    """The status line inside a longer caption, up to the first part that is not a count."""
    start = text.find("sweep status: ")
    if start < 0:
        return ""
    parts = text[start:].split(" · ")
    keep = [parts[0]] + [p for p in parts[1:3] if "cells finished" in p or "running (" in p]
    return " · ".join(keep)


def everywhere(at: AppTest) -> tuple[str, str, str, str]:
    """The status as the caption, the bar, the Results header and the sidebar show it."""
    caption = status_line(status(at))
    bar = next((p.proto.text for p in at.get("progress")), "")
    results = next((status_line(c.value) for c in at.main.caption
                    if "sweep status:" in c.value and c.value != status(at)), "")
    sidebar = next((status_line(c.value) for c in at.sidebar.caption
                    if "sweep status:" in c.value), "")
    return caption, bar, results, sidebar


def running_cells(line: str) -> int | None:
    """Cells finished in a running status line; None for any other line."""
    match = re.match(r"sweep status: running · (\d+) / \d+ cells finished", line)
    return int(match.group(1)) if match else None


def test_strategies_chosen_on_the_page_are_an_axis_and_every_cell_records_its_own(at: AppTest):
    small_grid(at, repeats=1, max_loops=4, penalties="0.0")  # 2 cells of bidding
    at.multiselect(key="sw_strategy").set_value(["bidding", "round_robin", "selector"]).run()
    at.text_input(key="sw_selector_model").input("sim/eager").run()
    assert any("**6 cells**" in m.value for m in at.markdown), [m.value for m in at.markdown]
    at.button(key="sw_start").click().run()
    poll(at, lambda a: status(a).startswith("sweep status: finished"), "the sweep to finish")
    store = RunStore()
    sweep = at.selectbox(key="sw_pick").value
    frame = sweep_results(store, sweep)
    assert sorted(frame["strategy"].value_counts().items()) == \
        [("bidding", 2), ("round_robin", 2), ("selector", 2)]
    for _, row in frame.iterrows():  # each cell's run was chosen by its own rule
        record = store.load_run(row["run_id"])
        assert record.config["strategy"] == row["strategy"]
        if row["strategy"] == "selector":
            assert record.config["selector_model"] == "sim/eager"
    # What-if of a round_robin cell's run says the parameters do not enter its speakers
    rr = frame.loc[frame["strategy"] == "round_robin", "run_id"].iloc[0]
    open_tab(at, "sw_results_tab", "What-if")
    at.selectbox(key="sw_whatif_run").set_value(rr).run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("strategy, round_robin, names its speakers" in c.value for c in at.caption)
    bid = frame.loc[frame["strategy"] == "bidding", "run_id"].iloc[0]
    at.selectbox(key="sw_whatif_run").set_value(bid).run()
    assert not any("names its speakers" in c.value for c in at.caption)
    at.multiselect(key="sw_strategy").set_value(["bidding"]).run()  # bidding alone: no axis
    assert any("**2 cells**" in m.value for m in at.markdown)


def test_one_live_status_moves_per_turn_and_reads_the_same_everywhere(at: AppTest):
    """Issue 11 (the four places disagreed); mid-run a draw may lag a turn (issue 25), so only
    "never a cell apart" is checked until the status stands still."""
    store = RunStore()
    store.save_agents(DEBATE_TRIO.build_agents(latency_s=0.04))  # 0.08 s per turn at most
    store_access.invalidate()
    at.selectbox(key="sw_room").select("Saved agents").run()
    at.multiselect(key="sw_saved").set_value(["Optimist", "Pessimist", "Realist"]).run()
    fill(at, sw_threshold="0.01, 0.02", sw_recency_penalty="0", sw_repeats=2,  # nobody lulls
         sw_max_loops=30, sw_concurrency=1).run()
    assert any("estimated wall time up to" in m.value and "0 tokens" in m.value
               for m in at.markdown), [m.value for m in at.markdown]
    at.button(key="sw_start").click().run()

    def mid_cell(a: AppTest) -> bool:  # a turn has been counted before any cell finished
        caption, bar, results, sidebar = everywhere(a)
        cells = [c for c in map(running_cells, (caption, results, sidebar)) if c is not None]
        assert not cells or max(cells) - min(cells) <= 1, (caption, results, sidebar)
        if running_cells(caption) is not None:  # the bar and the caption: one draw, one read
            assert cells_part(caption) == bar, (caption, bar)
        if not ("0 / 4 cells finished · 1 running (" in caption and " 0 turns" not in caption
                and caption.endswith("turns so far)")):
            return False
        live = a.dataframe[0].value  # the live cells table, drawn from the same read
        running = live[live["status"] == "running"]
        return len(running) == 1 and f"({running.iloc[0]['turns']} turn" in caption

    poll(at, mid_cell, "a turn counted in a running cell")
    live = at.dataframe[0].value
    running = live[live["status"] == "running"]
    assert running.iloc[0]["stop_reason"] == "–" and running.iloc[0]["run_id"] == "–"
    assert "None" not in live.astype(str).to_numpy().ravel().tolist()
    assert any(c.value.startswith("Jobs of this session: 1 running") for c in at.sidebar.caption)

    poll(at, lambda a: status(a).startswith("sweep status: finished"), "the sweep to finish")
    at.run()  # a place drawn before the job settled redraws on the next run (browser: timer)
    caption, bar, results, sidebar = everywhere(at)
    assert caption == results == sidebar == "sweep status: finished · 4 / 4 cells finished"
    assert bar == "4 / 4 cells finished"
    assert any(c.value.startswith("Jobs of this session: 0 running, 1 in all")
               for c in at.sidebar.caption)
    cells = at.dataframe[0].value
    assert list(cells["status"]) == ["finished"] * 4 and "–" not in cells["run_id"].tolist()


def test_random_search_over_every_order_runs_and_its_statistics_tabs_render(at: AppTest):
    """Random search, every agent order, roster sizes: counts follow, results rank by order."""
    at.radio(key="sw_search").set_value("random").run()
    fill(at, sw_samples=2, sw_rand_threshold="0.3, 0.7", sw_rand_penalty="0.0, 0.3",
         sw_recency_window="1", sw_order="all", sw_repeats=2, sw_max_loops=5).run()
    assert not at.error, [e.value for e in at.error]
    # 6 orders × 2 draws × 1 window × 1 task × 2 repeats
    assert any("**24 cells**" in m.value and "6 order" in m.value and "2 random samples"
               in m.value for m in at.markdown)
    at.text_input(key="sw_roster").input("1").run()
    assert any("roster sizes: 1 is outside 2" in e.value for e in at.error)
    assert at.button(key="sw_start").disabled
    at.text_input(key="sw_roster").input("").run()
    at.button(key="sw_start").click().run()
    poll(at, lambda a: status(a).startswith("sweep status: finished"), "the sweep to finish")
    frame = sweep_results(RunStore(), at.selectbox(key="sw_pick").value)
    assert frame["order"].nunique() == 6 and frame["sample"].nunique() == 2
    assert (frame["status"] == "finished").all()
    open_tab(at, "sw_results_tab", "95% intervals")
    assert "order" in at.selectbox(key="sw_ci_x").options
    at.selectbox(key="sw_ci_x").select("order").run()
    assert not at.exception, [e.value for e in at.exception]
    ci = next(d.value for d in at.dataframe if "interval_method" in d.value.columns)
    assert set(ci["order"].astype(str)) == set(frame["order"])
    assert set(ci["interval_method"]) <= {"wilson", "bootstrap-t", "bootstrap-t, cut to range"}
    open_tab(at, "sw_results_tab", "Importance")
    ranked = next(d.value for d in at.dataframe if "omega_squared" in d.value.columns)
    assert set(ranked["parameter"]) == {"threshold", "recency_penalty", "order"}
    open_tab(at, "sw_results_tab", "Compare two cells")
    assert any("Cell A" == s.label for s in at.selectbox)
    assert at.success or at.warning  # the comparison's verdict or its "too few" note


def test_the_live_panel_redraws_the_page_once_a_late_job_has_created_its_sweep():
    """A page drawn before its job created the sweep showed none until the end (stop 32)."""
    registry = job_registry.JobRegistry()
    store = RunStore()
    agents = [{"agent_name": n, "model_name": "sim/balanced",
               "litellm_kwargs": {"sim_latency": 0.05}} for n in ("Ann", "Ben")]
    spec = parse_sweep({"name": "late", "base": {"max_loops": 6, "agents": agents},
                        "grid": {"threshold": [0.01]}, "tasks": ["Plan a picnic."],
                        "repeats": 1})
    gate = threading.Event()

    async def late(emit):  # the job, held before it creates its sweep
        await asyncio.to_thread(gate.wait, HANG_GUARD_S)
        return await arun_sweep(spec, store, on_event=emit)

    job_id = registry.start_job(late, "me")
    try:
        drawn = registry.task_snapshot(job_id)  # what the page was drawn with
        assert progress(drawn.events).sweep_id is None and not drawn.done
        assert not page_behind(True, None, drawn)  # nothing new to show yet
        gate.set()
        wait_for(lambda: progress(registry.task_snapshot(job_id).events).sweep_id,
                 "the job to create its sweep")
        now = registry.task_snapshot(job_id)
        created = progress(now.events).sweep_id
        assert page_behind(True, None, now)  # drawn without it: redraw the page
        if not now.done:  # drawn with it: the panel alone redraws until the job ends
            assert not page_behind(True, created, now)
        wait_for(lambda: registry.task_snapshot(job_id).done, "the sweep's end")
        now = registry.task_snapshot(job_id)
        assert page_behind(True, created, now)  # it ended: redraw the charts and Resume
        assert not page_behind(False, created, now)  # drawn after the end: no timer
    finally:
        registry.shutdown()


YAML_SET = b"""\
- {id: q1, prompt: "What is 2+2? State your answer at the end.", answer: "4", scorer: numeric}
- {id: q2, prompt: "What is 3*3? State your answer at the end.", answer: "9", scorer: numeric}
"""


def test_an_uploaded_task_set_is_checked_in_one_line_and_a_shipped_one_starts_a_scored_sweep(
        at: AppTest):
    at.radio(key="sw_task_source").set_value(task_sets.UPLOADED).run()
    errors = [e.value for e in at.error]
    assert errors == ["Fix the tasks: choose a task-set file (.jsonl, .yaml or .json), or type "
                      "the tasks"]
    assert at.button(key="sw_start").disabled
    at.radio(key="sw_task_source").set_value(task_sets.DU_MATH).run()
    at.number_input(key="sw_task_limit").set_value(2).run()
    fill(at, sw_threshold="0.4", sw_recency_penalty="0.3", sw_recency_window="1", sw_repeats=1,
         sw_max_loops=4).run()  # one cell per task
    assert not at.exception, [e.value for e in at.exception]
    assert any("2 tasks with answers (scorer numeric)" in c.value for c in at.caption)
    assert any("**2 cells**" in m.value for m in at.markdown)
    at.button(key="sw_start").click().run()
    poll(at, lambda a: status(a).startswith("sweep status: finished"), "the sweep to finish")
    frame = sweep_results(RunStore(), at.selectbox(key="sw_pick").value)
    assert list(frame["task_id"]) == ["du-math-000", "du-math-001"]
    assert frame["scorer"].eq("numeric").all()
    assert frame["correct"].notna().all() and frame["answer"].notna().all()  # every run scored


def test_task_sets_read_shipped_and_uploaded_tasks():
    assert task_sets.scored_tasks(task_sets.TYPED, 5) is None
    du = task_sets.scored_tasks(task_sets.DU_MATH, 3)
    assert du is not None and [t["id"] for t in du] == ["du-math-000", "du-math-001",
                                                        "du-math-002"]
    assert len(task_sets.scored_tasks(task_sets.DU_MATH, None) or []) == 100
    up = task_sets.scored_tasks(task_sets.UPLOADED, None, ("set.yaml", YAML_SET))
    assert up == [{"id": "q1", "prompt": "What is 2+2? State your answer at the end.",
                   "answer": "4", "scorer": "numeric"},
                  {"id": "q2", "prompt": "What is 3*3? State your answer at the end.",
                   "answer": "9", "scorer": "numeric"}]
    assert len(task_sets.scored_tasks(task_sets.UPLOADED, 1, ("set.yaml", YAML_SET)) or []) == 1
    assert task_sets.tasks_caption(up).startswith("2 tasks with answers (scorer numeric), first:")


@pytest.mark.parametrize(("upload", "line"), [
    (("set.txt", b"x"), "task set 'set.txt' must be a .jsonl, .yaml, .yml or .json file"),
    (("set.jsonl", b'{"id": "a", "prompt": "p", "answer": "1"}\nnot json\n'),
     "task set set.jsonl line 2"),
    (("set.yaml", b"- {id: a, prompt: p, answer: '1'}\n- {id: a, prompt: q, answer: '2'}\n"),
     "task set set.yaml: task id 'a' appears twice (tasks 1 and 2); give each task its own id"),
    (("set.json", b"\xff\xfe"), "task set set.json is not UTF-8 text"),
])
def test_a_bad_task_set_is_one_line_naming_the_file(upload: tuple[str, bytes], line: str):
    with pytest.raises(ConfigError) as caught:
        task_sets.scored_tasks(task_sets.UPLOADED, None, upload)
    message = str(caught.value)
    assert line in message and "\n" not in message


def figure(at: AppTest, key: str) -> dict[str, Any]:
    chart = next(c for c in at.get("plotly_chart") if c.key == key)
    return dict(json.loads(chart.proto.spec))


def shown_texts(at: AppTest) -> str:
    return " ".join(str(e.value) for kind in ("caption", "markdown", "warning", "success")
                    for e in getattr(at, kind))


def test_the_exploring_views_of_a_sim_sweep(at: AppTest):
    store = RunStore()
    agents = [a.to_spec() for a in DEBATE_TRIO.build_agents(latency_s=0.0)]
    sweep_id = run_sweep(parse_sweep({
        "name": "views", "repeats": 2, "tasks": ["Plan a picnic."],
        "base": {"max_loops": 10, "agents": agents, "seed": 11},
        "grid": {"threshold": [0.4, 0.6], "recency_window": [1, 4, 16]}}), store).sweep_id
    goto(at, "sweeps", sweep=sweep_id)
    # only the open tab runs: the page opens on its heatmaps, nothing of the tabs behind
    assert [c.key for c in at.get("plotly_chart")] == ["sw_heatmap"]
    open_tab(at, "sw_results_tab", "Parallel coordinates")
    assert [c.key for c in at.get("plotly_chart")] == ["sw_parcoords"]

    # parallel coordinates: recency_window 1, 4, 16 spans a factor of 16, so its axis is
    # logarithmic and threshold's is not; the top-k % slider keeps the best cells
    dims = figure(at, "sw_parcoords")["data"][0]["dimensions"]
    assert [d["label"] for d in dims if "(log)" in d["label"]] == ["recency<br>window (log)"]
    kept = next(m for m in at.metric if m.label == "Cells kept")
    assert kept.value == "12 of 12"
    at.slider(key="sw_pc_topk").set_value(25).run()
    expected = len(top_k(sweep_results(store, sweep_id), "messages", 25))
    assert next(m for m in at.metric if m.label == "Cells kept").value == f"{expected} of 12"
    assert "Top 25% on mean chat length (messages)" in shown_texts(at)

    # group by: a band per other parameter's value, seeds collapsed
    open_tab(at, "sw_results_tab", "Group by")
    bands = figure(at, "sw_grp_chart")
    assert [t["name"] for t in bands["data"] if t.get("showlegend", True) and t.get("name")
            ][:3] == ["recency_window 1", "recency_window 4", "recency_window 16"]
    assert "seeds collapsed into 95% bands" in bands["layout"]["title"]["text"]

    # configurations: only the columns that differ, then all of them
    open_tab(at, "sw_results_tab", "Configurations")
    assert "6 configuration(s); columns that differ: threshold, recency_window" in shown_texts(at)
    at.toggle(key="sw_diff_only").set_value(False).run()
    assert "6 configuration(s); all columns" in shown_texts(at)

    # the run matrix names its baseline; one row per task and repeat
    open_tab(at, "sw_results_tab", "Run matrix")
    matrix = figure(at, "sw_mx_chart")["data"][0]
    assert str(matrix["x"][0]).startswith("baseline: threshold 0.4"), matrix["x"]
    assert sorted(set(matrix["y"])) == ["task 0 · repeat 0", "task 0 · repeat 1"]

    # stability: one line per agent
    open_tab(at, "sw_results_tab", "Stability")
    names = {t["name"] for t in figure(at, "sw_stab_chart")["data"] if t.get("name")}
    assert names == {"Optimist", "Pessimist", "Realist"}
    open_tab(at, "sw_results_tab", "Failures")
    assert "No failed bids: every bid of this sweep's runs was read." in shown_texts(at)


def test_failed_bids_are_grouped_by_reason_and_each_tab_of_a_one_setting_sweep_says_why_not(
        at: AppTest):
    """Only the open tab runs: each tab opened on a sweep of one parameter set says in a line
    why it has nothing to rank, group or compare, instead of an error or a blank."""
    store = RunStore()
    script = ScriptedBids({"Ann": [(0.9, "hi"), {"score": "high?", "message": "x"}],
                           "Ben": [TimeoutError("request timed out"),
                                   RuntimeError("APIError: 500 from the provider")]})
    try:
        agents = [Agent(agent_name=n, model_name=script.model_name).to_spec()
                  for n in ("Ann", "Ben")]
        sweep_id = run_sweep(parse_sweep({
            "name": "fails", "tasks": ["Plan it."], "base": {"max_loops": 3, "agents": agents},
            "grid": {"threshold": [0.5]}}), store).sweep_id
        script.assert_complete()
    finally:
        script.close()
    goto(at, "sweeps", sweep=sweep_id)  # one threshold: one parameter set
    said = {"Importance": "Only one parameter set was swept: nothing to rank.",
            "Group by": "Only one parameter set was swept: nothing to group by.",
            "Compare two cells": "Comparing needs a sweep with finished chats at two "
                                 "parameter values."}
    tabs = [t.label for t in at.tabs]
    assert set(said) <= set(tabs), tabs
    for tab in tabs:
        open_tab(at, "sw_results_tab", tab)
        if tab in said:
            assert said[tab] in [i.value for i in at.info], (tab, [i.value for i in at.info])
    open_tab(at, "sw_results_tab", "Failures")
    warnings = [str(w.value) for w in at.warning]
    assert [w.split(". ")[0] for w in warnings if " bid(s) in " in w] == [
        "**unreadable**: 1 bid(s) in 1 run(s), by Ann",
        "**provider error**: 1 bid(s) in 1 run(s), by Ben",
        "**timeout**: 1 bid(s) in 1 run(s), by Ben"], warnings
    assert "1 cell run(s) ended in error" in shown_texts(at)
