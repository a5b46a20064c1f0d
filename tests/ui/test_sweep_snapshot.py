"""Issue 38 item 14: the Sweeps page's two status lines read one snapshot. The live panel's read
(status and totals) is what the Results caption of the same sweep draws, rather than a second
read half a second apart on its own timer ("0 / 2" beside "1 / 2 cells", 30 turns beside 22);
its calls are in the words of the CLI's last line and `sweep show`."""

from __future__ import annotations

from dataclasses import replace

import pytest
from streamlit.testing.v1 import AppTest

from groupchat_core.store import RunStore
from groupchat_core.sweeps import call_counts, parse_sweep, run_sweep, sweep_summary
from groupchat_ui.kit.sweep_status import SweepStatus, forget_reads, sweep_status
from groupchat_ui.sweeps.view import SNAPSHOT_KEY, Snapshot

AGENTS = [{"agent_name": n, "model_name": m} for n, m in (
    ("Optimist", "sim/eager"), ("Pessimist", "sim/balanced"))]


def _page() -> None:
    """Results' header of the sweep in session state, as the page draws it."""
    import streamlit as st

    from groupchat_core.store import RunStore
    from groupchat_ui.sweeps import results_view

    results_view.header(RunStore(), st.session_state["test_sweep"])


@pytest.fixture
def finished() -> str:
    outcome = run_sweep(parse_sweep({"name": "snap", "base": {"max_loops": 4, "agents": AGENTS},
                                     "grid": {"threshold": [0.3, 0.6]}, "tasks": ["Q?"]}),
                        RunStore())
    forget_reads()
    return outcome.sweep_id


def captions(at: AppTest) -> list[str]:
    return [c.value for c in at.caption if "sweep status: " in c.value]


def test_results_draws_the_live_panels_snapshot_of_its_sweep(finished):
    store = RunStore()
    stored = sweep_status(store, finished)
    # What the panel read a moment earlier: a cell fewer, other totals than the store's now.
    earlier = replace(stored, state="running", cells_done=1, cells_running=1, turns_running=2,
                      running_turns={"c": 2})
    summary = {**sweep_summary(store, finished), "runs": 1}
    at = AppTest.from_function(_page)
    at.session_state["test_sweep"] = finished
    at.session_state[SNAPSHOT_KEY] = Snapshot(earlier, summary)
    at.run(timeout=30)
    assert not at.exception
    [line] = captions(at)
    assert "sweep status: running · 1 / 2 cells finished · 1 running (2 turns so far)" in line
    assert " · 1 runs · " in line  # the panel's totals, from the same read


def test_without_the_panel_results_reads_the_store_and_counts_calls_as_the_cli(finished):
    store = RunStore()
    at = AppTest.from_function(_page)
    at.session_state["test_sweep"] = finished
    at.session_state[SNAPSHOT_KEY] = Snapshot(  # the panel shows another sweep: ignored
        SweepStatus("other", "other", "running", cells_done=0, cells_total=9), None)
    at.run(timeout=30)
    assert not at.exception
    [line] = captions(at)
    assert "sweep status: finished · 2 / 2 cells finished" in line
    assert f" · 2 runs · {call_counts(store, finished).text()} · $0.0000" in line
