"""Several deployments of one model, load-balanced by litellm's Router over real HTTP (issue 19,
rows 5-6): calls spread, rpm kept, a failing deployment routed around, each bid names its own;
deployments route only the chat or sweep that declared them; per-deployment keys are checked;
unpriced is unknown, not $0 (a dollar budget over it is refused at start). Private imports
(`engine._bidcache`, `providers._deployments`): units or test hooks."""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import Counter
from collections.abc import Iterator

import pytest

from groupchat_core import Agent, ConfigError, GroupChat, background_loop
from groupchat_core.cli import main
from groupchat_core.providers import _deployments as deployments
from groupchat_core.store import dispose_engines
from groupchat_core.sweeps import arun_sweep, parse_sweep, run_sweep
from groupchat_core.testing import FakeOpenAIServer, error, tool_call
from tests.helpers.waits import HANG_GUARD_S

SWEEP_TASK, OTHER_TASK, CHAT_TASK = "Sweep task.", "Other sweep task.", "Chat task."
CHAT_KEY = "sk-chat-own-key"
PARKED = "http://127.0.0.1:9/v1"  # an agent's own (unused) base: a routed model ignores it


@pytest.fixture
def servers() -> Iterator[list[FakeOpenAIServer]]:
    made = [FakeOpenAIServer().start() for _ in range(3)]
    count = itertools.count()
    for server in made:  # a new message every time: no chat stops on a repeat
        server.set_responder(None, lambda body: tool_call(0.6, f"Point {next(count)}."))
    yield made
    for server in made:
        server.stop()


def agents(api_base: str | None = None, model: str = "openai/fake") -> list[dict]:
    return [{"agent_name": n, "system_prompt": "Speak briefly.", "model_name": model,
             **({"api_base": api_base} if api_base else {})} for n in ("Ann", "Bob")]


def sweep(routes: dict, task: str = SWEEP_TASK, base_url: str | None = None, **extra):
    return parse_sweep({"name": "routed", "base": {"agents": agents(base_url), "max_loops": 3,
                                                   "threshold": 0.1},
                        "grid": {"recency_penalty": [0.0]}, "tasks": [task], "repeats": 1,
                        "bid_cache": False, "deployments": routes, **extra})


def to(server: FakeOpenAIServer, **more) -> dict:
    return {"openai/fake": [{"name": "only", "api_base": server.base_url, **more}]}


def ordinary_chat(server: FakeOpenAIServer) -> GroupChat:
    """The same model name as the sweep's, with its own endpoint and key."""
    made = [Agent(**a, api_key=CHAT_KEY) for a in agents(server.base_url)]
    return GroupChat(agents=made, max_loops=3, threshold=0.1, recency_penalty=0.0,
                     bid_cache=False)


def tasks_seen(server: FakeOpenAIServer) -> set[str]:
    """Which of the tasks each request to `server` carried (the task is the first message)."""
    seen = set()
    for request in server.requests:
        text = json.dumps(request.body["messages"])
        seen |= {t for t in (SWEEP_TASK, OTHER_TASK, CHAT_TASK) if t in text}
    return seen


def run_chat(chat: GroupChat):
    return background_loop().submit(chat.arun_record(CHAT_TASK)).result(timeout=60)


# --- load balancing --------------------------------------------------------------------------


def routed_chat(routes: dict | None, loops: int = 4) -> GroupChat:
    """Three agents on openai/fake; their own api_base is parked: the deployments decide."""
    made = [{"agent_name": n, "system_prompt": "Speak briefly.", "model_name": "openai/fake",
             "api_base": PARKED, "num_retries": 3} for n in ("Ann", "Bob", "Cy")]
    return GroupChat.from_spec({"agents": made, "max_loops": loops, "threshold": 0.1,
                                "recency_penalty": 0.0}, bid_cache=False, deployments=routes)


def record_of(chat: GroupChat):
    """Run on the engine's loop, where litellm's clients (and the Router's) live."""
    return background_loop().submit(chat.arun_record("Should we?")).result()


