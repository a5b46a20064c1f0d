"""Run ownership in the dashboard: who may stop a job, delete a run or resume a sweep.

Two AppTest sessions share one store and the process-wide job registry, as two browsers share a
server. The signed-in user is simulated by replacing `state.identify` (the real sign-in, through
an OIDC provider in a browser, is tests/e2e/test_login.py); the login gate itself is tested here
with Streamlit's real `st.user` (nobody signed in).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest
from streamlit.testing.v1 import AppTest

from groupchat_core import Agent, ConfigError
from groupchat_core.store import RunStore
from groupchat_ui.kit import jobs as job_registry
from groupchat_ui.kit import state, store_access
from groupchat_ui.kit.jobs import LOCAL_USER, may_manage
from groupchat_ui.runs import logic as runs_logic
from groupchat_ui.sweeps import logic as sweeps_logic
from tests.helpers import ROOT
from tests.helpers.app_helpers import goto, poll, signed_in_sessions, status

DEADLINE_S = 30.0
SECRET = "sk-test-alice-0123456789SECRET"
USERS = {"alice": ("alice@example.org", "Alice Liddell"), "bob": ("bob@example.org", "Bob")}


@pytest.fixture
def store() -> RunStore:
    return RunStore()  # GROUPCHAT_DB points into this test's tmp_path (tests/conftest.py)


@pytest.fixture
def signed_in(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], AppTest]]:
    """Opens the dashboard as a signed-in user (by short name): a server with login on."""
    open_as = signed_in_sessions(monkeypatch, USERS)
    yield open_as
    job_registry.registry().shutdown()


def slow_room(store: RunStore) -> None:
    slow = {"sim_latency": 0.5}
    store.save_agents([Agent(agent_name=n, model_name="sim/eager", litellm_kwargs=slow)
                       for n in ("Ann", "Ben")])
    store_access.invalidate()


def start_slow_run(at: AppTest) -> str:
    goto(at, "run")
    at.multiselect(key="run_roster").set_value(["Ann", "Ben"])
    at.text_area(key="run_task").set_value("Talk about the weather.")
    at.number_input(key="run_param_threshold").set_value(0.0)
    at.number_input(key="run_param_max_loops").set_value(200)
    at.button(key="start_run").click().run()
    assert not at.error, [e.value for e in at.error]
    job_id = at.session_state[state.STATE_KEY].current_job
    assert job_id
    return str(job_id)


def test_the_owner_rule():
    assert may_manage("alice@example.org", "alice@example.org")
    assert not may_manage("alice@example.org", "bob@example.org")
    assert not may_manage(LOCAL_USER, "bob@example.org")  # made before login was turned on
    assert not may_manage(None, "bob@example.org")  # nobody recorded: read-only (admins
    # delete those: tests/ui/test_ownership_delete.py)


def test_only_the_user_a_job_runs_for_can_stop_it():
    registry = job_registry.JobRegistry()
    started = []

    async def forever(emit):
        started.append(True)
        import asyncio

        await asyncio.sleep(3600)

    job = registry.start_job(forever, "browser-1", user="alice@example.org", user_name="Alice")
    try:
        assert not registry.cancel(job, user="bob@example.org")
        assert registry.task_snapshot(job).status in ("queued", "running")
        assert registry.task_snapshot(job).user_name == "Alice"
        assert registry.tasks_for("browser-1", "sweep", "bob@example.org") == []
        assert [t.id for t in registry.tasks_for("browser-1", "sweep", "alice@example.org")] == [
            job]
        assert registry.cancel(job, user="alice@example.org")
        assert registry.task_snapshot(job).status == "cancelled"
    finally:
        registry.shutdown()


def test_signed_out_visitors_see_only_the_login(monkeypatch: pytest.MonkeyPatch,
                                                store: RunStore):
    monkeypatch.setattr(state, "login_configured", lambda: True)  # as [auth] in secrets.toml
    at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=60)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert [t.value for t in at.title] == ["GroupChat Lab"]
    assert [b.label for b in at.button] == ["Log in"]
    assert not at.sidebar.caption and not at.dataframe  # no jobs, no data location, no runs
    assert state.STATE_KEY in at.session_state
    assert at.session_state[state.STATE_KEY].job_ids == []


def test_without_login_every_session_is_the_local_user(store: RunStore):
    at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=60)
    at.run()
    assert not at.exception
    session = at.session_state[state.STATE_KEY]
    assert (session.user, session.user_name) == (LOCAL_USER, LOCAL_USER)
    assert not [b for b in at.sidebar.button if b.label == "Log out"]  # nobody signs in


def test_a_second_user_watches_a_run_but_cannot_stop_or_delete_it(signed_in, store: RunStore):
    slow_room(store)
    alice, bob = signed_in("alice"), signed_in("bob")
    assert any("Signed in as **Alice Liddell** (alice@example.org)" in c.value
               for c in alice.sidebar.caption)
    job = start_slow_run(alice)
    run_id = None
    deadline = time.monotonic() + DEADLINE_S
    while run_id is None:
        assert time.monotonic() < deadline
        run_id = job_registry.registry().snapshot(job).run_id
        time.sleep(0.05)
    store.flush()
    assert (store.run_info(run_id)["owner"], store.run_info(run_id)["owner_name"]) == USERS["alice"]

    goto(bob, "run", job=job)  # a shared link: bob watches alice's run
    assert job in status(bob) and status(bob).startswith(("status: running", "status: queued"))
    stop = bob.button(key="stop_run")
    assert stop.disabled
    assert any("Only Alice Liddell, who started this run, can stop or delete it" in c.value
               for c in bob.caption)
    assert not job_registry.registry().cancel(job, user="bob@example.org")
    assert not job_registry.registry().snapshot(job).done
    assert job not in [j.id for j in job_registry.registry().jobs_for(
        bob.session_state[state.STATE_KEY].owner, "bob@example.org")]

    store_access.invalidate()
    goto(bob, "runs")
    table = bob.dataframe[0].value
    assert table.loc[table["run_id"] == run_id, "owner"].tolist() == ["Alice Liddell"]
    row = table.index[table["run_id"] == run_id][0]
    bob.session_state["runs_table"] = {"selection": {"rows": [int(row)], "columns": [],
                                                     "cells": []}}
    bob.run()
    bob.button(key="delete_runs").click().run()
    assert any("started by someone else" in e.value for e in bob.error)
    assert not any(b.key == "confirm_delete_yes" for b in bob.button)
    assert runs_logic.delete_runs(store, [run_id], "bob@example.org") == 0
    assert run_id in store.run_ids()

    goto(alice, "run")
    assert not alice.button(key="stop_run").disabled
    alice.button(key="stop_run").click().run()
    poll(alice, lambda at: status(at).startswith("status: cancelled"), "alice's stop")

    bob_job = start_slow_run(bob)  # bob's own run: his to stop
    assert not bob.button(key="stop_run").disabled
    bob.button(key="stop_run").click().run()
    poll(bob, lambda at: status(at).startswith("status: cancelled"), "bob's stop")
    assert job_registry.registry().snapshot(bob_job).user == "bob@example.org"

    store.flush()
    store_access.invalidate()
    goto(alice, "runs")  # alice deletes her own run through the shared confirmation
    table = alice.dataframe[0].value
    row = table.index[table["run_id"] == run_id][0]
    alice.session_state["runs_table"] = {"selection": {"rows": [int(row)], "columns": [],
                                                       "cells": []}}
    alice.run()
    alice.button(key="delete_runs").click().run()
    alice.button(key="confirm_delete_yes").click().run()
    assert run_id not in store.run_ids()


def test_keys_typed_in_settings_stay_in_that_session(signed_in, store: RunStore):
    alice, bob = signed_in("alice"), signed_in("bob")
    goto(alice, "settings")
    alice.text_input(key="key_OPENAI_API_KEY").set_value(SECRET)
    alice.button(key="save_keys").click().run()
    assert alice.session_state[state.STATE_KEY].provider_keys == {"OPENAI_API_KEY": SECRET}
    goto(bob, "settings")
    assert bob.session_state[state.STATE_KEY].provider_keys == {}
    assert not any("set ✓" in t.label for t in bob.text_input)
    store.save_agents([Agent(agent_name="Gpt", model_name="gpt-4o-mini"),
                       Agent(agent_name="Sim", model_name="sim/balanced")])
    store_access.invalidate()
    goto(bob, "run")
    bob.multiselect(key="run_roster").set_value(["Gpt", "Sim"]).run()
    assert bob.button(key="start_run").disabled  # alice's key does not count for bob
    assert "OPENAI\\_API\\_KEY" in " ".join(e.value for e in bob.error)


def test_only_the_owner_resumes_a_sweep_and_an_import_is_the_importers(store: RunStore):
    sweep_id = store.create_sweep("s", {}, owner="alice@example.org", owner_name="Alice")
    store.finish_sweep(sweep_id, "cancelled")
    with pytest.raises(ConfigError, match="Only Alice, who started this sweep"):
        sweeps_logic.start_sweep(job_registry.JobRegistry(), store, "b", resume=sweep_id,
                                 user="bob@example.org")

    from groupchat_core import GroupChat, bundle_json
    from groupchat_ui.kit.presets import DEBATE_TRIO

    chat = GroupChat(name="x", agents=DEBATE_TRIO.build_agents(latency_s=0.0),
                     **dict(DEBATE_TRIO.settings))
    store.attach(chat, owner="alice@example.org", owner_name="Alice")
    chat.run(DEBATE_TRIO.task)
    bundle = bundle_json(store, chat.last_run.run_id)
    store.delete_run(chat.last_run.run_id)
    run_id = runs_logic.import_run(store, bundle, "run.json", user="bob@example.org",
                                   user_name="Bob")
    assert store.run_info(run_id)["owner"] == "bob@example.org"


def sweep_status(at: AppTest) -> str:
    return next((c.value for c in at.caption if c.value.startswith("sweep status:")), "")


def test_a_second_user_watches_a_sweep_but_cannot_stop_or_resume_it(signed_in, store: RunStore):
    from groupchat_ui.kit.presets import DEBATE_TRIO

    store.save_agents(DEBATE_TRIO.build_agents(latency_s=0.3))  # slow enough to watch
    store_access.invalidate()
    alice, bob = signed_in("alice"), signed_in("bob")
    goto(alice, "sweeps")
    alice.selectbox(key="sw_room").select("Saved agents").run()
    alice.multiselect(key="sw_saved").set_value(["Optimist", "Pessimist", "Realist"]).run()
    alice.text_input(key="sw_threshold").input("0.4, 0.6")
    alice.text_input(key="sw_recency_penalty").input("0.0, 0.3")
    alice.number_input(key="sw_repeats").set_value(4)
    alice.number_input(key="sw_max_loops").set_value(12)
    alice.number_input(key="sw_concurrency").set_value(1).run()
    alice.button(key="sw_start").click().run()
    poll(alice, lambda a: sweep_status(a).startswith("sweep status: running"), "the sweep")
    sweep_id = alice.query_params["sweep"]
    assert (store.get_sweep(sweep_id)["owner"], store.get_sweep(sweep_id)["owner_name"]) == (
        USERS["alice"])

    goto(bob, "sweeps", sweep=sweep_id)  # the sweep's link: bob watches it
    assert sweep_status(bob).startswith("sweep status: running")
    assert bob.button(key="sw_stop").disabled
    assert any("Only Alice Liddell, who started this sweep" in c.value for c in bob.caption)
    job = next(t for t in job_registry.registry().find_tasks("sweep", lambda t: not t.done))
    assert not job_registry.registry().cancel(job.id, user="bob@example.org")
    assert not job_registry.registry().task_snapshot(job.id).done

    assert not alice.button(key="sw_stop").disabled
    alice.button(key="sw_stop").click().run()
    poll(alice, lambda a: sweep_status(a).startswith("sweep status: cancelled"), "the stop")
    poll(alice, lambda a: any(b.key == "sw_resume" for b in a.button), "alice's Resume")
    assert not alice.button(key="sw_resume").disabled
    bob.run()
    poll(bob, lambda a: any(b.key == "sw_resume" for b in a.button), "bob's Resume")
    assert bob.button(key="sw_resume").disabled  # not his to resume
    assert store.get_sweep(sweep_id)["status"] == "cancelled"
    runs = store.list_runs(sweep_id=sweep_id)
    assert len(runs) and set(runs["owner"]) == {USERS["alice"][0]}  # her sweep's runs are hers


def test_the_owner_stops_and_resumes_a_sweep_from_another_session(signed_in, store: RunStore):
    """A sweep started in one browser is watched, stopped and resumed from another browser of
    the same signed-in user (the job registry is per server, ownership per user)."""
    from groupchat_ui.kit.presets import DEBATE_TRIO

    store.save_agents(DEBATE_TRIO.build_agents(latency_s=0.3))
    store_access.invalidate()
    laptop, phone = signed_in("alice"), signed_in("alice")
    goto(laptop, "sweeps")
    laptop.selectbox(key="sw_room").select("Saved agents").run()
    laptop.multiselect(key="sw_saved").set_value(["Optimist", "Pessimist", "Realist"]).run()
    laptop.text_input(key="sw_threshold").input("0.4, 0.6")
    laptop.number_input(key="sw_repeats").set_value(3)
    laptop.number_input(key="sw_max_loops").set_value(6)
    laptop.number_input(key="sw_concurrency").set_value(1).run()
    laptop.button(key="sw_start").click().run()
    poll(laptop, lambda a: sweep_status(a).startswith("sweep status: running"), "the sweep")
    sweep_id = laptop.query_params["sweep"]

    goto(phone, "sweeps", sweep=sweep_id)  # the other browser opens the sweep's link
    assert sweep_status(phone).startswith("sweep status: running")
    assert not phone.button(key="sw_stop").disabled  # hers to stop, from any session
    phone.button(key="sw_stop").click().run()
    poll(phone, lambda a: sweep_status(a).startswith("sweep status: cancelled"), "the stop")
    assert store.get_sweep(sweep_id)["status"] == "cancelled"
    poll(phone, lambda a: any(b.key == "sw_resume" for b in a.button), "Resume")
    assert not phone.button(key="sw_resume").disabled
    phone.button(key="sw_resume").click().run()
    poll(phone, lambda a: sweep_status(a).startswith("sweep status: finished"), "the resumed sweep")
    assert store.get_sweep(sweep_id)["status"] == "finished"
    assert len(store.list_runs(sweep_id=sweep_id)) >= 6  # every cell, none lost to the stop
    runs = store.list_runs(sweep_id=sweep_id)
    assert set(runs["owner"]) == {USERS["alice"][0]}
    assert store.get_sweep(sweep_id)["owner"] == USERS["alice"][0]
