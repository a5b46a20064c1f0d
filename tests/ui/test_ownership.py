"""Ownership on the dashboard: who may stop a job, delete or resume a run or sweep, and change a
saved agent (issue 19.1); session keys go only where they belong. Sign-in is simulated by the
`signed_in` fixture (real OIDC: tests/e2e/test_login.py). Private imports (`store._connect`,
`store._migrations`, `store._schema`): test hooks with no public name."""

from __future__ import annotations

import getpass
import json
from collections.abc import Iterator

import pytest
from sqlalchemy import insert, select
from streamlit.testing.v1 import AppTest

from groupchat_core import Agent, ConfigError, GroupChat, bundle_json, dump_agents
from groupchat_core.store import SCHEMA_VERSION, RunStore
from groupchat_core.store._connect import get_engine
from groupchat_core.store._migrations import create_version
from groupchat_core.store._schema import metadata_for, schema_version
from groupchat_ui.agents import logic
from groupchat_ui.kit import jobs as job_registry
from groupchat_ui.kit import state, store_access
from groupchat_ui.kit.access import ADMINS_ENV, Actor, is_admin, may_edit_agent
from groupchat_ui.kit.jobs import LOCAL_USER, may_manage
from groupchat_ui.kit.presets import DEBATE_TRIO, PRESETS
from groupchat_ui.run import logic as run_logic
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
    sim_sweep,
    status,
    sweep_status,
    wait_for,
)
from tests.helpers.stores import release_store_engines

from .conftest import USERS

SECRET = "sk-test-alice-0123456789SECRET"
ALICE = Actor("alice@example.org", "Alice Liddell", signed_in=True)
BOB = Actor("bob@example.org", "Bob", signed_in=True)
LOCAL = logic.LOCAL_ACTOR

pytestmark = pytest.mark.usefixtures("fresh_engines")


@pytest.fixture
def any_store(store_url: str) -> Iterator[RunStore]:
    """A store on each backend (tests/conftest.py's `store`) for the agent-owner rules."""
    yield RunStore(store_url)
    release_store_engines()


def texts(at: AppTest) -> str:
    return " | ".join([c.value for c in at.caption] + [w.value for w in at.warning]
                      + [e.value for e in at.error] + [s.value for s in at.success])


def start_slow_run(at) -> str:
    fill(goto(at, "run"), run_roster=["Ann", "Ben"], run_task="Talk about the weather.",
         run_param_threshold=0.0, run_param_max_loops=200)
    at.button(key="start_run").click().run()
    assert not at.error, [e.value for e in at.error]
    job_id = session(at).current_job
    assert job_id
    return str(job_id)


def test_without_login_every_session_is_the_local_user_and_with_it_visitors_see_the_login(
        monkeypatch: pytest.MonkeyPatch, store: RunStore):
    at = new_app()
    assert (session(at).user, session(at).user_name) == (LOCAL_USER, LOCAL_USER)
    assert not [b for b in at.sidebar.button if b.label == "Log out"]  # nobody signs in
    monkeypatch.setattr(state, "login_configured", lambda: True)  # as [auth] in secrets.toml
    at = new_app()  # signed out
    assert [t.value for t in at.title] == ["GroupChat Lab"]
    assert [b.label for b in at.button] == ["Log in"]
    assert not at.sidebar.caption and not at.dataframe  # no jobs, no data location, no runs
    assert session(at).job_ids == []


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
    wait_for(lambda: job_registry.registry().snapshot(bob_job).run_id, "bob's run's id")
    bob_run = job_registry.registry().snapshot(bob_job).run_id
    assert not bob.button(key="stop_run").disabled
    bob.button(key="stop_run").click().run()
    poll(bob, lambda at: status(at).startswith("status: cancelled"), "bob's stop")
    assert job_registry.registry().snapshot(bob_job).user == "bob@example.org"
    wait_for(lambda: {store.run_info(r)["status"] for r in (run_id, bob_run)} == {"cancelled"},
             "the store recording both stops")
    assert store.run_info(bob_run)["owner"] == USERS["bob"][0]

    store.flush()
    store_access.invalidate()
    table = goto(alice, "runs").dataframe[0].value  # alice deletes her own run
    select_rows(alice, [int(table.index[table["run_id"] == run_id][0])])
    alice.button(key="delete_runs").click().run()
    alice.button(key="confirm_delete_yes").click().run()
    assert run_id not in store.run_ids()


