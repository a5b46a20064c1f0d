"""A shared server keeps every key where it belongs (issue 19, item 1), in a real browser.

Two users signed in through the local OIDC provider (tests/e2e/test_login.py) and a hostile
provider on loopback that records every request's headers and echoes its Authorization header
in each bid. The server holds a canary OPENAI_API_KEY in its environment; alice imports agents
pointing `openai/...` at the hostile server; bob types a second canary in Settings and runs
them. The hostile server gets neither key, the store and every export hold neither; bob cannot
edit or delete alice's agents (the buttons are disabled and say why) but can duplicate one.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from groupchat_core import Agent, bids_csv, bundle_json, dump_agents, transcript_markdown
from groupchat_core.store import RunStore, dispose_engines
from groupchat_core.testing import FakeOpenAIServer

from .conftest import (
    VIEWPORT,
    WAIT_MS,
    expect,
    fill_task,
    fresh,
    open_page,
    pick_roster,
    set_number,
    start_run,
    status_line,
    wait_idle,
)
from .test_login import oidc_provider, serve_with_login, sign_in

__all__ = ["oidc_provider"]  # the provider fixture, shared with test_login.py

SERVER_CANARY = "sk-canary-server-env-0123456789abcdef"
SESSION_CANARY = "sk-canary-bobs-session-fedcba987654"
CANARIES = (SERVER_CANARY, SESSION_CANARY)


@pytest.fixture(scope="module")
def hostile() -> Iterator[FakeOpenAIServer]:
    """A provider that answers every bid with the Authorization header it was sent."""
    with FakeOpenAIServer() as server:
        server.echo_keys()
        yield server


@pytest.fixture(scope="module")
def keyed_server(oidc_provider: str, tmp_path_factory: pytest.TempPathFactory
                 ) -> Iterator[tuple[str, str, Path]]:
    data = tmp_path_factory.mktemp("keys")
    with serve_with_login(oidc_provider, data, {"OPENAI_API_KEY": SERVER_CANARY}) as (app, db):
        yield app, db, data


def _no_canary(text: str, where: str) -> None:
    for canary in CANARIES:
        assert canary not in text, f"{canary!r} reached {where}"


def _import_agents(page: Any, agents: list[Agent]) -> None:
    open_page(page, "Agents")
    wait_idle(page)
    page.locator(".st-key-agents_upload input[type=file]").set_input_files(files=[{
        "name": "room.json", "mimeType": "application/json",
        "buffer": dump_agents(agents, "json").encode()}])
    expect(page.locator(".st-key-agents_upload").get_by_text("room.json")).to_be_visible(
        timeout=WAIT_MS)
    wait_idle(page)
    page.locator(".st-key-import_agents button").click()
    expect(page.get_by_test_id("stAlertContentSuccess").filter(
        has_text="Imported 2 agents")).to_be_visible(timeout=WAIT_MS)


def _type_session_key(page: Any, key: str) -> None:
    open_page(page, "Settings")
    wait_idle(page)
    page.locator(".st-key-key_OPENAI_API_KEY input").fill(key)
    page.locator(".st-key-save_keys button").click()
    expect(page.get_by_text(re.compile(r"^Set for this browser session .*OPENAI_API_KEY"))
           ).to_be_visible(timeout=WAIT_MS)


def test_keys_stay_home_and_others_cannot_change_an_agent(keyed_server, hostile, open_context):
    app, db_url, data = keyed_server
    tag = uuid.uuid4().hex[:6]
    names = [f"Mallory{tag}", f"Eve{tag}"]
    agents = [Agent(agent_name=n, model_name="openai/x", api_base=hostile.base_url,
                    num_retries=0) for n in names]
    task = f"Bob asks the hostile room {tag}"
    contexts = [open_context(viewport=VIEWPORT) for _ in range(2)]
    alice, bob = (ctx.new_page() for ctx in contexts)
    sign_in(alice, app, "alice")
    _import_agents(alice, agents)

    sign_in(bob, app, "bob")
    _type_session_key(bob, SESSION_CANARY)
    open_page(bob, "Agents")
    wait_idle(bob)
    for kind in ("edit", "delete"):
        expect(fresh(bob, f".st-key-agent_{kind}_{names[0]} button").first).to_be_disabled(
            timeout=WAIT_MS)
    duplicate = fresh(bob, f".st-key-agent_dup_{names[0]} button").first
    expect(duplicate).to_be_enabled()
    duplicate.click()
    expect(bob.get_by_text(f"Duplicated {names[0]} as {names[0]} (copy).")).to_be_visible(
        timeout=WAIT_MS)

    open_page(bob, "Run")
    expect(status_line(bob)).to_have_text(re.compile(r"^status: "), timeout=WAIT_MS)
    pick_roster(bob, names)
    fill_task(bob, task)
    set_number(bob, "run_param_max_loops", 3)
    set_number(bob, "run_param_threshold", 0.0)
    start_run(bob)
    expect(status_line(bob)).to_have_text(re.compile(r"^status: finished"),
                                          timeout=WAIT_MS)

    sent = [r.headers.get("authorization", "") for r in hostile.requests]
    assert sent, "the hostile server was never called"
    for header in sent:
        _no_canary(header, "the hostile server")
    store = RunStore(db_url)
    runs = store.list_runs()
    run_id = str(runs[runs["task"] == task]["run_id"].iloc[0])
    assert store.run_info(run_id)["owner"] == "bob@example.org"
    contents = " ".join(m.content for m in store.load_run(run_id).messages)
    assert "You sent me no-key" in contents  # the echo was recorded: it carried no key
    _no_canary(bundle_json(store, run_id), "the json bundle")
    _no_canary(bids_csv(store, run_id), "the bids csv")
    _no_canary(transcript_markdown(store, run_id), "the md transcript")
    owners = store.agent_owners()
    assert owners[names[0]][0] == "alice@example.org"
    assert owners[f"{names[0]} (copy)"][0] == "bob@example.org"
    assert store.get_agent(names[0]).api_base == hostile.base_url  # unchanged by bob
    dispose_engines()
    raw = b"".join(p.read_bytes() for p in data.glob("groupchat.db*"))
    for canary in CANARIES:
        assert canary.encode() not in raw, f"{canary!r} reached the SQLite file"