def test_calls_spread_over_both_deployments_and_each_bid_records_its_own(servers):
    a, b, _ = servers
    record = record_of(routed_chat({"openai/fake": [{"name": "a", "api_base": a.base_url},
                                                    {"name": "b", "api_base": b.base_url}]},
                                   loops=6))
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
    record = record_of(routed_chat(routes))  # 3 turns of 3 bids (the task counts as a message)
    windows = 1 if time.strftime("%H:%M", time.gmtime()) == minute else 2  # litellm counts
    assert len(record.bids) == 9 and all(bid.error is None for bid in record.bids)  # per minute
    assert 1 <= len(a.requests) <= 2 * windows  # used, but never over its requests per minute
    used = Counter(bid.deployment for bid in record.bids)
    assert (used["small"], used["big"]) == (len(a.requests), len(b.requests))


def test_a_failing_deployment_is_routed_around(servers):
    _, b, down = servers
    down.set_responder(None, lambda body: error(500, "this deployment is down"))
    record = record_of(routed_chat({"openai/fake": [
        {"name": "down", "api_base": down.base_url}, {"name": "up", "api_base": b.base_url}]}))
    assert all(bid.error is None for bid in record.bids)  # a failed try is retried elsewhere
    assert {bid.deployment for bid in record.bids} == {"up"}
    assert len(down.requests) <= 3  # the first turn's bids at most: then it sits out
    assert len(b.requests) >= len(record.bids)


