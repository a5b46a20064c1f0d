"""Ownerless runs and sweeps are read-only for signed-in users; admins and owners delete.

Runs and sweeps nobody is recorded as owning (scripts, older versions) used to be deletable and
resumable by anyone signed in. Now only an admin (GROUPCHAT_ADMINS) deletes them; a sweep's
owner deletes it from the Sweeps page after a confirmation naming it.
"""

from __future__ import annotations

import getpass

import pytest
from streamlit.testing.v1 import AppTest

from groupchat_core import ConfigError, GroupChat
from groupchat_core.store import RunStore
from groupchat_ui.kit import jobs as job_registry
from groupchat_ui.kit.jobs import LOCAL_USER, may_manage
from groupchat_ui.kit.presets import DEBATE_TRIO
from groupchat_ui.runs import logic as runs_logic
from groupchat_ui.sweeps import logic as sweeps_logic
from tests.helpers.app_helpers import goto, select_rows, sim_sweep

from .conftest import USERS


@pytest.fixture
def store() -> RunStore:
    return RunStore()  # GROUPCHAT_DB points into this test's tmp_path (tests/conftest.py)


def texts(at: AppTest) -> str:
    return " | ".join([c.value for c in at.caption] + [w.value for w in at.warning]
                      + [e.value for e in at.error] + [s.value for s in at.success])


def test_the_owner_rule(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("GROUPCHAT_ADMINS", "root@example.org, ops@example.org")
    assert may_manage("alice@example.org", "alice@example.org")
    assert not may_manage("alice@example.org", "bob@example.org")
    assert not may_manage(None, "bob@example.org")  # nobody recorded: read-only when signed in
    assert not may_manage(LOCAL_USER, "bob@example.org")  # made before login was turned on
    assert may_manage(None, "root@example.org") and may_manage("alice@example.org",
                                                                "ops@example.org")
    # Without login (one person's dashboard): theirs, nobody's, and the CLI's (the OS user's).
    assert may_manage(None, LOCAL_USER) and may_manage(LOCAL_USER, LOCAL_USER)
    assert may_manage(getpass.getuser(), LOCAL_USER)
    assert not may_manage("alice@example.org", LOCAL_USER)


def test_a_signed_in_user_cannot_delete_an_ownerless_run_and_an_admin_can(signed_in, store):
    chat = GroupChat(name="scripted", agents=DEBATE_TRIO.build_agents(latency_s=0.0),
                     **dict(DEBATE_TRIO.settings))
    store.attach(chat)  # a script: no owner named
    chat.run(DEBATE_TRIO.task)
    store.flush()
    run_id = chat.last_run.run_id
    assert store.run_info(run_id)["owner"] is None
    for who in ("bob", "root"):  # bob is refused; root, an admin, deletes it
        at = goto(signed_in(who), "runs")
        table = at.dataframe[0].value
        select_rows(at, [int(table.index[table["run_id"] == run_id][0])])
        at.button(key="delete_runs").click().run()
        if who == "bob":
            assert "or by nobody recorded" in texts(at) and "or an admin" in texts(at)
            assert not any(b.key == "confirm_delete_yes" for b in at.button)
            assert runs_logic.delete_runs(store, [run_id], "bob@example.org") == 0
            assert run_id in store.run_ids()
    at.button(key="confirm_delete_yes").click().run()
    assert run_id not in store.run_ids()


def test_a_sweeps_owner_deletes_it_from_the_sweeps_page_after_a_confirmation(signed_in, store):
    sweep_id = sim_sweep(store, "alice's grid", (0.4, 0.6), 4, owner=USERS["alice"][0],
                         owner_name=USERS["alice"][1])
    assert len(store.list_runs(sweep_id=sweep_id)) == 2
    alice, bob = signed_in("alice"), signed_in("bob")

    goto(bob, "sweeps", sweep=sweep_id)  # not his: the button is off and says whose it is
    assert bob.button(key="sw_delete").disabled
    assert "Only Alice Liddell, who started this sweep" in bob.button(key="sw_delete").help
    with pytest.raises(ConfigError, match="Only Alice Liddell"):
        sweeps_logic.delete_sweep(store, sweep_id, "bob@example.org")

    goto(alice, "sweeps", sweep=sweep_id)
    delete = alice.button(key="sw_delete")
    assert not delete.disabled
    delete.click().run()
    assert "Delete sweep **alice's grid** (" in texts(alice) and "2 run(s)" in texts(alice)
    assert len(store.list_sweeps()) == 1  # nothing happens before the confirmation
    alice.button(key="confirm_sweep_delete_no").click().run()
    assert not any(b.key == "confirm_sweep_delete_yes" for b in alice.button)
    assert len(store.list_sweeps()) == 1
    alice.button(key="sw_delete").click().run()
    alice.button(key="confirm_sweep_delete_yes").click().run()
    assert not alice.exception, [e.value for e in alice.exception]
    assert f"Deleted sweep {sweep_id[:8]} and its 2 run(s)." in texts(alice)
    assert store.list_sweeps().empty and store.list_runs(sweep_id=sweep_id).empty
    assert "No sweeps in the store yet" in " ".join(i.value for i in alice.info)


def test_an_ownerless_sweep_is_read_only_for_signed_in_users(signed_in, store):
    sweep_id = sim_sweep(store, "scripted grid", (0.4, 0.6), 4)  # nobody recorded
    store.finish_sweep(sweep_id, "cancelled")  # resumable
    bob = goto(signed_in("bob"), "sweeps", sweep=sweep_id)
    assert bob.button(key="sw_delete").disabled and bob.button(key="sw_resume").disabled
    assert "Nobody is recorded as having started this sweep" in texts(bob)
    with pytest.raises(ConfigError, match="only an admin"):
        sweeps_logic.start_sweep(job_registry.registry(), store, "b", resume=sweep_id,
                                 user="bob@example.org")
    root = goto(signed_in("root"), "sweeps", sweep=sweep_id)
    assert not root.button(key="sw_delete").disabled
    root.button(key="sw_delete").click().run()
    root.button(key="confirm_sweep_delete_yes").click().run()
    assert store.list_sweeps().empty
