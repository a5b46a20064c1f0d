"""The bid cache: identical requests answered once; errors never cached; store-backed (`store`,
`store_url`: SQLite and PostgreSQL). Private imports: units with no public name."""

from __future__ import annotations

import asyncio
import json

import pytest
from sqlalchemy import inspect, select

from groupchat_core import Agent, BidRequest, ConfigError, GroupChat, ModelReply, background_loop
from groupchat_core._bidding import ParsedBid
from groupchat_core.engine._bidcache import BidCache, cache_stats, request_key, resolve_cache
from groupchat_core.store import SCHEMA_VERSION, RunStore
from groupchat_core.store._connect import get_engine
from groupchat_core.store._migrations import create_version
from groupchat_core.store._schema import metadata_for, schema_version
from groupchat_core.testing import FakeOpenAIServer, ScriptedBids, tool_call
from tests.helpers.stores import release_store_engines

TASK = "Should hospitals adopt AI diagnosis?"


def trio(**kw) -> list[Agent]:
    return [Agent(agent_name=n, system_prompt=p, model_name="sim/balanced", **kw) for n, p in (
        ("Optimist", "You argue for the benefits."), ("Pessimist", "You argue for the risks."),
        ("Realist", "You seek a balanced analysis."))]


def contents(record) -> list[str]:
    return [f"{m.role}: {m.content}" for m in record.messages]


def test_a_repeated_sim_chat_is_answered_from_the_cache_with_the_same_transcript():
    cache = BidCache()
    chat = GroupChat(agents=trio(), max_loops=8, bid_cache=cache)
    chat.run(TASK)
    first = chat.last_run
    chat.run(TASK)
    second = chat.last_run

    assert contents(second) == contents(first)
    assert first.cache_hits == 0 and first.total_calls == len(first.bids) > 0
    assert second.cache_hits == len(second.bids) and second.total_calls == 0
    assert all(b.cached and b.calls == 0 and b.path == "simulation" for b in second.bids)
    assert [(b.score, b.message) for b in second.bids] == [(b.score, b.message)
                                                           for b in first.bids]
    assert cache.stats.misses == len(first.bids) and cache.stats.hits == len(second.bids)
    other_seed = GroupChat(agents=trio(), max_loops=8, seed=7, bid_cache=cache)
    other_seed.run(TASK)  # another seed or task is another request
    other_task = GroupChat(agents=trio(), max_loops=8, bid_cache=cache)
    other_task.run("Plan the offsite.")
    assert other_seed.last_run.cache_hits == 0 and other_task.last_run.cache_hits == 0


def test_the_default_caches_sim_agents_but_never_scripted_fakes():
    script = ScriptedBids({"A": [(0.9, "one"), (0.9, "two")], "B": [(0.1, ""), (0.1, "")]})
    agents = [Agent(agent_name=n, model_name=script.model_name) for n in "AB"]
    chat = GroupChat(agents=agents, max_loops=2)  # bid_cache=None: the automatic policy
    chat.run("t")
    chat.run("t")  # a cached replay would post "one" again and leave the script unused
    assert [m.content for m in chat.last_run.messages] == ["t", "two"]
    assert script.remaining() == {"A": 0, "B": 0} and chat.last_run.cache_hits == 0

    sims = GroupChat(agents=trio(), max_loops=3, seed=424242)
    sims.run(TASK)
    sims.run(TASK)
    assert sims.last_run.cache_hits == len(sims.last_run.bids) > 0


def test_failed_calls_are_never_cached():
    cache = BidCache()
    chat = GroupChat(agents=trio(litellm_kwargs={"sim_failure_rate": 1.0}), max_loops=4,
                     bid_cache=cache)
    chat.run(TASK)
    chat.run(TASK)
    record = chat.last_run
    assert record.stop_reason == "error"
    assert all(b.error and not b.cached and b.calls == 1 for b in record.bids)
    assert cache.stats.stored == 0


