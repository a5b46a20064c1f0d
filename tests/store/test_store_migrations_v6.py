"""Schema v6: who owns a run or a sweep, and which code recorded it.

A v5 store (a real SQLite file, and the throwaway PostgreSQL: the `store_url` fixture) is
upgraded in place keeping every run and sweep, with NULL owners; new runs and sweeps record the
owner the caller names and the app and litellm versions; a sweep's runs inherit its owner; a
bundle cannot say who owns the run it carries.

Private imports (`store._connect`, `store._migrations`, `store._schema`): units or test hooks with
no public name; everything public comes from the public API.
"""

from __future__ import annotations

import json

import pytest
from sqlalchemy import insert

from groupchat_core import (
    GroupChat,
    StoreError,
    app_version,
    bundle_json,
    import_bundle,
    litellm_version,
)
from groupchat_core.store import SCHEMA_VERSION, RunStore
from groupchat_core.store._connect import get_engine
from groupchat_core.store._migrations import create_version
from groupchat_core.store._schema import metadata_for
from groupchat_core.sweeps import SweepSpec, run_sweep
from groupchat_ui.kit.presets import DEBATE_TRIO
from tests.helpers.stores import release_store_engines, table_columns
from tests.store.test_store_migrations import SPEC  # the same old run spec

NEW = ("owner", "owner_name", "app_version", "litellm_version")


pytestmark = pytest.mark.usefixtures("fresh_engines")


def _v5_store(url: str) -> None:
    """A store as schema v5 wrote it: one sweep, one finished run in it, one saved agent."""
    engine = get_engine(url)
    create_version(engine, 5)
    t = metadata_for(5).tables
    with engine.begin() as conn:
        conn.execute(insert(t["sweeps"]).values(
            sweep_id="old-sweep", name="old", grid_json="{}", status="finished",
            created_at="2025-01-01T00:00:00+00:00", pid=1, hostname="h"))
        conn.execute(insert(t["runs"]).values(
            run_id="old-run", name="old", task="Plan it.", status="finished",
            stop_reason="max_loops", spec_json=json.dumps(SPEC), agents="A, B", threshold=0.5,
            recency_penalty=0.3, recency_window=1, max_loops=2, sweep_id="old-sweep",
            cell="c1", started_at="2025-01-01T00:00:00+00:00",
            ended_at="2025-01-01T00:00:01+00:00", total_calls=2, tags="kept", notes="n"))
        conn.execute(insert(t["messages"]), [
            {"run_id": "old-run", "position": 0, "turn": 0, "role": "User",
             "content": "Plan it.", "timestamp": "2025-01-01T00:00:00+00:00", "score": None}])
        conn.execute(insert(t["agents"]).values(
            name="A", spec_json=json.dumps(SPEC["agents"][0]), created_at="x", updated_at="x",
            position=0))
    release_store_engines()


def _chat() -> GroupChat:
    settings = dict(DEBATE_TRIO.settings)
    return GroupChat(name="own", agents=DEBATE_TRIO.build_agents(latency_s=0.0), **settings)


def test_a_v5_store_is_upgraded_to_v6_keeping_runs_sweeps_and_agents(store_url):
    _v5_store(store_url)
    assert not set(NEW) & table_columns(store_url, "runs")

    store = RunStore(store_url)

    assert SCHEMA_VERSION >= 6  # later versions keep these columns
    assert set(NEW) <= table_columns(store_url, "runs")
    assert set(NEW) <= table_columns(store_url, "sweeps")
    info = store.run_info("old-run")
    assert (info["task"], info["tags"], info["notes"], info["sweep_id"]) == (
        "Plan it.", "kept", "n", "old-sweep")
    assert all(info[c] is None for c in NEW)  # nobody knows who started an old run
    sweep = store.get_sweep("old-sweep")
    assert sweep["status"] == "finished" and all(sweep[c] is None for c in NEW)
    assert [a.agent_name for a in store.list_agents()] == ["A"]
    listed = store.list_runs()
    assert listed[["run_id", "owner", "owner_name"]].values.tolist() == [["old-run", None, None]]
    store.set_owner("old-run", "alice@example.org", "Alice")  # the new columns work
    assert store.run_info("old-run")["owner"] == "alice@example.org"


def test_a_run_records_its_owner_and_the_code_that_recorded_it(store):
    chat = _chat()
    store.attach(chat, owner="alice@example.org", owner_name="Alice Liddell")
    chat.run(DEBATE_TRIO.task)
    mine = store.run_info(chat.last_run.run_id)
    assert (mine["owner"], mine["owner_name"]) == ("alice@example.org", "Alice Liddell")
    assert (mine["app_version"], mine["litellm_version"]) == (app_version(), litellm_version())

    anonymous = _chat()
    store.attach(anonymous)  # a script that names no owner
    anonymous.run(DEBATE_TRIO.task)
    info = store.run_info(anonymous.last_run.run_id)
    assert info["owner"] is None and info["app_version"] == app_version()


def test_a_sweep_and_its_runs_belong_to_whoever_started_it(store):
    spec = SweepSpec.model_validate({
        "name": "owned", "tasks": ["Plan it."], "concurrency": 1,
        "base": {"max_loops": 2, "agents": [a.to_spec() for a in DEBATE_TRIO.build_agents(0.0)]},
        "grid": {"threshold": [0.3, 0.6]}})
    outcome = run_sweep(spec, store, owner="bob@example.org", owner_name="Bob")
    sweep = store.get_sweep(outcome.sweep_id)
    assert (sweep["owner"], sweep["owner_name"]) == ("bob@example.org", "Bob")
    assert sweep["app_version"] == app_version()
    runs = store.list_runs(sweep_id=outcome.sweep_id)
    assert len(runs) == 2 and set(runs["owner"]) == {"bob@example.org"}
    assert set(runs["owner_name"]) == {"Bob"}


def test_a_bundle_says_who_owned_the_run_but_cannot_make_it_anyones(store, new_database):
    """Issue 19 (ownership everywhere): exports carry the owner, as information; an import
    never takes it (the importer owns what it imports), so a file cannot forge ownership."""
    chat = _chat()
    store.attach(chat, owner="alice@example.org", owner_name="Alice")
    chat.run(DEBATE_TRIO.task)
    bundle = json.loads(bundle_json(store, chat.last_run.run_id))
    assert (bundle["run"]["owner"], bundle["run"]["owner_name"]) == (
        "alice@example.org", "Alice")
    other = RunStore(new_database())
    run = dict(bundle["run"], owner="mallory", owner_name="Mallory")
    import_bundle(other, {**bundle, "run": run})
    assert other.run_info(bundle["run"]["run_id"])["owner"] is None  # not Mallory, not Alice
    other.delete_run(bundle["run"]["run_id"])
    # the store itself ignores owner fields it is handed with an imported run
    other.import_run({**bundle["run"], "owner": "mallory"}, bundle["spec"],
                     message_rows=bundle["messages"], bid_rows=bundle["bids"],
                     turn_rows=bundle["turns"])
    assert other.run_info(bundle["run"]["run_id"])["owner"] is None


@pytest.mark.parametrize("bad", ["", "   ", "x" * 321, "evil\nname", "\x1b[31m"])
def test_an_owner_that_is_not_a_short_printable_text_is_refused(store, bad):
    with pytest.raises(StoreError, match="owner must be 1-320 printable characters"):
        store.recorder(_chat(), owner=bad)
    with pytest.raises(StoreError, match="owner must be"):
        store.create_sweep("s", {}, owner=bad)
