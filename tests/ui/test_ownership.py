"""Run ownership in the dashboard: who may stop a job, delete a run or resume a sweep.

Two AppTest sessions share one store and the process-wide job registry, as two browsers share a
server. Sign-in is simulated (the `signed_in` fixture; the real OIDC sign-in is
tests/e2e/test_login.py); the login gate itself is tested with Streamlit's real `st.user`.
"""

from __future__ import annotations

import pytest

from groupchat_core import Agent, ConfigError
from groupchat_core.store import RunStore
from groupchat_ui.kit import jobs as job_registry
from groupchat_ui.kit import state, store_access
from groupchat_ui.kit.jobs import LOCAL_USER
from groupchat_ui.kit.presets import DEBATE_TRIO
from groupchat_ui.runs import logic as runs_logic
from groupchat_ui.sweeps import logic as sweeps_logic
from tests.helpers.app_helpers import (
    errors,
    fill,
    goto,
    new_app,
    poll,
    query,
    select_rows,
    session,
    sim_agents,
    status,
    sweep_status,
    wait_for,
)

from .conftest import USERS

SECRET = "sk-test-alice-0123456789SECRET"


@pytest.fixture
def store() -> RunStore:
    return RunStore()  # GROUPCHAT_DB points into this test's tmp_path (tests/conftest.py)


def start_slow_run(at) -> str:
    fill(goto(at, "run"), run_roster=["Ann", "Ben"], run_task="Talk about the weather.",
         run_param_threshold=0.0, run_param_max_loops=200)
    at.button(key="start_run").click().run()
    assert not at.error, [e.value for e in at.error]
    job_id = session(at).current_job
    assert job_id
    return str(job_id)


def test_only_the_user_a_job_runs_for_can_stop_it():
    registry = job_registry.JobRegistry()

    async def forever(emit):
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
    at = new_app()
    assert [t.value for t in at.title] == ["GroupChat Lab"]
    assert [b.label for b in at.button] == ["Log in"]
    assert not at.sidebar.caption and not at.dataframe  # no jobs, no data location, no runs
    assert session(at).job_ids == []


def test_without_login_every_session_is_the_local_user(store: RunStore):
    at = new_app()
    assert (session(at).user, session(at).user_name) == (LOCAL_USER, LOCAL_USER)
    assert not [b for b in at.sidebar.button if b.label == "Log out"]  # nobody signs in


def test_a_second_user_watches_a_run_but_cannot_stop_or_delete_it(signed_in, store: RunStore):
    sim_agents(store, "Ann", "Ben", latency=0.5)
    alice, bob = signed_in("alice"), signed_in("bob")
    assert any("Signed in as **Alice Liddell** (alice@example.org)" in c.value
               for c in alice.sidebar.caption)
    job = start_slow_run(alice)
    wait_for(lambda: job_registry.registry().snapshot(job).run_id, "the run's id")
    run_id = job_registry.registry().snapshot(job).run_id
    store.flush()
    assert (store.run_info(run_id)["owner"], store.run_info(run_id)["owner_name"]) == USERS["alice"]

    goto(bob, "run", job=job)  # a shared link: bob watches alice's run
    assert job in status(bob) and status(bob).startswith(("status: running", "status: queued"))
    assert bob.button(key="stop_run").disabled
    assert any("Only Alice Liddell, who started this run, can stop or delete it" in c.value
               for c in bob.caption)
    assert not job_registry.registry().cancel(job, user="bob@example.org")
    assert not job_registry.registry().snapshot(job).done
    assert job not in [j.id for j in job_registry.registry().jobs_for(
        session(bob).owner, "bob@example.org")]

    store_access.invalidate()
    table = goto(bob, "runs").dataframe[0].value
    assert table.loc[table["run_id"] == run_id, "owner"].tolist() == ["Alice Liddell"]
    select_rows(bob, [int(table.index[table["run_id"] == run_id][0])])
    bob.button(key="delete_runs").click().run()
    assert "started by someone else" in errors(bob)
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
    table = goto(alice, "runs").dataframe[0].value  # alice deletes her own run
    select_rows(alice, [int(table.index[table["run_id"] == run_id][0])])
    alice.button(key="delete_runs").click().run()
    alice.button(key="confirm_delete_yes").click().run()
    assert run_id not in store.run_ids()