def test_replies_that_did_not_parse_are_not_cached_and_good_ones_are():
    cache = BidCache(cache_all=True)
    agent = Agent(agent_name="A", model_name="openai/x", api_base="http://127.0.0.1:9")
    request = BidRequest(agent, [{"role": "user", "content": "hi"}], (("User", "hi"),), 1)
    calls: list[int] = []

    def replying(bid: ParsedBid):
        async def call() -> ModelReply:
            calls.append(1)
            return ModelReply(bid, "tool_call", 10, 5, 0.001)
        return call

    async def twice(bid: ParsedBid) -> list[ModelReply]:
        return [await cache.fetch(request, replying(bid)) for _ in range(2)]

    bad = asyncio.run(twice(ParsedBid(0.0, "", "invalid score 'x': not a number")))
    assert len(calls) == 2 and not any(r.cached for r in bad)
    first, second = asyncio.run(twice(ParsedBid(0.7, "hello")))
    assert len(calls) == 3
    assert (first.cached, first.calls, first.cost_usd) == (False, 1, 0.001)
    assert (second.cached, second.calls, second.cost_usd) == (True, 0, 0.0)
    assert (second.bid.score, second.bid.message, second.path) == (0.7, "hello", "tool_call")
    assert second.prompt_tokens is None and second.completion_tokens is None


def test_keys_cover_what_an_answer_depends_on_and_never_the_api_key():
    base = Agent(agent_name="A", system_prompt="s", model_name="sim/eager")

    def key(agent=base, history=(("User", "t"),), turn=1, seed=0, messages=()):
        return request_key(BidRequest(agent, list(messages), history, turn, seed))

    reference = key()
    assert key() == reference
    changed = [key(seed=1), key(turn=2), key(history=(("User", "u"),)),
               key(agent=base.model_copy(update={"temperature": 0.1})),
               key(agent=base.model_copy(update={"system_prompt": "other"})),
               key(agent=base.model_copy(update={"agent_name": "B"})),
               key(agent=base.model_copy(update={"model_name": "sim/reserved"}))]
    assert len({reference, *changed}) == len(changed) + 1

    llm = Agent(agent_name="A", model_name="openai/m", api_base="http://127.0.0.1:1",
                api_key="sk-one")
    prompt = [{"role": "user", "content": "bid now"}]
    same = key(agent=llm.model_copy(update={"api_key": "sk-two"}), messages=prompt)
    assert key(agent=llm, messages=prompt) == same
    assert key(agent=llm, messages=[{"role": "user", "content": "bid later"}]) != same
    assert key(agent=llm.model_copy(update={"api_base": "http://127.0.0.1:2"}),
               messages=prompt) != same


def test_answers_live_in_the_store_and_a_new_cache_finds_them(store):
    first = GroupChat(agents=trio(), max_loops=6, bid_cache=BidCache(store))
    store.attach(first)
    first.run(TASK)
    first.bid_cache.flush()
    assert store.cache_count() == len(first.last_run.bids)

    fresh = BidCache(store)  # an empty memory, as in another process
    second = GroupChat(agents=trio(), max_loops=6, bid_cache=fresh)
    store.attach(second)
    second.run(TASK)
    assert second.last_run.cache_hits == len(second.last_run.bids)
    assert contents(second.last_run) == contents(first.last_run)

    stats = cache_stats(store).set_index("run_id")
    assert stats.loc[first.last_run.run_id, ["cache_hits", "hit_rate"]].tolist() == [0, 0.0]
    assert stats.loc[second.last_run.run_id, "hit_rate"] == 1.0
    assert stats.loc[second.last_run.run_id, "calls"] == 0
    assert store.bids(second.last_run.run_id)["cached"].all()

    fresh.clear(persistent=True)
    assert store.cache_count() == 0


