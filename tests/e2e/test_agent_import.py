"""An agents import over a saved agent, in a real browser (issue 38, item 12): the import asks
(replace / keep mine / cancel) as a preset does, and the edit form open on that agent then
shows the imported prompt, so its next Save keeps the import instead of reverting it. The
agents are made here, under names of this test's own."""

from __future__ import annotations

import uuid
from typing import Any

from groupchat_core import Agent, dump_agents
from groupchat_core.store import RunStore

from .conftest import WAIT_MS, expect, fresh, open_page, wait_idle


def _upload(page: Any, agents: list[Agent]) -> None:
    wait_idle(page)
    page.locator(".st-key-agents_upload input[type=file]").set_input_files(files=[{
        "name": "room.json", "mimeType": "application/json",
        "buffer": dump_agents(agents, "json").encode()}])
    expect(page.locator(".st-key-agents_upload").get_by_text("room.json")).to_be_visible(
        timeout=WAIT_MS)


def _click(page: Any, key: str) -> None:
    wait_idle(page)
    fresh(page, f".st-key-{key} button").first.click()


def _role(page: Any) -> Any:
    return fresh(page, ".st-key-agent_form_role textarea")


def test_an_import_over_a_saved_agent_asks_and_the_open_form_follows(app_server, app_db_url,
                                                                       page):
    tag = uuid.uuid4().hex[:6]
    name, other = f"Ida{tag}", f"Jo{tag}"
    store = RunStore(app_db_url)
    page.goto(app_server)
    open_page(page, "Agents")
    _upload(page, [Agent(agent_name=name, model_name="sim/eager", system_prompt="Mine.")])
    _click(page, "import_agents")
    expect(page.get_by_text(f"Imported 1 agents: {name}.")).to_be_visible(timeout=WAIT_MS)
    _click(page, f"agent_edit_{name}")
    expect(_role(page)).to_have_value("Mine.", timeout=WAIT_MS)

    _upload(page, [Agent(agent_name=name, model_name="sim/eager", system_prompt="Imported."),
                   Agent(agent_name=other, model_name="sim/eager")])
    question = page.get_by_text(f"room.json would replace your saved {name} ")
    _click(page, "import_agents")
    expect(question).to_be_visible(timeout=WAIT_MS)
    _click(page, "confirm_import_no")
    expect(page.get_by_text("Nothing was imported from room.json.")).to_be_visible(
        timeout=WAIT_MS)
    assert store.get_agent(name).system_prompt == "Mine."
    assert other not in [a.agent_name for a in store.list_agents()]

    _click(page, "import_agents")
    expect(question).to_be_visible(timeout=WAIT_MS)
    _click(page, "confirm_import_copies")
    expect(page.get_by_text(f"Your {name} kept; the file's saved as copies.")).to_be_visible(
        timeout=WAIT_MS)
    assert store.get_agent(name).system_prompt == "Mine."
    assert store.get_agent(f"{name} (imported)").system_prompt == "Imported."
    expect(_role(page)).to_have_value("Mine.")

    _click(page, "import_agents")
    expect(question).to_be_visible(timeout=WAIT_MS)
    _click(page, "confirm_import_yes")
    expect(_role(page)).to_have_value("Imported.", timeout=WAIT_MS)
    assert store.get_agent(name).system_prompt == "Imported."
    _click(page, "save_agent")  # the open form's next Save keeps the import
    expect(page.get_by_text(f"Saved changes to {name}.")).to_be_visible(timeout=WAIT_MS)
    assert store.get_agent(name).system_prompt == "Imported."