def test_keys_typed_in_settings_stay_in_that_session_and_one_may_be_for_one_api_base(
        signed_in, store: RunStore):
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

    at = goto(bob, "settings")  # a key kept for one API base
    fill(at, endpoint_key_base="https://user@llm.example.org/v1", endpoint_key_value=SECRET)
    at.button(key="save_endpoint_key").click().run()
    assert session(at).provider_keys == {}  # a URL with user info is never an endpoint to key
    assert any("Give an http(s) API base URL" in e.value for e in at.error)
    fill(at, endpoint_key_base="https://LLM.example.org/v1/", endpoint_key_value=SECRET)
    at.button(key="save_endpoint_key").click().run()
    assert session(at).provider_keys == {"https://llm.example.org:443/v1": SECRET}
    assert at.text_input(key="endpoint_key_value").value == ""
    assert not any(SECRET in m.value for m in [*at.markdown, *at.success, *at.caption])


def test_only_the_owner_resumes_a_sweep_and_an_import_is_the_importers(store: RunStore):
    sweep_id = store.create_sweep("s", {}, owner="alice@example.org", owner_name="Alice")
    store.finish_sweep(sweep_id, "cancelled")
    with pytest.raises(ConfigError, match="Only Alice, who started this sweep"):
        sweeps_logic.start_sweep(job_registry.JobRegistry(), store, "b", resume=sweep_id,
                                 user="bob@example.org")

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
    """The job registry is per server, ownership per user (each cell once: test_app_sweeps.py)."""
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


def test_the_owner_rules_for_jobs_runs_sweeps_and_agents(monkeypatch: pytest.MonkeyPatch):
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
    # the agents' rule: the owner and admins; ownerless is read-only when signed in
    monkeypatch.setenv(ADMINS_ENV, " Root@Example.org , ")
    assert is_admin("root@example.org") and not is_admin("bob@example.org")
    assert not is_admin("")
    alice = "alice@example.org"
    assert may_edit_agent(alice, alice, signed_in=True)
    assert not may_edit_agent(alice, "bob@example.org", signed_in=True)
    assert not may_edit_agent(None, alice, signed_in=True)  # ownerless: read-only
    assert may_edit_agent(None, "root@example.org", signed_in=True)  # admins may
    assert may_edit_agent(alice, "root@example.org", signed_in=True)
    assert may_edit_agent(alice, "local", signed_in=False)  # no login: one local user
    assert may_edit_agent(None, "local", signed_in=False)


