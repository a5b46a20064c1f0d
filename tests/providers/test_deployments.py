"""Several deployments of one model, load-balanced by litellm's Router, over real HTTP to two
(or three) local fake OpenAI servers: calls spread, per-deployment rpm respected, a failing
deployment routed around, each bid records its deployment.

Private imports (`providers._deployments`): units or test hooks with no public name; everything
public comes from the public API.
"""

from __future__ import annotations

import itertools
import time
from collections import Counter

import pytest

from groupchat_core import ConfigError, GroupChat, background_loop
from groupchat_core.providers import _deployments as deployments
from groupchat_core.testing import FakeOpenAIServer, error, tool_call


@pytest.fixture
def servers():
    made = [FakeOpenAIServer().start() for _ in range(3)]
    count = itertools.count()
    for server in made[:2]:  # a new message every time: the chat never stops on a repeat
        server.set_responder(None, lambda body: tool_call(0.6, f"Point {next(count)}."))
    made[2].set_responder(None, lambda body: error(500, "this deployment is down"))
    yield made
    for server in made:
        server.stop()


def chat(routes: dict | None, loops: int = 4) -> GroupChat:
    # The agents' own api_base is any loopback URL: a routed model's endpoint comes from its
    # deployments (the Router's choice), not from the agent.
    agents = [{"agent_name": n, "system_prompt": "Speak briefly.", "model_name": "openai/fake",
               "api_base": "http://127.0.0.1:9/v1", "num_retries": 3}
              for n in ("Ann", "Bob", "Cy")]
    return GroupChat.from_spec({"agents": agents, "max_loops": loops, "threshold": 0.1,
                                "recency_penalty": 0.0}, bid_cache=False, deployments=routes)


def record_of(chat: GroupChat):
    """Run on the engine's loop, where litellm's clients (and the Router's) live."""
    return background_loop().submit(chat.arun_record("Should we?")).result()


def test_calls_spread_over_both_deployments_and_each_bid_records_its_own(servers):
    a, b, _ = servers
    record = record_of(chat({"openai/fake": [{"name": "a", "api_base": a.base_url},
                                             {"name": "b", "api_base": b.base_url}]}, loops=6))
    bids = record.bids
    assert len(bids) == 15 and all(bid.error is None for bid in bids)
    by_deployment = Counter(bid.deployment for bid in bids)
    assert set(by_deployment) == {"a", "b"}  # spread, and every bid says which one answered
    assert (by_deployment["a"], by_deployment["b"]) == (len(a.requests), len(b.requests))


def test_a_per_deployment_rpm_limit_is_respected(servers):
    a, b, _ = servers
    routes = {"openai/fake": [{"name": "small", "api_base": a.base_url, "rpm": 2},
                              {"name": "big", "api_base": b.base_url, "rpm": 50}]}
    minute = time.strftime("%H:%M", time.gmtime())
    record = record_of(chat(routes, loops=4))  # 3 turns of 3 bids (the task counts as a message)
    windows = 1 if time.strftime("%H:%M", time.gmtime()) == minute else 2  # litellm counts
    assert len(record.bids) == 9 and all(bid.error is None for bid in record.bids)  # per minute
    assert 1 <= len(a.requests) <= 2 * windows  # used, but never over its requests per minute
    used = Counter(bid.deployment for bid in record.bids)
    assert (used["small"], used["big"]) == (len(a.requests), len(b.requests))


def test_a_failing_deployment_is_routed_around(servers):
    _, b, down = servers
    record = record_of(chat({"openai/fake": [
        {"name": "down", "api_base": down.base_url}, {"name": "up", "api_base": b.base_url}]},
        loops=4))
    assert all(bid.error is None for bid in record.bids)  # a failed try is retried elsewhere
    assert {bid.deployment for bid in record.bids} == {"up"}
    assert len(down.requests) <= 3  # the first turn's bids at most: then it sits out
    assert len(b.requests) >= len(record.bids)


