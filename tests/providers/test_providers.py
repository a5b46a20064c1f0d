"""The one provider interface: providers are objects a chat is given, and everything a bid needs
(its deadline, its stream sink) reaches the provider as part of the request, not through a
process-wide registry or a context variable (docs/engine.md, "Providers").

The exported `runs_in_process` agrees with the engine's provider choice (issue 40 §4).

Private imports (LITELLM, ModelCallFailed, in_process_provider, provider_for): units tested as
such, which no public module exports."""

from __future__ import annotations

import ast
import asyncio
import dataclasses
import threading
from typing import Any

import pytest

from groupchat_core import (
    SIM_NOTE,
    Agent,
    BidDelta,
    BidRequest,
    ConfigError,
    GroupChat,
    ModelReply,
    Provider,
    background_loop,
    reply_from_arguments,
    runs_in_process,
)
from groupchat_core.providers._model_calls import LITELLM, provider_for
from groupchat_core.providers._replies import ModelCallFailed
from groupchat_core.providers._routing import in_process_provider
from groupchat_core.testing import FakeOpenAIServer, ScriptedBids, error, tool_call
from tests.helpers import ROOT

PROVIDERS = ROOT / "groupchat_core" / "providers"
KEY = "sk-local-dummy-key-for-providers"
PARTIAL = "a partial bid " * 40  # long: the gate holds back a tail that may start a secret


class Recording:
    """A provider: A speaks one fixed line; records each request with its loop time."""

    needs_prompt = True

    def partial(self, request: BidRequest) -> str:
        return PARTIAL

    def __init__(self, line: str, score: float = 0.9) -> None:
        self.line, self.score = line, score
        self.requests: list[tuple[BidRequest, float]] = []
        self.lock = threading.Lock()

    async def bid(self, request: BidRequest) -> ModelReply:
        with self.lock:
            self.requests.append((request, asyncio.get_running_loop().time()))
        if request.sink is not None:  # a partial bid, as a streaming model would send it
            request.sink(self.score, self.partial(request))
        speaks = request.agent.agent_name == "A"
        return reply_from_arguments(
            {"score": self.score if speaks else 0.0, "message": self.line if speaks else ""},
            "scripted")


class Watch(list):
    """An observer of bid deltas: the list of those it saw."""

    wants = frozenset({"bid_delta"})
    thread_safe = True

    def __call__(self, event: BidDelta) -> None:
        self.append(event)


def fake_agents() -> list[Agent]:
    return [Agent(agent_name="A", model_name="fake/model"),
            Agent(agent_name="B", model_name="fake/model")]


def test_a_provider_passed_in_answers_bids_without_any_registry():
    provider = Recording("from the object")
    assert isinstance(provider, Provider)
    chat = GroupChat(agents=fake_agents(), max_loops=2, providers={"fake": provider})
    chat.run("t")
    assert [m.content for m in chat.last_run.messages] == ["t", "from the object"]
    assert {r.agent.agent_name for r, _ in provider.requests} == {"A", "B"}
    assert all(r.messages for r, _ in provider.requests)  # needs_prompt: the prompt was built
    assert in_process_provider("fake/model") is None  # nothing joined a process-wide table


def test_two_chats_in_one_process_use_their_own_fakes_for_the_same_prefix():
    """On the old process-wide registry the fake registered last answered both chats."""
    first, second = Recording("first fake"), Recording("second fake")
    chats = [GroupChat(agents=fake_agents(), max_loops=2, providers={"fake": p})
             for p in (first, second)]

    async def both() -> list[Any]:
        return list(await asyncio.gather(*(c.arun_record("t") for c in chats)))

    records = background_loop().submit(both()).result()
    assert [r.messages[-1].content for r in records] == ["first fake", "second fake"]
    assert len(first.requests) == len(second.requests) == 2


def test_a_scripted_fake_can_be_passed_in_without_being_shared():
    fake = ScriptedBids({"A": [(0.9, "scripted")], "B": [(0.1, "")]}, shared=False)
    assert in_process_provider(fake.model_name) is None
    agents = [Agent(agent_name=n, model_name=fake.model_name) for n in ("A", "B")]
    chat = GroupChat(agents=agents, max_loops=2, providers=fake.providers)
    chat.run("t")
    assert chat.last_run.messages[-1].content == "scripted"
    fake.assert_complete()


def test_the_deadline_and_the_sink_reach_the_provider_as_arguments():
    provider = Recording("streamed line")
    deltas = Watch()
    chat = GroupChat(agents=fake_agents(), max_loops=2, providers={"fake": provider},
                     bid_timeout=5.0, stream_bids=True, on_event=[deltas])
    chat.run("t")
    for request, received_at in provider.requests:
        assert request.deadline is not None
        assert 0 < request.deadline - received_at <= 5.0  # bid_timeout, on the loop's clock
        assert request.sink is not None
    assert {d.agent for d in deltas} == {"A", "B"}
    assert all(d.message and PARTIAL.startswith(d.message) for d in deltas)


def test_a_providers_deltas_are_masked_like_a_streamed_litellm_bid():
    """The sink a provider is given masks every held secret (here the agent's own key)."""
    secret = "sk-provider-echo-0123456789abcdefXYZ"

    class Echo(Recording):
        def partial(self, request: BidRequest) -> str:
            return f"my key is {secret} " + PARTIAL

    deltas = Watch()
    agents = [Agent(agent_name=n, model_name="fake/model", api_key=secret) for n in "AB"]
    chat = GroupChat(agents=agents, max_loops=2, providers={"fake": Echo("x")},
                     stream_bids=True, on_event=[deltas])
    chat.run("t")
    assert len(deltas) == 2 and all(d.message.startswith("my key is ") for d in deltas)
    assert not [d for d in deltas if secret in d.message or secret[:12] in d.message]