def test_an_owner_deletes_a_sweep_after_a_confirmation_ownerless_ones_only_an_admin_deletes(
        signed_in, store):
    chat = GroupChat(name="scripted", agents=DEBATE_TRIO.build_agents(latency_s=0.0),
                     **dict(DEBATE_TRIO.settings))
    store.attach(chat)  # a script: no owner named
    chat.run(DEBATE_TRIO.task)
    store.flush()
    run_id = chat.last_run.run_id
    assert store.run_info(run_id)["owner"] is None
    sweep_id = sim_sweep(store, "alice's grid", (0.4, 0.6), 4, owner=USERS["alice"][0],
                         owner_name=USERS["alice"][1])
    assert len(store.list_runs(sweep_id=sweep_id)) == 2
    ownerless = sim_sweep(store, "scripted grid", (0.4, 0.6), 4)  # nobody recorded
    store.finish_sweep(ownerless, "cancelled")  # resumable
    alice, bob, root = signed_in("alice"), signed_in("bob"), signed_in("root")
    for at in (bob, root):  # the ownerless run: bob is refused; root, an admin, deletes it
        table = goto(at, "runs").dataframe[0].value
        select_rows(at, [int(table.index[table["run_id"] == run_id][0])])
        at.button(key="delete_runs").click().run()
    assert "or by nobody recorded" in texts(bob) and "or an admin" in texts(bob)
    assert not any(b.key == "confirm_delete_yes" for b in bob.button)
    assert runs_logic.delete_runs(store, [run_id], "bob@example.org") == 0
    assert run_id in store.run_ids()
    root.button(key="confirm_delete_yes").click().run()
    assert run_id not in store.run_ids()

    goto(bob, "sweeps", sweep=sweep_id)  # not his: the button is off and says whose it is
    assert bob.button(key="sw_delete").disabled
    assert "Only Alice Liddell, who started this sweep" in bob.button(key="sw_delete").help
    with pytest.raises(ConfigError, match="Only Alice Liddell"):
        sweeps_logic.delete_sweep(store, sweep_id, "bob@example.org")
    goto(bob, "sweeps", sweep=ownerless)
    assert bob.button(key="sw_delete").disabled and bob.button(key="sw_resume").disabled
    assert "Nobody is recorded as having started this sweep" in texts(bob)
    with pytest.raises(ConfigError, match="only an admin"):
        sweeps_logic.start_sweep(job_registry.registry(), store, "b", resume=ownerless,
                                 user="bob@example.org")
    goto(root, "sweeps", sweep=ownerless)  # an admin deletes it
    assert not root.button(key="sw_delete").disabled
    root.button(key="sw_delete").click().run()
    root.button(key="confirm_sweep_delete_yes").click().run()
    assert list(store.list_sweeps()["sweep_id"]) == [sweep_id]

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


def test_v7_store_upgrades_with_ownerless_agents(store_url: str) -> None:
    engine = get_engine(store_url)
    create_version(engine, 7)
    with engine.begin() as conn:
        conn.execute(insert(metadata_for(7).tables["agents"]).values(
            name="Old", spec_json=json.dumps(Agent(agent_name="Old").to_spec()),
            created_at="x", updated_at="x", position=1))
    release_store_engines()
    store = RunStore(store_url)
    with engine.connect() as conn:  # upgraded to the current schema, whichever it is
        assert conn.execute(select(schema_version.c.version)).scalar() == SCHEMA_VERSION
    assert [a.agent_name for a in store.list_agents()] == ["Old"]
    assert store.agent_owners() == {"Old": (None, None)}
    store.save_agent(Agent(agent_name="New"), owner=ALICE.user, owner_name=ALICE.user_name)
    assert store.agent_owners()["New"] == (ALICE.user, ALICE.user_name)


def test_replacing_or_renaming_keeps_the_owner(any_store: RunStore) -> None:
    any_store.save_agent(Agent(agent_name="A"), owner=ALICE.user, owner_name=ALICE.user_name)
    any_store.save_agent(Agent(agent_name="A", temperature=0.1), owner=BOB.user)
    assert any_store.agent_owners()["A"] == (ALICE.user, ALICE.user_name)
    any_store.rename_agent("A", Agent(agent_name="B"))
    assert any_store.agent_owners() == {"B": (ALICE.user, ALICE.user_name)}


@pytest.fixture
def alices(any_store: RunStore) -> RunStore:
    logic.save_agent(any_store, Agent(agent_name="Critic", system_prompt="Alice's"), None, [],
                     ALICE)
    return any_store


