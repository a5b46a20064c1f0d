"""Saved agents have owners (issue 19, item 1): others may use and duplicate, not change them.

With login on, an agent belongs to whoever saved or imported it; another signed-in user can
run and duplicate it but not edit, rename, delete or overwrite it (by import or preset), or
they could point someone else's agent at their own server. Admins (GROUPCHAT_ADMINS) may.
Ownerless agents (schema < 8, the CLI) are read-only for signed-in users. Without login, all
stays editable. Session keys typed in Settings go only to trusted endpoints or to the exact
API base they were typed for. Store schema v8 adds the owner columns.

Private imports (`store._connect`, `store._migrations`, `store._schema`): units or test hooks with
no public name; everything public comes from the public API.
"""

from __future__ import annotations

import json

import pytest
from sqlalchemy import insert, select

from groupchat_core import Agent, ConfigError, dump_agents
from groupchat_core.store import SCHEMA_VERSION, RunStore
from groupchat_core.store._connect import get_engine
from groupchat_core.store._migrations import create_version
from groupchat_core.store._schema import metadata_for, schema_version
from groupchat_ui.agents import logic
from groupchat_ui.kit import providers
from groupchat_ui.kit.access import ADMINS_ENV, Actor, is_admin, may_edit_agent
from groupchat_ui.run import logic as run_logic
from tests.helpers.app_helpers import fill, goto, session
from tests.helpers.stores import release_store_engines

ALICE = Actor("alice@example.org", "Alice Liddell", signed_in=True)
BOB = Actor("bob@example.org", "Bob", signed_in=True)
LOCAL = logic.LOCAL_ACTOR
SECRET = "sk-session-key-0123456789abcdefSECRET"


pytestmark = pytest.mark.usefixtures("fresh_engines")


# --- the rule ---------------------------------------------------------------------------------


def test_the_rule(monkeypatch: pytest.MonkeyPatch) -> None:
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


# --- the store (schema v8) --------------------------------------------------------------------


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


def test_replacing_or_renaming_keeps_the_owner(store: RunStore) -> None:
    store.save_agent(Agent(agent_name="A"), owner=ALICE.user, owner_name=ALICE.user_name)
    store.save_agent(Agent(agent_name="A", temperature=0.1), owner=BOB.user)
    assert store.agent_owners()["A"] == (ALICE.user, ALICE.user_name)
    store.rename_agent("A", Agent(agent_name="B"))
    assert store.agent_owners() == {"B": (ALICE.user, ALICE.user_name)}


# --- the Agents page's writes -----------------------------------------------------------------


@pytest.fixture
def alices(store: RunStore) -> RunStore:
    logic.save_agent(store, Agent(agent_name="Critic", system_prompt="Alice's"), None, [],
                     ALICE)
    return store


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


def test_a_preset_never_replaces_someone_elses_agent(store: RunStore) -> None:
    from groupchat_ui.kit.presets import PRESETS

    preset = next(iter(PRESETS.values()))
    first = preset.build_agents()[0]
    mine = first.model_copy(update={"system_prompt": "Alice edited this"})
    logic.save_agent(store, mine, None, [], ALICE)
    names = run_logic.load_preset(store, preset, actor=BOB)
    assert store.get_agent(first.agent_name).system_prompt == "Alice edited this"
    assert f"{first.agent_name} (preset)" in names


# --- session keys only where they belong ------------------------------------------------------


def test_a_session_key_goes_only_to_a_trusted_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    hosted = Agent(agent_name="Hosted", model_name="openai/gpt-4o-mini")
    official = Agent(agent_name="Official", model_name="openai/x",
                     api_base="https://api.openai.com/v1/")
    hostile = Agent(agent_name="Hostile", model_name="openai/x",
                    api_base="https://api.openai.com.evil.example/v1")
    local = Agent(agent_name="Local", model_name="openai/x", api_base="http://127.0.0.1:8000/v1")
    keys = {"OPENAI_API_KEY": SECRET}
    copies = providers.with_session_keys([hosted, official, hostile, local], keys)
    assert [c.secret_key() for c in copies] == [SECRET, SECRET, None, None]
    monkeypatch.setenv("GROUPCHAT_TRUSTED_API_BASES", "http://127.0.0.1:8000/v1")
    assert providers.with_session_keys([local], keys)[0].secret_key() == SECRET


def test_a_key_typed_for_one_base_goes_to_that_base_only() -> None:
    mine = Agent(agent_name="Mine", model_name="openai/x", api_base="https://llm.example.org/v1/")
    other = Agent(agent_name="Other", model_name="openai/x",
                  api_base="https://llm.example.org:8443/v1")
    name = providers.endpoint_key_name("https://LLM.example.org/v1")
    assert name == "https://llm.example.org:443/v1"
    copies = providers.with_session_keys([mine, other], {name: SECRET})
    assert [c.secret_key() for c in copies] == [SECRET, None]
    assert providers.endpoint_key_name("https://user@llm.example.org/v1") is None


def test_the_untrusted_hint_names_the_fix() -> None:
    hint = providers.failure_hint("UntrustedEndpoint: agent 'A' points at untrusted api_base "
                                  "http://x/v1: ... (it answered AuthenticationError: 401)",
                                  "openai/x", "http://x/v1")
    assert "Settings" in hint and "GROUPCHAT_TRUSTED_API_BASES" in hint


# --- the Agents page: AppTest, two signed-in users --------------------------------------------


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


def test_settings_keeps_a_key_for_one_api_base(signed_in) -> None:
    at = goto(signed_in("bob"), "settings")
    fill(at, endpoint_key_base="https://user@llm.example.org/v1", endpoint_key_value=SECRET)
    at.button(key="save_endpoint_key").click().run()
    assert session(at).provider_keys == {}  # a URL with user info is never an endpoint to key
    assert any("Give an http(s) API base URL" in e.value for e in at.error)
    fill(at, endpoint_key_base="https://LLM.example.org/v1/", endpoint_key_value=SECRET)
    at.button(key="save_endpoint_key").click().run()
    assert session(at).provider_keys == {"https://llm.example.org:443/v1": SECRET}
    assert at.text_input(key="endpoint_key_value").value == ""
    assert not any(SECRET in m.value for m in [*at.markdown, *at.success, *at.caption])
