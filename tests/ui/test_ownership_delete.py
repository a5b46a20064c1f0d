"""Ownerless runs and sweeps are read-only for signed-in users; admins and owners delete.

Runs and sweeps that nobody is recorded as owning (made by scripts, older versions) used to be
deletable and resumable by anyone signed in. Now only an admin (GROUPCHAT_ADMINS) deletes them;
a sweep's owner deletes it from the Sweeps page after a confirmation naming it. Two AppTest
sessions share one store, as two browsers share a server (sign-in simulated as in
tests/ui/test_ownership.py; the real OIDC sign-in is tests/e2e/test_login.py).
"""

from __future__ import annotations

import getpass
from collections.abc import Callable, Iterator

import pytest
from streamlit.testing.v1 import AppTest

from groupchat_core import ConfigError, GroupChat
from groupchat_core.store import RunStore
from groupchat_core.sweeps import parse_sweep, run_sweep
from groupchat_ui.kit import jobs as job_registry
from groupchat_ui.kit import store_access
from groupchat_ui.kit.jobs import LOCAL_USER, may_manage
from groupchat_ui.kit.presets import DEBATE_TRIO
from groupchat_ui.runs import logic as runs_logic
from groupchat_ui.sweeps import logic as sweeps_logic
from tests.helpers.app_helpers import goto, signed_in_sessions

ADMINS_VAR = "GROUPCHAT_ADMINS"  # the documented setting (docs/engine.md, Security model)
USERS = {"alice": ("alice@example.org", "Alice Liddell"), "bob": ("bob@example.org", "Bob"),
         "root": ("root@example.org", "Root")}


@pytest.fixture
def store() -> RunStore:
    return RunStore()  # GROUPCHAT_DB points into this test's tmp_path (tests/conftest.py)


@pytest.fixture
def signed_in(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], AppTest]]:
    open_as = signed_in_sessions(monkeypatch, USERS)
    monkeypatch.setenv(ADMINS_VAR, "root@example.org")
    store_access.invalidate()
    yield open_as
    job_registry.registry().shutdown()


def texts(at: AppTest) -> str:
    return " | ".join([c.value for c in at.caption] + [w.value for w in at.warning]
                      + [e.value for e in at.error] + [s.value for s in at.success])


def test_the_owner_rule(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(ADMINS_VAR, "root@example.org, ops@example.org")
    assert may_manage("alice@example.org", "alice@example.org")
    assert not may_manage("alice@example.org", "bob@example.org")
    assert not may_manage(None, "bob@example.org")  # nobody recorded: read-only when signed in
    assert may_manage(None, "root@example.org") and may_manage("alice@example.org",
                                                                "ops@example.org")
    # Without login (one person's dashboard): theirs, nobody's, and the CLI's (the OS user's).
    assert may_manage(None, LOCAL_USER) and may_manage(LOCAL_USER, LOCAL_USER)
    assert may_manage(getpass.getuser(), LOCAL_USER)
    assert not may_manage("alice@example.org", LOCAL_USER)


def ownerless_run(store: RunStore) -> str:
    chat = GroupChat(name="scripted", agents=DEBATE_TRIO.build_agents(latency_s=0.0),
                     **dict(DEBATE_TRIO.settings))
    store.attach(chat)  # a script: no owner named
    chat.run(DEBATE_TRIO.task)
    store.flush()
    return chat.last_run.run_id


def test_a_signed_in_user_cannot_delete_an_ownerless_run_and_an_admin_can(signed_in, store):
    run_id = ownerless_run(store)
    assert store.run_info(run_id)["owner"] is None
    bob = goto(signed_in("bob"), "runs")
    table = bob.dataframe[0].value
    row = table.index[table["run_id"] == run_id][0]
    bob.session_state["runs_table"] = {"selection": {"rows": [int(row)], "columns": [],
                                                     "cells": []}}
    bob.run()
    bob.button(key="delete_runs").click().run()
    assert "or by nobody recorded" in texts(bob) and "or an admin" in texts(bob)
    assert not any(b.key == "confirm_delete_yes" for b in bob.button)
    assert runs_logic.delete_runs(store, [run_id], "bob@example.org") == 0
    assert run_id in store.run_ids()

    root = goto(signed_in("root"), "runs")  # an admin deletes it through the confirmation
    table = root.dataframe[0].value
    row = table.index[table["run_id"] == run_id][0]
    root.session_state["runs_table"] = {"selection": {"rows": [int(row)], "columns": [],
                                                      "cells": []}}
    root.run()
    root.button(key="delete_runs").click().run()
    root.button(key="confirm_delete_yes").click().run()
    assert run_id not in store.run_ids()


def finished_sweep(store: RunStore, name: str, owner: str | None = None,
                   owner_name: str | None = None) -> str:
    agents = [a.to_spec() for a in DEBATE_TRIO.build_agents(latency_s=0.0)]
    spec = parse_sweep({"name": name, "base": {"max_loops": 4, "agents": agents},
                        "grid": {"threshold": [0.4, 0.6]}, "tasks": ["Plan it."]})
    outcome = run_sweep(spec, store, owner=owner, owner_name=owner_name)
    assert outcome.status == "finished"
    return outcome.sweep_id


def test_a_sweeps_owner_deletes_it_from_the_sweeps_page_after_a_confirmation(signed_in, store):
    sweep_id = finished_sweep(store, "alice's grid", *USERS["alice"])
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
    sweep_id = finished_sweep(store, "scripted grid")  # nobody recorded
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
