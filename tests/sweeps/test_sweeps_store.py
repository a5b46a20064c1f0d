"""Sweeps and the bid cache on SQLite and on a real PostgreSQL (`store`, tests/conftest.py): the
dialect-specific parts (ON CONFLICT DO NOTHING for cache inserts, booleans summed as hit counts,
the v3 migration's defaults) run on both; missing PostgreSQL binaries fail, never skip.
Private imports (`engine._bidcache`): no public name."""

from __future__ import annotations

from groupchat_core import Agent, GroupChat
from groupchat_core.engine._bidcache import BidCache, cache_stats
from groupchat_core.sweeps import parse_sweep, run_sweep, sweep_results
from groupchat_core.sweeps._plan import finished_cells

AGENTS = [{"agent_name": n, "model_name": "sim/balanced", "system_prompt": p} for n, p in (
    ("Optimist", "You argue for the benefits."), ("Pessimist", "You argue for the risks."))]


def test_a_sweep_with_its_bid_cache_runs_and_resumes(store):
    spec = parse_sweep({"base": {"max_loops": 10, "agents": AGENTS},
                        "grid": {"threshold": [0.3, 0.5, 0.7]}, "tasks": ["Plan it."],
                        "repeats": 2, "max_calls": 25})
    stopped = run_sweep(spec, store)
    assert stopped.status == "stopped_budget"
    done = finished_cells(store, stopped.sweep_id)
    outcome = run_sweep(spec, store, resume=stopped.sweep_id, max_calls=10_000)
    assert outcome.status == "finished" and outcome.cells_done == 6
    assert {k: finished_cells(store, stopped.sweep_id)[k] for k in done} == done

    results = sweep_results(store, stopped.sweep_id)
    assert set(results["status"]) == {"finished"} and results["cache_hits"].sum() > 0
    every_run = cache_stats(store, sweep_id=stopped.sweep_id)  # the cancelled runs too
    chosen = every_run[every_run["run_id"].isin(results["run_id"])]
    assert chosen["cache_hits"].sum() == results["cache_hits"].sum()
    assert len(every_run) > len(chosen)
    assert store.cache_count() > 0


def test_a_new_cache_reads_answers_back_and_duplicates_are_ignored(store):
    first = GroupChat(agents=[Agent(**a) for a in AGENTS], max_loops=5,
                      bid_cache=BidCache(store))
    first.run("Plan it.")
    first.bid_cache.flush()
    stored = store.cache_count()
    other = BidCache(store)
    second = GroupChat(agents=[Agent(**a) for a in AGENTS], max_loops=5, bid_cache=other)
    second.run("Plan it.")
    assert second.last_run.cache_hits == len(second.last_run.bids) == stored
    batch = {k: ("sim/balanced", v) for k, v in list(other._backing.memory.items())[:2]}
    store.cache_put(batch)  # already there: ignored, not an error
    assert store.cache_count() == stored
