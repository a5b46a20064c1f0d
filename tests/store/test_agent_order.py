"""The saved order of agents (schema v4, agents.position): it survives reopening the store (a
reload of the dashboard), a rename keeps an agent's place, and a store written by schema v3
is upgraded in place with its agents kept (issue 11 §1: "the agent order resets on reload").

Each test runs on SQLite and on PostgreSQL (the `store_url` fixture, tests/conftest.py).

Private imports (`store._connect`, `store._migrations`, `store._schema`): units or test hooks with
no public name; everything public comes from the public API.
"""

from __future__ import annotations

import json

import pytest
from sqlalchemy import insert, inspect, select

from groupchat_core import Agent, StoreError
from groupchat_core.store import SCHEMA_VERSION, RunStore, dispose_engines
from groupchat_core.store._connect import get_engine
from groupchat_core.store._migrations import create_version
from groupchat_core.store._schema import metadata_for, schema_version
from tests.helpers.stores import release_store_engines

pytestmark = pytest.mark.usefixtures("fresh_engines")


def _agent(name: str, role: str = "") -> Agent:
    return Agent(agent_name=name, system_prompt=role, model_name="sim/eager")


def _reopen(url: str) -> RunStore:
    release_store_engines()
    return RunStore(url)


def _names(store: RunStore) -> list[str]:
    return [a.agent_name for a in store.list_agents()]


def test_new_agents_go_last_and_the_order_survives_reopening(store_url):
    store = RunStore(store_url)
    for name in ("Zed", "Amy", "Mo"):
        store.save_agent(_agent(name))
    assert _names(store) == ["Zed", "Amy", "Mo"]  # the order they were made, not by name
    store.set_agent_order(["Mo", "Zed"])  # the rest keep their order, after these
    store.save_agent(_agent("Zed", "edited"))  # replacing keeps the place
    assert _names(_reopen(store_url)) == ["Mo", "Zed", "Amy"]


def test_a_rename_keeps_the_place_and_refuses_a_taken_name(store_url):
    store = RunStore(store_url)
    store.save_agents([_agent("A"), _agent("B"), _agent("C")])
    store.rename_agent("B", _agent("Bee", "new role"))
    assert _names(store) == ["A", "Bee", "C"]
    assert store.get_agent("Bee").system_prompt == "new role"
    with pytest.raises(StoreError, match="'C' already exists"):
        store.rename_agent("A", _agent("C"))
    with pytest.raises(StoreError, match="no saved agent named 'gone'"):
        store.rename_agent("gone", _agent("D"))
    assert _names(_reopen(store_url)) == ["A", "Bee", "C"]


def test_a_version_3_store_gets_positions_and_keeps_its_agents(store_url):
    engine = get_engine(store_url)
    create_version(engine, 3)
    v3 = metadata_for(3).tables["agents"]
    with engine.begin() as conn:
        for name in ("Beta", "Alpha"):
            spec = _agent(name, f"{name} role").to_spec()
            conn.execute(insert(v3).values(name=name, spec_json=json.dumps(spec),
                                           created_at="2026-01-01T00:00:00+00:00",
                                           updated_at="2026-01-01T00:00:00+00:00"))
    with engine.connect() as conn:
        assert "position" not in {c["name"] for c in inspect(conn).get_columns("agents")}
    dispose_engines()

    store = RunStore(store_url)

    with store.read("test") as conn:
        assert conn.execute(select(schema_version.c.version)).scalar() == SCHEMA_VERSION == 13
    assert _names(store) == ["Alpha", "Beta"]  # no position yet: by name, as before
    assert store.get_agent("Beta").system_prompt == "Beta role"
    store.save_agent(_agent("Gamma"))
    store.set_agent_order(["Gamma", "Beta"])
    assert _names(_reopen(store_url)) == ["Gamma", "Beta", "Alpha"]
