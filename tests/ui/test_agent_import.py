"""Importing agents over saved ones (issue 38, item 12): the import asks as a preset does
(replace / keep mine / cancel), and an open edit form then shows what was imported, so its
next Save does not put the old prompt back."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from groupchat_core import Agent, dump_agents
from groupchat_core.store import RunStore
from groupchat_ui.agents import logic
from tests.helpers.app_helpers import goto, texts

FILE = dump_agents([Agent(agent_name="Optimist", model_name="sim/eager",
                          system_prompt="An imported optimist."),
                    Agent(agent_name="Newcomer", model_name="sim/eager")], "json")


def _import(app: AppTest, text: str = FILE) -> None:
    app.file_uploader(key="agents_upload").set_value(("room.json", text.encode(), "x"))
    app.button(key="import_agents").click().run()
    assert not app.exception


def prompt(store: RunStore, name: str) -> str:
    return store.get_agent(name).system_prompt


def names(store: RunStore) -> list[str]:
    return [a.agent_name for a in store.list_agents()]


def test_an_import_over_saved_agents_asks_and_the_edit_form_follows(app: AppTest):
    store = RunStore()
    goto(app, "agents")
    app.button(key="load_preset").click().run()
    saved = prompt(store, "Optimist")
    app.button(key="agent_edit_Optimist").click().run()
    assert app.text_area(key="agent_form_role").value == saved

    _import(app)
    assert "room.json would replace your saved Optimist" in texts(app.warning)
    assert prompt(store, "Optimist") == saved and "Newcomer" not in names(store)
    app.button(key="confirm_import_no").click().run()  # cancel: nothing imported
    assert not app.warning and "Nothing was imported from room.json" in texts(app.info)
    assert prompt(store, "Optimist") == saved and "Newcomer" not in names(store)

    _import(app)
    app.button(key="confirm_import_copies").click().run()  # keep mine
    assert prompt(store, "Optimist") == saved
    assert prompt(store, "Optimist (imported)") == "An imported optimist."
    assert "Newcomer" in names(store)
    assert app.text_area(key="agent_form_role").value == saved

    _import(app)
    app.button(key="confirm_import_yes").click().run()  # replace
    assert prompt(store, "Optimist") == "An imported optimist."
    assert app.text_area(key="agent_form_role").value == "An imported optimist."
    app.button(key="save_agent").click().run()  # the open form saves what was imported
    assert prompt(store, "Optimist") == "An imported optimist."

    _import(app)  # the same agents again: nothing would change, nothing is asked
    assert not app.warning and "Imported 2 agents" in texts(app.success)


def test_copies_of_imported_agents_get_free_names(store: RunStore):
    store.save_agents([Agent(agent_name="A", model_name="sim/eager"),
                       Agent(agent_name="A (imported)", model_name="sim/eager")])
    file_a = Agent(agent_name="A", model_name="sim/eager", system_prompt="other")
    assert logic.import_conflicts(store, [file_a]) == ["A"]
    assert logic.import_conflicts(store, [store.get_agent("A")]) == []
    assert logic.save_imported(store, [file_a], keep=("A",)) == ["A (imported 2)"]
    assert store.get_agent("A").system_prompt == ""


def test_a_saved_agent_that_breaks_the_key_rule_is_a_warning_and_can_be_imported_over(
        app: AppTest):
    """Issue 44: an agent saved before litellm_kwargs lost its endpoints does not load; the
    page lists the rest, warns in one line naming it, and an import of that name replaces it."""
    store = RunStore()
    hidden = {**Agent(agent_name="Old").__dict__, "litellm_kwargs": {"base_url": "http://x/v1"}}
    store.save_agent(Agent.model_construct(**hidden))  # as an older version stored it
    page = goto(app, "agents")
    warnings = [w.value.replace("\\_", "_") for w in page.warning]  # shown escaped (Markdown)
    assert any(w.startswith("saved agent 'Old' is invalid") and "base_url" in w
               for w in warnings), warnings
    _import(page, dump_agents([Agent(agent_name="Old", model_name="sim/eager")], "json"))
    assert store.get_agent("Old").litellm_kwargs == {}
    page.run()
    assert not any("'Old' is invalid" in w.value for w in page.warning)
