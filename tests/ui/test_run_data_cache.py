"""A run's analysis data is one shared object per run and change (issue 24, target 6): every
session that opens the run gets the same object (no copy per script run), the Analysis page
leaves it as it was, and a run changed by another writer is read again."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from groupchat_core import bundle_json, import_bundle
from groupchat_core.store import RunStore
from groupchat_ui.kit import store_access
from tests.helpers import ROOT
from tests.helpers.chats import scripted_chat

pytestmark = pytest.mark.usefixtures("fresh_engines")

SEEN: list[Any] = []  # what each session's script run got from store_access.run_data


def _read(run_id: str) -> None:
    """An AppTest script (a session of its own): reads the run and hands the object back."""
    from groupchat_ui.kit import store_access
    from tests.ui import test_run_data_cache

    test_run_data_cache.SEEN.append(store_access.run_data(run_id))


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


def test_two_sessions_opening_one_run_share_one_object(recorded):
    _, run_id = recorded
    first, second = _session_reads(run_id), _session_reads(run_id)
    assert first is second
    assert list(first.turns["turn"]) == [1, 2]


def test_the_analysis_page_leaves_the_shared_data_as_it_was(recorded):
    store, run_id = recorded
    data = _session_reads(run_id)
    before = (data.bids.copy(), data.turns.copy(), data.messages.copy(), dict(data.info))
    at = AppTest.from_file(str(ROOT / "app_pages" / "analysis.py"), default_timeout=60)
    at.query_params["run"] = run_id
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    for tab in ("Speakers", "Why?", "Transcript", "Files"):  # every tab's body runs once
        at.session_state["analysis_tab"] = tab
        at.run()
        assert not at.exception, [e.value for e in at.exception]
    assert _session_reads(run_id) is data
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
