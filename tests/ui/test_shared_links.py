"""Links and the browser's session id (issue 38, item 13): with login on, a signed-in user who
opens another user's full URL (its `?sid=`) gets a session of their own, so they neither read
nor write the other's Run form drafts, and the link still opens the run it names; without
login, the copy-link captions of a run and a sweep carry no session id.

Sign-in is simulated (the `signed_in` fixture); the same with a real
OIDC provider in a browser is tests/e2e/test_login_links.py."""

from __future__ import annotations

import uuid

from streamlit.testing.v1 import AppTest

from groupchat_core.store import RunStore
from groupchat_ui.analysis import logic as analysis_logic
from groupchat_ui.kit import form_memory, store_access
from tests.helpers import ROOT
from tests.helpers.app_helpers import fill, goto, query, session, sim_sweep


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


def test_without_login_the_copy_links_of_a_run_and_a_sweep_carry_no_session_id(app):
    store = RunStore()
    run_id, sweep_id = analysis_logic.run_demo(store), sim_sweep(store)
    goto(app, "analysis", run=run_id)
    assert query(app, "sid")  # the address bar keeps this browser's id (a reload keeps drafts)
    links = [c.value for c in app.caption if c.value.startswith("Link to this run")]
    assert links == [f"Link to this run: `analysis?run={run_id}`"]
    goto(app, "sweeps", sweep=str(sweep_id))
    links = [c.value for c in app.caption if c.value.startswith("Link to this sweep")]
    assert links == [f"Link to this sweep: `sweeps?sweep={sweep_id}`"]


def test_an_owner_id_belongs_to_the_user_whose_session_made_it():
    mine, forged = uuid.uuid4().hex, uuid.uuid4().hex
    assert form_memory.claim(mine, "alice", from_link=False)  # her session made it
    assert form_memory.claim(mine, "alice", from_link=True)  # her reload
    assert not form_memory.claim(mine, "bob", from_link=True)  # her link, opened by Bob
    assert not form_memory.claim(mine, "bob", from_link=False)  # nor by a session switching
    assert not form_memory.claim(forged, "bob", from_link=True)  # made by no session here
    assert form_memory.claim(forged, "bob", from_link=False)