def test_a_model_without_deployments_is_not_routed(servers):
    a, b, _ = servers
    agents = [{"agent_name": n, "system_prompt": "Speak.", "model_name": "openai/fake",
               "api_base": a.base_url} for n in ("Ann", "Bob")]
    record = record_of(GroupChat.from_spec(
        {"agents": agents, "max_loops": 2, "threshold": 0.1}, bid_cache=False,
        deployments={"openai/other": [{"name": "b", "api_base": b.base_url}]}))
    assert {bid.deployment for bid in record.bids} == {None} and not b.requests


def test_keys_are_named_by_variable_and_checked(monkeypatch):
    with pytest.raises(ConfigError, match="api_key_env must be an environment variable name"):
        deployments.parse_deployments({"m": [{"name": "a", "api_key_env": "sk-live 123"}]})
    with pytest.raises(ConfigError, match="each deployment takes name"):
        deployments.parse_deployments({"m": [{"name": "a", "api_key": "sk-123"}]})
    with pytest.raises(ConfigError, match="names must be unique"):
        deployments.parse_deployments({"m": [{"name": "a"}, {"name": "a"}]})
    parsed = deployments.parse_deployments(
        {"m": [{"name": "east", "api_base": "https://e/v1", "api_key_env": "EAST_KEY"}]})
    with pytest.raises(ConfigError, match="needs its key in EAST_KEY, which is not set"):
        deployments.model_list(parsed, env={})
    monkeypatch.setenv("EAST_KEY", "sk-east")
    with pytest.raises(ConfigError, match="would send the key in EAST_KEY to untrusted api_base"):
        deployments.model_list(parsed)  # a key from the environment goes to trusted bases only
    monkeypatch.setenv("GROUPCHAT_TRUSTED_API_BASES", "https://e/v1/")
    assert deployments.model_list(parsed)[0]["litellm_params"]["api_key"] == "sk-east"
    assert "sk-east" not in repr(parsed) and "sk-east" not in str(deployments.to_data(parsed))
    assert deployments.key_variables({"agents": []}, parsed) == ["EAST_KEY"]


def test_a_sweep_spec_names_deployments_and_its_cells_use_them(servers, tmp_path):
    from groupchat_core.store import RunStore, dispose_engines
    from groupchat_core.sweeps import parse_sweep, run_sweep

    a, b, _ = servers
    agents = [{"agent_name": n, "system_prompt": "Speak.", "model_name": "openai/fake",
               "api_base": "http://127.0.0.1:9/v1"} for n in ("Ann", "Bob")]
    sweep = parse_sweep({
        "name": "routed", "base": {"agents": agents, "max_loops": 3},
        "grid": {"threshold": [0.1, 0.2]}, "tasks": ["Go"], "repeats": 2, "bid_cache": False,
        "deployments": {"openai/fake": [{"name": "a", "api_base": a.base_url},
                                        {"name": "b", "api_base": b.base_url}]}})
    store = RunStore(f"sqlite:///{tmp_path}/routed.db")
    outcome = run_sweep(sweep, store)
    assert outcome.status == "finished" and outcome.calls == 16
    assert a.requests and b.requests and len(a.requests) + len(b.requests) == 16
    bids = store.bids(list(store.list_runs(sweep_id=outcome.sweep_id)["run_id"]))
    used = bids["deployment"].value_counts()  # the store keeps which deployment answered
    assert (used["a"], used["b"]) == (len(a.requests), len(b.requests))
    assert store.get_sweep(outcome.sweep_id)["grid"]["deployments"]["openai/fake"][0] == {
        "name": "a", "api_base": a.base_url}  # names and endpoints only: no key anywhere
    dispose_engines()
    with pytest.raises(ConfigError, match="api_key"):
        parse_sweep({**sweep.to_data(), "deployments": {"openai/fake": [
            {"name": "a", "api_key": "sk-live"}]}})
