"""What a script run reads and redraws: at most one timed fragment a page (issue 40.5: several
beside a full run blanked the page in Streamlit 1.67's browser side); the Sweeps page's status
lines from one snapshot (issue 38.14: "0 / 2" beside "1 / 2 cells"); a run's analysis data one
shared object per run and change (issue 24.6), left as it was, and read again once changed."""

from __future__ import annotations

import asyncio
import json
import os
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import pytest
import streamlit
from streamlit.testing.v1 import AppTest

from groupchat_core import bundle_json, import_bundle
from groupchat_core.store import RunStore
from groupchat_core.sweeps import call_counts, parse_sweep, run_sweep, sweep_summary
from groupchat_ui.kit import jobs as job_registry
from groupchat_ui.kit import store_access
from groupchat_ui.kit.components import timer_granted
from groupchat_ui.kit.state import STATE_KEY
from groupchat_ui.kit.sweep_status import SweepStatus, forget_reads, sweep_status
from groupchat_ui.sweeps.view import SNAPSHOT_KEY, Snapshot
from tests.helpers import ROOT
from tests.helpers.app_helpers import goto, new_app
from tests.helpers.chats import scripted_chat

pytestmark = pytest.mark.usefixtures("fresh_engines")

AGENTS = [{"agent_name": n, "model_name": m} for n, m in (
    ("Optimist", "sim/eager"), ("Pessimist", "sim/balanced"))]
SEEN: list[Any] = []  # what each session's script run got from store_access.run_data


def test_the_first_fragment_that_asks_holds_the_timer() -> None:
    assert timer_granted(None, "a", 0.5) == 0.5
    assert timer_granted("a", "a", 0.5) == 0.5  # its own reruns keep it
    assert timer_granted("a", "b", 0.5) is None  # another gets none
    assert timer_granted(None, "b", None) is None  # asking for no timer takes none


def test_every_timed_fragment_asks_for_the_page_timer() -> None:
    """A fragment that set `run_every` itself would bypass the one-timer rule."""
    found, checked = [], 0
    for path in [*(ROOT / "groupchat_ui").rglob("*.py"), *(ROOT / "app_pages").glob("*.py")]:
        text = path.read_text(encoding="utf-8")
        for line in text.splitlines():
            if "run_every=" not in line:
                continue
            checked += 1
            name = re.search(r"run_every=(\w+)\)", line)  # a name given by refresh_every
            if "refresh_every(" not in line and not (
                    name and re.search(rf"\b{name.group(1)} = refresh_every\(", text)):
                found.append(f"{path.relative_to(ROOT)}: {line.strip()}")
    assert checked >= 3 and found == []


@pytest.fixture
def timers(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every `run_every` a fragment is declared with, as the script asks for it."""
    asked: list[Any] = []
    real: Callable[..., Any] = streamlit.fragment

    def fragment(func: Any = None, *, run_every: Any = None) -> Any:
        asked.append(run_every)
        return real(func, run_every=run_every)

    monkeypatch.setattr(streamlit, "fragment", fragment)
    return asked


@pytest.fixture
def held() -> Iterator[threading.Event]:
    gate = threading.Event()
    yield gate
    gate.set()
    job_registry.registry().shutdown()


def test_the_sweeps_page_runs_one_timer_while_a_sweep_job_runs(
        timers: list[Any], held: threading.Event) -> None:
    """A sweep job of this session that cannot end until the test lets it (no timing)."""
    at = goto(new_app(), "sweeps")
    session = at.session_state[STATE_KEY]

    async def job(emit: Any) -> None:
        await asyncio.to_thread(held.wait, 600)

    job_id = job_registry.registry().start_job(job, session.owner)
    session.sweep_jobs.append(job_id)
    timers.clear()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    live = [t for t in timers if t is not None]
    assert live == [0.5], timers  # the live panel's, and no other (the sidebar asked none)
    assert any(c.value.startswith("Jobs of this session: 1 running") for c in at.sidebar.caption)


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


def test_results_draws_the_live_panels_snapshot_of_its_sweep_else_reads_the_store(finished):
    store = RunStore()
    stored = sweep_status(store, finished)
    # What the panel read a moment earlier: a cell fewer, other totals than the store's now.
    earlier = replace(stored, state="running", cells_done=1, cells_running=1, turns_running=2,
                      running_turns={"c": 2})
    summary = {**sweep_summary(store, finished), "runs": 1}
    other = SweepStatus("other", "other", "running", cells_done=0, cells_total=9)
    for snapshot, said in (
            (Snapshot(earlier, summary),  # the panel's totals, from the same read
             ["sweep status: running · 1 / 2 cells finished · 1 running (2 turns so far)",
              " · 1 runs · "]),
            (Snapshot(other, None),  # the panel shows another sweep: ignored; counted as the CLI
             ["sweep status: finished · 2 / 2 cells finished",
              f" · 2 runs · {call_counts(store, finished).text()} · $0.0000"])):
        at = AppTest.from_function(_page)
        at.session_state["test_sweep"] = finished
        at.session_state[SNAPSHOT_KEY] = snapshot
        at.run(timeout=30)
        assert not at.exception
        [line] = captions(at)
        assert all(part in line for part in said), (said, line)


def _read(run_id: str) -> None:
    """An AppTest script (a session of its own): reads the run and hands the object back."""
    from groupchat_ui.kit import store_access
    from tests.ui import test_page_reads

    test_page_reads.SEEN.append(store_access.run_data(run_id))


def _session_reads(run_id: str) -> Any:
    at = AppTest.from_function(_read, args=(run_id,), default_timeout=60)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return SEEN.pop()


@pytest.fixture
def recorded() -> tuple[RunStore, str]:
    SEEN.clear()
    store_access.invalidate()
    store = RunStore(os.environ["GROUPCHAT_DB"])
    chat = scripted_chat({"A": [(0.9, "first"), (0.2, "")], "B": [(0.4, "second"), (0.8, "x")]},
                         max_loops=3, threshold=0.5)
    store.attach(chat)
    chat.run("Share it.")
    store.flush()
    return store, str(chat.last_run.run_id)


def test_sessions_opening_one_run_share_one_object_that_the_analysis_page_leaves_as_it_was(
        recorded):
    store, run_id = recorded
    data = _session_reads(run_id)
    assert list(data.turns["turn"]) == [1, 2]
    before = (data.bids.copy(), data.turns.copy(), data.messages.copy(), dict(data.info))
    at = AppTest.from_file(str(ROOT / "app_pages" / "analysis.py"), default_timeout=60)
    at.query_params["run"] = run_id
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    for tab in ("Speakers", "Why?", "Transcript", "Files"):  # every tab's body runs once
        at.session_state["analysis_tab"] = tab
        at.run()
        assert not at.exception, [e.value for e in at.exception]
    assert _session_reads(run_id) is data  # another session's read: the same object
    for now, then in zip((data.bids, data.turns, data.messages), before[:3], strict=True):
        assert now.equals(then)
    assert data.info == before[3]


def test_a_run_changed_by_another_writer_is_read_again(recorded):
    store, run_id = recorded
    old = _session_reads(run_id)
    assert old.info["status"] == "finished"
    bundle = json.loads(bundle_json(store, run_id))
    bundle["run"].update(status="cancelled", stop_reason="cancelled")  # changed elsewhere
    other = RunStore(os.environ["GROUPCHAT_DB"])  # not the dashboard: no invalidate()
    other.delete_run(run_id)
    import_bundle(other, json.dumps(bundle))
    new = _session_reads(run_id)
    assert new is not old
    assert new.info["status"] == "cancelled"
    assert new.record.stop_reason == "cancelled"