def test_no_sink_is_given_when_nobody_watches_bids_form():
    provider = Recording("quiet")
    chat = GroupChat(agents=fake_agents(), max_loops=2, providers={"fake": provider},
                     stream_bids=True)
    chat.run("t")
    assert [r.sink for r, _ in provider.requests] == [None, None]
    assert all(r.deadline is not None for r, _ in provider.requests)  # the default deadline


@pytest.mark.parametrize("providers, problem", [
    ({"fake/model": Recording("x")}, "is not a model-name prefix"),
    ({"fake": object()}, "not a provider"),
    (["fake"], "must map a model-name prefix"),
])
def test_a_bad_providers_argument_is_refused_in_one_line(providers: Any, problem: str):
    with pytest.raises(ConfigError, match=problem) as caught:
        GroupChat(agents=fake_agents(), providers=providers)
    assert "\n" not in str(caught.value)


# --- the litellm provider takes the same request --------------------------------------------


def litellm_request(srv: FakeOpenAIServer, model: str, **kw: Any) -> BidRequest:
    agent = Agent(agent_name="A", model_name=f"openai/{model}", api_base=srv.base_url,
                  api_key=KEY, num_retries=2)
    agent.equip()
    return BidRequest(agent, [{"role": "user", "content": "bid"}], (), 1, **kw)


def ask(request: BidRequest, seconds: float | None = None) -> ModelReply:
    async def go() -> ModelReply:
        deadline = None if seconds is None else asyncio.get_running_loop().time() + seconds
        return await LITELLM.bid(dataclasses.replace(request, deadline=deadline))

    return background_loop().submit(go()).result()


def test_the_litellm_provider_streams_to_the_sink_in_its_request(server: FakeOpenAIServer):
    server.script("s", [tool_call(0.7, "hello there")])
    seen: list[tuple[float | None, str]] = []
    reply = ask(litellm_request(server, "s", sink=lambda s, m: seen.append((s, m))))
    assert server.requests_for("s")[0].body.get("stream") is True
    assert reply.path.endswith(":stream") and reply.bid.message == "hello there"
    assert seen[-1] == (0.7, "hello there")


def test_the_litellm_provider_retries_only_within_the_deadline_in_its_request(
        server: FakeOpenAIServer):
    """A Retry-After of 5 s past a 1 s deadline: the real cause at once, no second request."""
    server.script("late", [error(429, "slow down", retry_after=5)])
    with pytest.raises(ModelCallFailed, match="slow down") as caught:
        ask(litellm_request(server, "late"), seconds=1.0)
    assert caught.value.calls == 1 and len(server.requests_for("late")) == 1


# --- the layer's shape ---------------------------------------------------------------------


def test_no_provider_module_re_exports_names():
    """Callers import each name from the module that defines it: no `import x as x` hub."""
    hubs = {}
    for path in sorted(PROVIDERS.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        again = [a.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                 for a in node.names if a.asname == a.name]
        if again:
            hubs[path.name] = again
    assert hubs == {}


def test_no_context_variable_carries_the_bid_deadline_or_sink():
    names = {n for path in PROVIDERS.glob("*.py")
             for n in ("BID_DEADLINE", "BID_STREAM") if n in path.read_text(encoding="utf-8")}
    assert names == set()


def test_a_provider_given_for_a_litellm_prefix_needs_no_key_and_no_litellm():
    """`openai/...` agents answered by a given provider: no key check, no litellm, no cache."""
    code = """
import sys
from tests.providers.test_providers import Recording
from groupchat_core import Agent, GroupChat
provider = Recording("no litellm here")
agents = [Agent(agent_name=n, model_name="openai/gpt-4o-mini", temperature=0) for n in "AB"]
chat = GroupChat(agents=agents, max_loops=2, providers={"openai": provider})
for _ in range(2):
    chat.run("t")
assert chat.last_run.messages[-1].content == "no litellm here"
assert len(provider.requests) == 4, provider.requests  # temperature 0, yet not cached
assert "litellm" not in sys.modules
"""
    import subprocess
    import sys

    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


# --- runs in process (issue 40 §4) ---------------------------------------------------------


@pytest.mark.parametrize("model, given, expected", [
    ("sim/balanced", False, True), ("gpt-4o-mini", False, False),
    ("openai/gpt-4o-mini", False, False), ("openai/sim/x", False, False),
    ("mine/model", True, True), ("mine/model", False, False),
])
def test_sims_and_given_providers_run_in_process_and_litellm_models_do_not(
        model: str, given: bool, expected: bool):
    chosen = {"mine": ScriptedBids({}, shared=False)} if given else None
    assert runs_in_process(model, chosen) is expected
    assert (provider_for(model, chosen) is not LITELLM) is expected


def test_the_one_sim_note_is_exported_and_the_dashboard_shows_that_one():
    from groupchat_ui.kit import providers
    from groupchat_ui.sweeps import logic

    assert "not language models" in SIM_NOTE
    assert not hasattr(providers, "SIM_NOTE") and not hasattr(logic, "SIM_NOTE")