def test_concurrent_identical_chats_share_each_call():
    cache = BidCache()
    chats = [GroupChat(agents=trio(litellm_kwargs={"sim_latency": 0.02}), max_loops=5,
                       bid_cache=cache) for _ in range(2)]

    async def both():
        return await asyncio.gather(*(c.arun_record(TASK) for c in chats))

    one, two = background_loop().submit(both()).result()
    assert contents(one) == contents(two)
    assert one.total_calls + two.total_calls == len(one.bids)
    assert cache.stats.misses == len(one.bids)


def test_bid_cache_values_are_checked_and_the_memory_front_is_bounded():
    cache = BidCache(max_entries=3)
    GroupChat(agents=trio(), max_loops=4, bid_cache=cache).run(TASK)
    assert len(cache._backing.memory) == 3
    assert resolve_cache(False) is None
    assert resolve_cache(True).cache_all and not resolve_cache(None).cache_all
    with pytest.raises(ConfigError, match="bid_cache must be"):
        GroupChat(agents=trio(), bid_cache="yes")
    chat = GroupChat(agents=trio())
    chat.bid_cache = False
    assert chat.bid_cache is None


@pytest.mark.parametrize(("temperature", "policy", "cached"), [
    (0.7, None, False),  # LLMs that sample are not cached by default
    (0.0, None, True),  # temperature 0: on by default
    (0.7, True, True),  # opt-in
    (0.0, False, False),  # opt-out
])
def test_llm_bids_are_cached_at_temperature_zero_or_when_asked(temperature, policy, cached):
    with FakeOpenAIServer() as server:
        for model in ("a", "b"):
            server.set_responder(model, lambda body: tool_call(0.2, ""))
        agents = [Agent(agent_name=n.upper(), model_name=f"openai/{n}", api_base=server.base_url,
                        api_key="sk-local", temperature=temperature) for n in ("a", "b")]
        chat = GroupChat(agents=agents, max_loops=3,
                         bid_cache=BidCache(cache_all=True) if policy else policy)
        chat.run("t")
        chat.run("t")
        sent = len(server.requests_for("a")) + len(server.requests_for("b"))
    assert sent == (2 if cached else 4)
    assert chat.last_run.cache_hits == (2 if cached else 0)


def test_a_version_2_store_is_upgraded_to_version_3(store_url):
    engine = get_engine(store_url)
    create_version(engine, 2)
    tables = metadata_for(2).tables
    with engine.begin() as conn:
        conn.execute(tables["sweeps"].insert().values(
            sweep_id="old-sweep", name="old", grid_json=json.dumps({"threshold": [0.5]}),
            status="running", created_at="2025-01-01T00:00:00+00:00"))
        conn.execute(tables["runs"].insert().values(
            run_id="r", name="n", task="t", status="finished", spec_json=json.dumps(
                {"name": "n", "agents": [{"agent_name": "A", "model_name": "sim/eager"}]}),
            agents="A", threshold=0.5, recency_penalty=0.3, recency_window=1, max_loops=2,
            started_at="2025-01-01T00:00:00+00:00", sweep_id="old-sweep", cell="c"))
        conn.execute(tables["bids"].insert().values(
            run_id="r", turn=1, position=0, agent="A", score=0.9, adjusted=0.9,
            penalized=False, eligible=True, winner=True, message="hi", latency_ms=1.0,
            path="simulation", calls=1))
    release_store_engines()

    store = RunStore(store_url)
    with store.read("test") as conn:
        assert conn.execute(select(schema_version.c.version)).scalar() == SCHEMA_VERSION
        assert inspect(conn).has_table("bid_cache")
    bids = store.bids("r")
    assert bids["cached"].tolist() == [False] and bids["calls"].tolist() == [1]
    sweep = store.get_sweep("old-sweep")
    assert (sweep["status"], sweep["reason"], sweep["pid"]) == ("running", None, None)
    store.finish_sweep("old-sweep", "stopped_budget", reason="max_calls 5 reached")
    assert store.get_sweep("old-sweep")["reason"] == "max_calls 5 reached"
    assert cache_stats(store)["cache_hits"].tolist() == [0]