def test_others_cannot_edit_rename_delete_or_overwrite_by_import(alices: RunStore) -> None:
    edited = Agent(agent_name="Critic", api_base="http://127.0.0.1:9/v1")
    for attempt in (lambda: logic.save_agent(alices, edited, "Critic", ["Critic"], BOB),
                    lambda: logic.save_agent(alices, Agent(agent_name="Mine"), "Critic",
                                             ["Critic"], BOB),
                    lambda: logic.delete_agent(alices, "Critic", BOB)):
        with pytest.raises(ConfigError, match="belongs to Alice Liddell: you can use and "
                                              "duplicate it"):
            attempt()
    hostile = dump_agents([Agent(agent_name="Critic", model_name="openai/x",
                                 api_base="http://127.0.0.1:9/v1"),
                           Agent(agent_name="Fresh")], "json")
    with pytest.raises(ConfigError, match="'Critic' belongs to Alice Liddell"):
        logic.import_agents(alices, hostile, "evil.json", BOB)
    [agent] = alices.list_agents()  # nothing imported, nothing changed
    assert agent.system_prompt == "Alice's" and agent.api_base is None
    assert logic.import_agents(alices, hostile, "mine.json", ALICE) == ["Critic", "Fresh"]
    assert alices.agent_owners()["Fresh"] == (ALICE.user, ALICE.user_name)  # the importer's


def test_anyone_may_duplicate_and_the_copy_is_theirs(alices: RunStore) -> None:
    copy = logic.duplicate_agent(alices, "Critic", ["Critic"], BOB)
    assert copy == "Critic (copy)"
    assert alices.agent_owners()[copy] == (BOB.user, BOB.user_name)
    edited = Agent(agent_name=copy, system_prompt="Bob's now")
    assert logic.save_agent(alices, edited, copy, ["Critic", copy], BOB) == "updated"
    assert logic.editable(alices, BOB) == {"Critic": False, copy: True}


def test_the_owner_admins_and_without_login_anyone_may(alices: RunStore,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    assert logic.save_agent(alices, Agent(agent_name="Critic", temperature=0.3), "Critic",
                            ["Critic"], LOCAL) == "updated"  # without login, all is editable
    assert logic.save_agent(alices, Agent(agent_name="Critic", temperature=0.2), "Critic",
                            ["Critic"], ALICE) == "updated"
    monkeypatch.setenv(ADMINS_ENV, BOB.user)
    assert logic.save_agent(alices, Agent(agent_name="Judge"), "Critic", ["Critic"],
                            BOB) == "renamed"
    assert alices.agent_owners()["Judge"][0] == ALICE.user  # still Alice's
    assert logic.delete_agent(alices, "Judge", BOB)
    alices.save_agent(Agent(agent_name="Cli"))  # the CLI and scripts name no owner
    with pytest.raises(ConfigError, match="'Cli' has no owner"):
        logic.delete_agent(alices, "Cli", ALICE)  # ownerless: read-only when signed in
    logic.save_agent(alices, Agent(agent_name="Hers"), None, [], ALICE)
    assert logic.delete_agent(alices, "Cli", LOCAL)  # without login, all stays editable
    assert logic.delete_agent(alices, "Hers", LOCAL)


def test_a_preset_never_replaces_someone_elses_agent(any_store: RunStore) -> None:
    preset = next(iter(PRESETS.values()))
    first = preset.build_agents()[0]
    mine = first.model_copy(update={"system_prompt": "Alice edited this"})
    logic.save_agent(any_store, mine, None, [], ALICE)
    names = run_logic.load_preset(any_store, preset, actor=BOB)
    assert any_store.get_agent(first.agent_name).system_prompt == "Alice edited this"
    assert f"{first.agent_name} (preset)" in names


def test_the_agents_page_locks_someone_elses_agent(alices: RunStore, signed_in) -> None:
    bob = goto(signed_in("bob"), "agents")
    edit, delete = bob.button(key="agent_edit_Critic"), bob.button(key="agent_delete_Critic")
    assert edit.disabled and delete.disabled
    assert "belongs to Alice Liddell" in (edit.help or "")
    duplicate = bob.button(key="agent_dup_Critic")
    assert not duplicate.disabled
    duplicate.click().run()
    assert not bob.exception
    assert alices.agent_owners()["Critic (copy)"] == (BOB.user, BOB.user_name)
    assert not bob.button(key="agent_edit_Critic (copy)").disabled
    alice = goto(signed_in("alice"), "agents")
    assert not alice.button(key="agent_edit_Critic").disabled
    assert alice.button(key="agent_edit_Critic (copy)").disabled