def test_a_model_without_deployments_is_not_routed(servers):
    a, b, _ = servers
    record = record_of(GroupChat.from_spec(
        {"agents": agents(a.base_url), "max_loops": 2, "threshold": 0.1}, bid_cache=False,
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


def test_a_sweep_spec_names_deployments_and_its_cells_use_them(servers, store):
    a, b, _ = servers
    routed = parse_sweep({
        "name": "routed", "base": {"agents": agents(PARKED), "max_loops": 3},
        "grid": {"threshold": [0.1, 0.2]}, "tasks": ["Go"], "repeats": 2, "bid_cache": False,
        "deployments": {"openai/fake": [{"name": "a", "api_base": a.base_url},
                                        {"name": "b", "api_base": b.base_url}]}})
    outcome = run_sweep(routed, store)
    assert outcome.status == "finished" and outcome.calls == 16
    assert a.requests and b.requests and len(a.requests) + len(b.requests) == 16
    bids = store.bids(list(store.list_runs(sweep_id=outcome.sweep_id)["run_id"]))
    used = bids["deployment"].value_counts()  # the store keeps which deployment answered
    assert (used["a"], used["b"]) == (len(a.requests), len(b.requests))
    assert store.get_sweep(outcome.sweep_id)["grid"]["deployments"]["openai/fake"][0] == {
        "name": "a", "api_base": a.base_url}  # names and endpoints only: no key anywhere
    with pytest.raises(ConfigError, match="api_key"):
        parse_sweep({**routed.to_data(), "deployments": {"openai/fake": [
            {"name": "a", "api_key": "sk-live"}]}})


# --- deployments are scoped --------------------------------------------------------------------


def test_after_a_sweep_an_ordinary_chat_on_the_same_model_uses_its_own_endpoint(servers, store):
    a, b, _ = servers
    outcome = run_sweep(sweep(to(a), base_url=PARKED), store)
    assert outcome.status == "finished"
    sweep_calls = len(a.requests)
    assert sweep_calls > 0 and tasks_seen(a) == {SWEEP_TASK}
    routed = store.load_run(store.list_runs(sweep_id=outcome.sweep_id)["run_id"].iloc[0])
    # a routed call to an unpriced model costs unknown, not zero
    assert routed.bids and all(b.deployment == "only" and b.cost_usd is None
                               for b in routed.bids)
    assert routed.total_cost_usd is None and routed.unpriced_bids == len(routed.bids)
    record = run_chat(ordinary_chat(b))
    assert all(bid.error is None and bid.deployment is None for bid in record.bids)
    assert record.total_cost_usd is None  # unpriced: the sweep's Router left no $0 price
    assert len(a.requests) == sweep_calls  # the sweep's endpoint received none of the chat's
    assert len(b.requests) == record.total_calls > 0 and tasks_seen(b) == {CHAT_TASK}
    assert {r.headers.get("authorization") for r in b.requests} == {f"Bearer {CHAT_KEY}"}


def test_while_a_sweep_runs_other_chats_and_sweeps_see_only_their_own(servers, store):
    a, b, c = servers
    entered, gate = threading.Event(), threading.Event()
    count = itertools.count()

    def held(body):  # the first sweep's calls wait until the others are done
        entered.set()
        gate.wait(30)
        return tool_call(0.6, f"Held point {next(count)}.")

    a.set_responder(None, held)
    first = background_loop().submit(arun_sweep(sweep(to(a), base_url=c.base_url), store))
    try:
        assert entered.wait(30)  # its deployments are in force, a call in flight
        other = background_loop().submit(arun_sweep(
            sweep(to(b), task=OTHER_TASK, name="other", base_url=c.base_url), store))
        assert other.result(timeout=60).status == "finished"
        record = run_chat(ordinary_chat(c))
    finally:
        gate.set()
    assert first.result(timeout=60).status == "finished"
    assert tasks_seen(a) == {SWEEP_TASK} and tasks_seen(b) == {OTHER_TASK}
    assert tasks_seen(c) == {CHAT_TASK} and len(c.requests) == record.total_calls > 0
    assert all(bid.deployment is None for bid in record.bids)


# --- the key check -------------------------------------------------------------------------


def test_deployments_with_their_own_key_variable_start_without_openai_api_key(
        servers, store, monkeypatch):
    a, _, _ = servers
    monkeypatch.setenv("EAST_KEY", "sk-east-deployment")  # and no OPENAI_API_KEY (conftest)
    monkeypatch.setenv("GROUPCHAT_TRUSTED_API_BASES", a.base_url)  # a key goes only there
    outcome = run_sweep(sweep(to(a, api_key_env="EAST_KEY")), store)  # agents: no api_base
    assert outcome.status == "finished" and a.requests
    assert {r.headers.get("authorization") for r in a.requests} == {"Bearer sk-east-deployment"}


def test_a_server_key_never_goes_to_an_untrusted_deployment_base(servers, store, monkeypatch):
    """`api_key_env: OPENAI_API_KEY` at a sweep author's server: the key is not sent there."""
    a, _, _ = servers
    monkeypatch.setenv("OPENAI_API_KEY", "sk-canary-server-key-0123456789")
    routes = to(a, api_key_env="OPENAI_API_KEY")
    with pytest.raises(ConfigError) as caught:
        run_sweep(sweep(routes), store)
    text = str(caught.value)
    assert "\n" not in text and "would send the key in OPENAI_API_KEY to untrusted api_base" \
        in text and "GROUPCHAT_TRUSTED_API_BASES" in text and "sk-canary" not in text
    chat = GroupChat.from_spec({"agents": agents(), "max_loops": 2}, deployments=routes)
    with pytest.raises(ConfigError, match="untrusted api_base"):
        chat.run("Go")
    assert not a.requests and store.list_sweeps().empty


def test_an_open_server_on_loopback_needs_no_key(servers, store):
    a, _, _ = servers
    record = background_loop().submit(GroupChat.from_spec(
        {"agents": agents(), "max_loops": 3, "threshold": 0.1}, bid_cache=False,
        deployments=to(a)).arun_record("Go")).result(timeout=60)
    assert record.bids and all(b.error is None and b.deployment == "only" for b in record.bids)
    assert run_sweep(sweep(to(a)), store).status == "finished"


def test_a_remote_base_without_a_key_is_refused_with_one_line(store):
    remote = {"openai/fake": [{"name": "far", "api_base": "https://llm.example.org/v1"}]}
    with pytest.raises(ConfigError) as caught:
        run_sweep(sweep(remote), store)
    text = str(caught.value)
    assert "\n" not in text and "deployment 'far' of openai/fake calls " \
        "https://llm.example.org/v1 with no api_key_env" in text and "OPENAI_API_KEY" not in text
    assert store.list_sweeps().empty  # refused before anything was created
    chat = GroupChat.from_spec({"agents": agents(), "max_loops": 2}, deployments=remote)
    with pytest.raises(ConfigError, match="with no api_key_env; name the environment variable"):
        chat.run("Go")
    with pytest.raises(ConfigError, match="needs its key in WEST_KEY, which is not set"):
        run_sweep(sweep({"openai/fake": [{"name": "w", "api_base": "https://w.example/v1",
                                          "api_key_env": "WEST_KEY"}]}), store)


# --- cost -----------------------------------------------------------------------------------


def test_a_dollar_budget_over_unknowable_costs_is_refused_at_start(servers, store):
    a, _, _ = servers
    with pytest.raises(ConfigError) as caught:
        run_sweep(sweep(to(a), base_url=PARKED), store, max_usd=1.0)
    text = str(caught.value)
    assert "\n" not in text and text.startswith("max_usd 1 cannot bound this sweep: litellm "
                                                "knows no price for openai/fake")
    assert "max_calls" in text and store.list_sweeps().empty and not a.requests
    unrouted = {**sweep(to(a), base_url=PARKED).to_data(), "deployments": None, "max_usd": 2,
                "base": {"agents": agents(a.base_url, "openai/local-llm")}}
    with pytest.raises(ConfigError, match="no price for openai/local-llm"):  # unrouted too
        run_sweep(parse_sweep(unrouted), store)
    priced = {"openai/gpt-4o-mini": [{"name": "only", "api_base": a.base_url}]}
    ok = parse_sweep({**sweep(priced, base_url=PARKED).to_data(), "max_usd": 5,
                      "base": {"agents": agents(model="openai/gpt-4o-mini"), "max_loops": 2}})
    outcome = run_sweep(ok, store)
    assert outcome.status == "finished"  # a price known: the budget stands, the price kept
    routed = store.load_run(store.list_runs(sweep_id=outcome.sweep_id)["run_id"].iloc[0])
    assert routed.bids and all((b.cost_usd or 0) > 0 for b in routed.bids)


def test_the_cli_refuses_the_dollar_budget_in_one_line(servers, tmp_path, capsys):
    a, _, _ = servers
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(sweep(to(a), base_url=PARKED).to_data()))
    db = f"sqlite:///{tmp_path}/cli.db"
    assert main(["--db", db, "sweep", str(path), "--max-usd", "0.5", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "max_usd 0.5 cannot bound this sweep" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and not a.requests
    path.write_text(json.dumps({**sweep(to(a), base_url=PARKED).to_data(), "max_usd": 3}))
    assert main(["--db", db, "sweep", str(path), "--quiet"]) == 2
    assert "max_usd 3 cannot bound this sweep" in capsys.readouterr().err
    dispose_engines()


def test_the_bid_cache_keys_a_routed_request_by_its_deployments(servers):
    from groupchat_core import BidRequest
    from groupchat_core.engine._bidcache import request_key
    from groupchat_core.providers._deployments import routed_by, routes_for

    a, b, _ = servers
    request = BidRequest(agent=Agent(**agents(PARKED)[0]), messages=[{"role": "user",
                                                                      "content": "Go"}],
                         history=[], turn=1)
    direct = request_key(request)
    keys = set()
    for server in (a, b):
        with routed_by(routes_for(to(server))):
            keys.add(request_key(request))
    assert direct not in keys and len(keys) == 2  # never another endpoint's answer


def test_the_sweeps_page_job_ends_with_the_same_one_line(store):
    from groupchat_ui.kit.jobs import JobRegistry
    from groupchat_ui.sweeps import logic

    made = [Agent(**a) for a in agents(PARKED, "openai/local-llm")]
    spec = logic.build_spec(made, ["t"], {"threshold": "0.5", "recency_penalty": "0.3",
                                          "recency_window": "1"},
                            {"max_loops": 3, "repeats": 1, "concurrency": 1, "max_usd": 1.0})
    registry = JobRegistry()
    try:
        job = logic.start_sweep(registry, store, "me", spec)
        assert registry.wait(job, HANG_GUARD_S)
        snap = registry.task_snapshot(job)
    finally:
        registry.shutdown()
    assert snap.status == "error" and "\n" not in (snap.error or "")
    assert "max_usd 1 cannot bound this sweep" in (snap.error or "")
    assert store.list_sweeps().empty
