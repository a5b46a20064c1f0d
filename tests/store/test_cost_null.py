"""Schema v13: an unknown cost is NULL, not 0, and each run keeps its unpriced bid count
(issue 40 §4), so readers take both from the run row instead of re-deriving "unpriced".

A v12 store (a real SQLite file, and the throwaway PostgreSQL: the `store_url` fixture) is
upgraded in place: a run whose calls had no price reads "unknown", a partly priced run keeps
its partial sum with the count, a simulated run stays $0. New runs and bundle imports write the
same columns.

Private imports (create_version, forget_checked, get_engine, metadata_for): the migration's
units, which no public module exports.
"""

from __future__ import annotations

import json

import pytest
from sqlalchemy import insert, update

from groupchat_core import Agent, GroupChat, bundle_json, format_cost, import_bundle
from groupchat_core.store import SCHEMA_VERSION, RunStore, dispose_engines
from groupchat_core.store._connect import get_engine
from groupchat_core.store._migrations import create_version, forget_checked
from groupchat_core.store._schema import metadata_for
from groupchat_core.testing import ScriptedBids
from tests.helpers.stores import table_columns
from tests.store.test_store_migrations import SPEC  # the same old run spec

pytestmark = pytest.mark.usefixtures("fresh_engines")

BID = {"turn": 1, "score": 0.9, "adjusted": 0.9, "penalized": False, "eligible": True,
       "message": "hi", "latency_ms": 1.0, "error": None, "kind": "agent", "cached": False,
       "outcome": "read", "cached_calls": 0}


def _v12_store(url: str) -> None:
    engine = get_engine(url)
    create_version(engine, 12)
    t = metadata_for(12).tables
    run = {"task": "t", "status": "finished", "stop_reason": "max_loops",
           "spec_json": json.dumps(SPEC), "agents": "A,B", "threshold": 0.5,
           "recency_penalty": 0.3, "recency_window": 1, "max_loops": 2,
           "started_at": "2025-01-01T00:00:00+00:00", "ended_at": "2025-01-01T00:00:01+00:00",
           "total_calls": 2}
    # (run, [(path, calls, cost_usd, cached)] per bid)
    runs = {"local": [("tool_call", 1, None, False), ("tool_call", 1, None, False)],
            "partly": [("tool_call", 1, 0.002, False), ("tool_call", 1, None, False)],
            "sim": [("simulation", 1, None, False), ("simulation", 0, None, True)]}
    with engine.begin() as conn:
        for run_id, bids in runs.items():
            conn.execute(insert(t["runs"]).values(run_id=run_id, name=run_id, **run,
                                                  total_cost_usd=0.002 * (run_id == "partly")))
            conn.execute(insert(t["bids"]), [
                {**BID, "run_id": run_id, "position": i, "agent": "AB"[i], "winner": i == 0,
                 "path": path, "calls": calls, "cost_usd": cost, "cached": cached}
                for i, (path, calls, cost, cached) in enumerate(bids)])
    dispose_engines()
    forget_checked()


def test_the_v13_upgrade_stores_an_unknown_cost_as_null_with_the_unpriced_count(
        store_url: str) -> None:
    _v12_store(store_url)
    assert "unpriced_bids" not in table_columns(store_url, "runs")
    store = RunStore(store_url)
    assert SCHEMA_VERSION == 13 and "unpriced_bids" in table_columns(store_url, "runs")
    listed = store.list_runs().set_index("run_id")
    assert listed.loc["local", "unpriced_bids"] == 2
    assert listed.loc["local", "total_cost_usd"] != listed.loc["local", "total_cost_usd"]  # NaN
    assert (listed.loc["partly", "unpriced_bids"], listed.loc["partly", "total_cost_usd"]) == (
        1, 0.002)
    assert (listed.loc["sim", "unpriced_bids"], listed.loc["sim", "total_cost_usd"]) == (0, 0)
    texts = {r: (lambda rec: format_cost(rec.total_cost_usd, rec.unpriced_bids))(
        store.load_run(r)) for r in ("local", "partly", "sim")}
    assert texts == {"local": "unknown", "partly": "$0.0020 + unknown (1 unpriced bid)",
                     "sim": "$0.0000"}
    # the column takes NULL now (SQLite's NOT NULL was removed from the stored definition)
    with get_engine(store_url).begin() as conn:
        conn.execute(update(metadata_for(13).tables["runs"]).values(total_cost_usd=None))


def test_a_new_run_and_an_import_write_null_for_a_cost_nobody_could_price(store: RunStore):
    fake = ScriptedBids({"A": [(0.9, "first")], "B": [(0.1, "")]}, shared=False)
    agents = [Agent(agent_name=n, model_name=fake.model_name) for n in ("A", "B")]
    chat = GroupChat(agents=agents, max_loops=2, providers=fake.providers)
    store.attach(chat)
    chat.run("price this")
    store.flush()
    record = chat.last_run
    assert record is not None
    row = store.list_runs().iloc[0]
    assert (row["unpriced_bids"], row["total_cost_usd"]) == (record.unpriced_bids,
                                                             record.total_cost_usd or 0.0)
    # an imported bundle whose calls had no price reads as unknown, as the engine said
    bundle = json.loads(bundle_json(store, record.run_id))
    for bid in bundle["bids"]:
        bid.update(path="tool_call", calls=1, cost_usd=None, cached=False)
    bundle["run"]["run_id"] = "imported"
    imported = import_bundle(store, json.dumps(bundle))
    loaded = store.load_run(imported)
    assert loaded.total_cost_usd is None and loaded.unpriced_bids == len(bundle["bids"])
