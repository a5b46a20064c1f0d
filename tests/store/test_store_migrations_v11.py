"""Schema v11: people in the room (issue 22). bids.kind, turns.rule_winner, turns.human_pick.

A v10 store (a real SQLite file, and the throwaway PostgreSQL: the `store_url` fixture) is
upgraded in place keeping its runs, whose bids become agents' and whose turns had no pick; a run
with a person and a person choosing the speaker records both and reads them back exactly.

Private imports (create_version, forget_checked, get_engine, metadata_for): the migration's
units, which no public module exports.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from sqlalchemy import insert

from groupchat_core import Agent, GroupChat, Human, HumanAction, HumanPrompt, Pick, SetBid
from groupchat_core.store import SCHEMA_VERSION, RunStore, dispose_engines
from groupchat_core.store._connect import get_engine
from groupchat_core.store._migrations import create_version, forget_checked
from groupchat_core.store._schema import metadata_for
from groupchat_core.testing import ScriptedBids
from tests.helpers.stores import table_columns
from tests.store.test_store_migrations import SPEC  # the same old run spec

pytestmark = pytest.mark.usefixtures("fresh_engines")


def _v10_store(url: str) -> None:
    engine = get_engine(url)
    create_version(engine, 10)
    t = metadata_for(10).tables
    with engine.begin() as conn:
        conn.execute(insert(t["runs"]).values(
            run_id="old", name="old", task="t", status="finished", stop_reason="max_loops",
            spec_json=json.dumps(SPEC), agents="A", threshold=0.5, recency_penalty=0.3,
            recency_window=1, max_loops=2, started_at="2025-01-01T00:00:00+00:00",
            ended_at="2025-01-01T00:00:01+00:00", total_calls=1))
        conn.execute(insert(t["bids"]), [{
            "run_id": "old", "turn": 1, "position": 0, "agent": "A", "score": 0.9,
            "adjusted": 0.9, "penalized": False, "eligible": True, "winner": True,
            "message": "hi", "latency_ms": 1.0, "path": "tool_call", "error": None,
            "calls": 1, "cached": False, "outcome": "read"}])
        conn.execute(insert(t["turns"]), [{
            "run_id": "old", "turn": 1, "winner": "A", "winning_adjusted": 0.9,
            "runner_up_adjusted": None, "margin": None, "lull": False, "reason": "highest_bid",
            "penalty_changed_winner": False, "failed_bids": 0}])
    dispose_engines()
    forget_checked()


def test_the_v11_upgrade_keeps_old_runs_as_agents_without_picks(store_url: str) -> None:
    _v10_store(store_url)
    assert "kind" not in table_columns(store_url, "bids")
    store = RunStore(store_url)
    assert SCHEMA_VERSION >= 11
    bids, turns = store.bids("old"), store.turns("old")
    assert {"kind"} <= table_columns(store_url, "bids")
    assert {"rule_winner", "human_pick"} <= table_columns(store_url, "turns")
    assert bids["kind"].tolist() == ["agent"]
    assert turns["rule_winner"].isna().all() and turns["human_pick"].isna().all()
    assert store.load_run("old").bids[0].kind == "agent"


@pytest.fixture
def fake() -> Iterator[ScriptedBids]:
    made = ScriptedBids({"A": [(0.9, "a1"), (0.6, "a2")], "B": [(0.7, "b1"), (0.2, "")]},
                        shared=False)
    yield made
    made.close()


def test_people_and_picks_are_stored_and_read_back(store: RunStore, fake: ScriptedBids) -> None:
    async def ann(prompt: HumanPrompt) -> HumanAction | None:
        return SetBid(0.3, "not now") if prompt.phase == "bid" else None

    async def judge(prompt: HumanPrompt) -> HumanAction | None:
        return Pick("B") if prompt.turn == 1 else Pick(None)  # then: the rule's pick

    chat = GroupChat(agents=[Agent(agent_name="A", model_name=fake.model_name),
                             Human("Ann", callback=ann),
                             Agent(agent_name="B", model_name=fake.model_name)],
                     providers=fake.providers, bid_cache=False, max_loops=3,
                     human_selector=Human("Judge", callback=judge), human_window=600,
                     human_post_window=600)
    store.attach(chat)
    chat.run("Plan it.")
    store.flush()
    run_id = chat.last_run.run_id
    bids, turns = store.bids(run_id), store.turns(run_id)
    assert bids["kind"].tolist() == ["agent", "human", "agent"] * 2
    assert bids[bids["kind"] == "human"]["message"].tolist() == ["not now", "not now"]
    assert turns["winner"].tolist() == ["B", "A"]
    assert turns["rule_winner"].tolist() == ["A", "A"]
    assert turns["human_pick"].tolist() == ["B", "A"]
    assert turns["reason"].tolist() == ["human_pick", "highest_bid"]
    loaded = store.load_run(run_id)
    assert [b.kind for b in loaded.bids] == [b.kind for b in chat.last_run.bids]
    assert [(t.rule_winner, t.human_pick) for t in loaded.turns] == [
        (t.rule_winner, t.human_pick) for t in chat.last_run.turns]