def test_keys_typed_in_settings_stay_in_that_session(signed_in, store: RunStore):
    alice, bob = signed_in("alice"), signed_in("bob")
    fill(goto(alice, "settings"), key_OPENAI_API_KEY=SECRET)
    alice.button(key="save_keys").click().run()
    assert session(alice).provider_keys == {"OPENAI_API_KEY": SECRET}
    goto(bob, "settings")
    assert session(bob).provider_keys == {}
    assert not any("set ✓" in t.label for t in bob.text_input)
    store.save_agents([Agent(agent_name="Gpt", model_name="gpt-4o-mini"),
                       Agent(agent_name="Sim", model_name="sim/balanced")])
    store_access.invalidate()
    fill(goto(bob, "run"), run_roster=["Gpt", "Sim"]).run()
    assert bob.button(key="start_run").disabled  # alice's key does not count for bob
    assert "OPENAI\\_API\\_KEY" in errors(bob)


def test_only_the_owner_resumes_a_sweep_and_an_import_is_the_importers(store: RunStore):
    sweep_id = store.create_sweep("s", {}, owner="alice@example.org", owner_name="Alice")
    store.finish_sweep(sweep_id, "cancelled")
    with pytest.raises(ConfigError, match="Only Alice, who started this sweep"):
        sweeps_logic.start_sweep(job_registry.JobRegistry(), store, "b", resume=sweep_id,
                                 user="bob@example.org")

    from groupchat_core import GroupChat, bundle_json

    chat = GroupChat(name="x", agents=DEBATE_TRIO.build_agents(latency_s=0.0),
                     **dict(DEBATE_TRIO.settings))
    store.attach(chat, owner="alice@example.org", owner_name="Alice")
    chat.run(DEBATE_TRIO.task)
    bundle = bundle_json(store, chat.last_run.run_id)
    store.delete_run(chat.last_run.run_id)
    run_id = runs_logic.import_run(store, bundle, "run.json", user="bob@example.org",
                                   user_name="Bob")
    assert store.run_info(run_id)["owner"] == "bob@example.org"


def test_others_watch_a_sweep_and_its_owner_stops_and_resumes_it_from_another_session(
        signed_in, store: RunStore):
    """Bob watches Alice's sweep but cannot stop or resume it; Alice stops and resumes it from
    another browser (the job registry is per server, ownership per user). That a resumed sweep
    runs every cell exactly once: tests/ui/test_app_sweeps.py."""
    store.save_agents(DEBATE_TRIO.build_agents(latency_s=0.3))  # far too slow to end here
    store_access.invalidate()
    laptop, phone, bob = signed_in("alice"), signed_in("alice"), signed_in("bob")
    goto(laptop, "sweeps").selectbox(key="sw_room").select("Saved agents").run()
    fill(laptop, sw_saved=["Optimist", "Pessimist", "Realist"], sw_threshold="0.01, 0.02",
         sw_repeats=50, sw_max_loops=12, sw_concurrency=1).run()
    laptop.button(key="sw_start").click().run()
    poll(laptop, lambda a: sweep_status(a).startswith("sweep status: running"), "the sweep",
         shown=sweep_status)
    sweep_id = query(laptop, "sweep")
    assert (store.get_sweep(sweep_id)["owner"], store.get_sweep(sweep_id)["owner_name"]) == (
        USERS["alice"])

    goto(bob, "sweeps", sweep=sweep_id)  # the sweep's link: bob watches it
    assert sweep_status(bob).startswith("sweep status: running")
    assert bob.button(key="sw_stop").disabled
    assert any("Only Alice Liddell, who started this sweep" in c.value for c in bob.caption)
    job = next(t for t in job_registry.registry().find_tasks("sweep", lambda t: not t.done))
    assert not job_registry.registry().cancel(job.id, user="bob@example.org")
    assert not job_registry.registry().task_snapshot(job.id).done

    goto(phone, "sweeps", sweep=sweep_id)  # her other browser opens the sweep's link
    assert sweep_status(phone).startswith("sweep status: running")
    assert not phone.button(key="sw_stop").disabled  # hers to stop, from any session
    phone.button(key="sw_stop").click().run()
    poll(phone, lambda a: sweep_status(a).startswith("sweep status: cancelled"), "the stop",
         shown=sweep_status)
    assert store.get_sweep(sweep_id)["status"] == "cancelled"
    poll(phone, lambda a: any(b.key == "sw_resume" for b in a.button), "Resume")
    assert not phone.button(key="sw_resume").disabled
    poll(bob, lambda a: any(b.key == "sw_resume" for b in a.button), "bob's Resume")
    assert bob.button(key="sw_resume").disabled  # not his to resume
    phone.button(key="sw_resume").click().run()
    poll(phone, lambda a: sweep_status(a).startswith("sweep status: running"),
         "the resumed sweep", shown=sweep_status)
    poll(phone, lambda a: store.get_sweep(sweep_id)["status"] == "running", "the store")
    runs = store.list_runs(sweep_id=sweep_id)
    assert len(runs) and set(runs["owner"]) == {USERS["alice"][0]}  # her sweep's runs are hers
    assert store.get_sweep(sweep_id)["owner"] == USERS["alice"][0]
