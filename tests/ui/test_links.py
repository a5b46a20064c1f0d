"""Links (issue 38, items 11 and 13): a run or sweep id or a unique prefix opens that item, an
unknown one says so and opens none; copy links carry no session id; with login on, another
user's `?sid=` gets a session of its own (real OIDC: tests/e2e/test_login.py)."""

from __future__ import annotations

import uuid

import pytest
from streamlit.testing.v1 import AppTest

from groupchat_core.store import RunStore
from groupchat_ui.analysis import logic as analysis_logic
from groupchat_ui.kit import form_memory, store_access
from tests.helpers import ROOT
from tests.helpers.app_helpers import errors, fill, goto, query, session, sim_sweep


def copy_links(at: AppTest, what: str) -> list[str]:
    return [c.value for c in at.caption if c.value.startswith(f"Link to this {what}")]


@pytest.mark.parametrize(("page", "param", "picker", "unknown"), [
    ("analysis", "run", "analysis_run", "zzzz"), ("sweeps", "sweep", "sw_pick", "6e88a4da9a76")])
def test_an_id_prefix_opens_that_item_and_an_unknown_id_opens_none(
        app: AppTest, page: str, param: str, picker: str, unknown: str):
    store = RunStore()
    if param == "run":
        first, newest = analysis_logic.run_demo(store), analysis_logic.run_demo(store)
        store_access.invalidate()
        prefix, closest = first[:8], newest[:12]  # the id the app's own labels show
    else:
        first, newest = sim_sweep(store, "first"), sim_sweep(store, "newest")
        prefix, closest = first[:12], first[:12]  # the id `sweep list` prints
    goto(app, page, **{param: prefix})
    assert app.selectbox(key=picker).value == first
    assert query(app, param) == first  # the same item's full id
    assert not app.error
    assert query(app, "sid")  # the address bar keeps this browser's id (a reload keeps drafts)
    assert copy_links(app, param) == [f"Link to this {param}: `{page}?{param}={first}`"]  # no sid

    goto(app, page, **{param: unknown})
    said = errors(app)
    assert unknown in said and "closest: " in said and closest in said
    assert app.selectbox(key=picker).value is None  # neither the newest nor the last
    assert query(app, param) == unknown
    if param == "run":
        assert not app.get("plotly_chart") and not app.get("download_button")
    else:
        assert not any(b.label == "Export sweep to MLflow" for b in app.button)

    app.selectbox(key=picker).set_value(newest).run()  # a pick leaves the bad link
    assert query(app, param) == newest and not app.error
    assert app.selectbox(key=picker).value == newest


def _open_link(who: str, page: str, **params: str) -> AppTest:
    """A new browser session signed in as `who` opening `page` with `params` (a pasted URL)."""
    at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=60)
    at.session_state["test_user"] = who
    return goto(at, page, **params)


def test_a_signed_in_user_opening_anothers_url_neither_reads_nor_writes_her_drafts(signed_in):
    run_id = analysis_logic.run_demo(RunStore())
    store_access.invalidate()
    alice = fill(goto(signed_in("alice"), "run"), run_task="Alice's unsent plan",
                 run_param_max_loops=7)
    alice.button(key="start_run").click().run()  # no agents picked: not started, remembered
    assert not session(alice).job_ids
    sid = query(alice, "sid")
    assert sid == session(alice).owner

    bob = _open_link("bob", "analysis", run=run_id, sid=sid)  # her full URL, pasted
    assert bob.selectbox(key="analysis_run").value == run_id  # the link opens the run it names
    assert session(bob).owner != sid and query(bob, "sid") == session(bob).owner
    goto(bob, "run")
    assert bob.text_area(key="run_task").value != "Alice's unsent plan"
    assert bob.number_input(key="run_param_max_loops").value != 7
    bob.text_area(key="run_task").set_value("Bob was here")
    bob.button(key="start_run").click().run()

    again = _open_link("alice", "run", sid=sid)  # Alice reloads: her drafts, not Bob's
    assert session(again).owner == sid
    assert again.text_area(key="run_task").value == "Alice's unsent plan"
    assert again.number_input(key="run_param_max_loops").value == 7


def test_a_sid_no_session_of_this_server_made_is_not_adopted_with_login_on(signed_in):
    forged = "ab" * 16
    bob = _open_link("bob", "run", sid=forged)
    assert session(bob).owner != forged and query(bob, "sid") == session(bob).owner
    again = _open_link("bob", "run", sid=session(bob).owner)  # his own reload keeps his id
    assert session(again).owner == session(bob).owner


def test_an_owner_id_belongs_to_the_user_whose_session_made_it():
    mine, forged = uuid.uuid4().hex, uuid.uuid4().hex
    assert form_memory.claim(mine, "alice", from_link=False)  # her session made it
    assert form_memory.claim(mine, "alice", from_link=True)  # her reload
    assert not form_memory.claim(mine, "bob", from_link=True)  # her link, opened by Bob
    assert not form_memory.claim(mine, "bob", from_link=False)  # nor by a session switching
    assert not form_memory.claim(forged, "bob", from_link=True)  # made by no session here
    assert form_memory.claim(forged, "bob", from_link=False)
