"""Schema v12: bids.cached_calls (calls the bid cache answered, so calls_needed counts
bid_then_speak's cached written call) and turns.selector_reason (the selector model's reply).

A v11 store (a real SQLite file, and the throwaway PostgreSQL: the `store_url` fixture) is
upgraded in place keeping its runs: a cached bid counts the one cached call it was counted
as before, other bids none, and no turn has a selector reason.

Private imports (create_version, forget_checked, get_engine, metadata_for): the migration's
units, which no public module exports.
"""

from __future__ import annotations

import json

import pytest
from sqlalchemy import insert

from groupchat_core.store import RunStore, dispose_engines
from groupchat_core.store._connect import get_engine
from groupchat_core.store._migrations import create_version, forget_checked
from groupchat_core.store._schema import metadata_for
from tests.helpers.stores import table_columns
from tests.store.test_store_migrations import SPEC  # the same old run spec

pytestmark = pytest.mark.usefixtures("fresh_engines")


def _v11_store(url: str) -> None:
    engine = get_engine(url)
    create_version(engine, 11)
    t = metadata_for(11).tables
    with engine.begin() as conn:
        conn.execute(insert(t["runs"]).values(
            run_id="old", name="old", task="t", status="finished", stop_reason="max_loops",
            spec_json=json.dumps(SPEC), agents="A,B", threshold=0.5, recency_penalty=0.3,
            recency_window=1, max_loops=2, started_at="2025-01-01T00:00:00+00:00",
            ended_at="2025-01-01T00:00:01+00:00", total_calls=1))
        bid = {"run_id": "old", "turn": 1, "score": 0.9, "adjusted": 0.9, "penalized": False,
               "eligible": True, "message": "hi", "latency_ms": 1.0, "error": None,
               "kind": "agent"}
        conn.execute(insert(t["bids"]), [
            {**bid, "position": 0, "agent": "A", "winner": True, "path": "simulation",
             "calls": 0, "cached": True, "outcome": "cached"},
            {**bid, "position": 1, "agent": "B", "winner": False, "path": "simulation",
             "calls": 1, "cached": False, "outcome": "read"}])
        conn.execute(insert(t["turns"]), [{
            "run_id": "old", "turn": 1, "winner": "A", "winning_adjusted": 0.9,
            "runner_up_adjusted": 0.9, "margin": 0.0, "lull": False, "reason": "tie_by_order",
            "penalty_changed_winner": False, "failed_bids": 0}])
    dispose_engines()
    forget_checked()


def test_the_v12_upgrade_counts_each_cached_bid_once_and_no_selector_reason(
        store_url: str) -> None:
    _v11_store(store_url)
    assert "cached_calls" not in table_columns(store_url, "bids")
    store = RunStore(store_url)
    assert "cached_calls" in table_columns(store_url, "bids")
    assert "selector_reason" in table_columns(store_url, "turns")
    assert store.bids("old")["cached_calls"].tolist() == [1, 0]
    assert store.turns("old")["selector_reason"].isna().all()
    record = store.load_run("old")
    assert [b.cached_calls for b in record.bids] == [1, 0] and record.calls_needed == 2
    stats = store.cache_stats(["old"]).iloc[0]
    assert (stats["cache_hits"], stats["cached_calls"], stats["calls"]) == (1, 1, 1)
