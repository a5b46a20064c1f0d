"""The one provider interface: providers are objects a chat is given, and a bid's deadline and
stream sink reach it in the request, not through a registry or a context variable (docs/engine.md,
"Providers"); `runs_in_process` agrees with the engine's choice (issue 40 §4). Private imports
(LITELLM, in_process_provider, provider_for): units no public module exports."""

from __future__ import annotations

import ast
import asyncio
import subprocess
import sys
import threading
from typing import Any

import pytest

from groupchat_core import (
    SIM_NOTE,
    Agent,
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
from groupchat_core.providers._routing import in_process_provider
from groupchat_core.testing import FakeOpenAIServer, ScriptedBids, tool_call
from tests.helpers import ROOT
from tests.providers.conftest import Deltas, http_agent

PROVIDERS = ROOT / "groupchat_core" / "providers"
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


def fake_agents() -> list[Agent]:
    return [Agent(agent_name="A", model_name="fake/model"),
            Agent(agent_name="B", model_name="fake/model")]


def test_two_chats_use_their_own_providers_for_the_same_prefix_without_any_registry():
    """On the old process-wide registry the fake registered last answered both chats."""
    first, second = Recording("first fake"), Recording("second fake")
    assert isinstance(first, Provider)
    chats = [GroupChat(agents=fake_agents(), max_loops=2, providers={"fake": p})
             for p in (first, second)]

    async def both() -> list[Any]:
        return list(await asyncio.gather(*(c.arun_record("t") for c in chats)))

    records = background_loop().submit(both()).result()
    assert [[m.content for m in r.messages] for r in records] == [["t", "first fake"],
                                                                  ["t", "second fake"]]
    assert {r.agent.agent_name for r, _ in first.requests} == {"A", "B"}
    assert len(first.requests) == len(second.requests) == 2
    assert all(r.messages for r, _ in first.requests)  # needs_prompt: the prompt was built
    assert in_process_provider("fake/model") is None  # nothing joined a process-wide table


def test_the_deadline_and_the_sink_reach_the_provider_as_arguments_the_sink_only_if_watched():
    provider = Recording("streamed line")
    deltas = Deltas()
    chat = GroupChat(agents=fake_agents(), max_loops=2, providers={"fake": provider},
                     bid_timeout=5.0, stream_bids=True, on_event=[deltas])
    chat.run("t")
    for request, received_at in provider.requests:
        assert request.deadline is not None
        assert 0 < request.deadline - received_at <= 5.0  # bid_timeout, on the loop's clock
        assert request.sink is not None
    assert {d.agent for d in deltas} == {"A", "B"}
    assert all(d.message and PARTIAL.startswith(d.message) for d in deltas)
    unwatched = Recording("quiet")  # stream_bids, but nobody watches bids form: no sink
    GroupChat(agents=fake_agents(), max_loops=2, providers={"fake": unwatched},
              stream_bids=True).run("t")
    assert [r.sink for r, _ in unwatched.requests] == [None, None]
    assert all(r.deadline is not None for r, _ in unwatched.requests)  # the default deadline


def test_a_providers_deltas_are_masked_like_a_streamed_litellm_bid():
    """The sink a provider is given masks every held secret (here the agent's own key)."""
    secret = "sk-provider-echo-0123456789abcdefXYZ"

    class Echo(Recording):
        def partial(self, request: BidRequest) -> str:
            return f"my key is {secret} " + PARTIAL

    deltas = Deltas()
    agents = [Agent(agent_name=n, model_name="fake/model", api_key=secret) for n in "AB"]
    chat = GroupChat(agents=agents, max_loops=2, providers={"fake": Echo("x")},
                     stream_bids=True, on_event=[deltas])
    chat.run("t")
    assert len(deltas) == 2 and all(d.message.startswith("my key is ") for d in deltas)
    assert not [d for d in deltas if secret in d.message or secret[:12] in d.message]


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


def test_the_litellm_provider_streams_to_the_sink_in_its_request(server: FakeOpenAIServer):
    """(Its deadline in the request: test_rate_limits_pace.py, Retry-After past bid_timeout.)"""
    server.script("s", [tool_call(0.7, "hello there")])
    agent = http_agent(server, "A", "s", num_retries=2)
    agent.equip()
    seen: list[tuple[float | None, str]] = []
    request = BidRequest(agent, [{"role": "user", "content": "bid"}], (), 1,
                         sink=lambda s, m: seen.append((s, m)))
    reply = background_loop().submit(LITELLM.bid(request)).result()
    assert server.requests_for("s")[0].body.get("stream") is True
    assert reply.path.endswith(":stream") and reply.bid.message == "hello there"
    assert seen[-1] == (0.7, "hello there")


# --- the layer's shape ---------------------------------------------------------------------


def test_no_provider_module_re_exports_names():
    """Each name is imported from the module that defines it: no `import x as x` hub."""
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
import groupchat_core.providers._sim  # the simulation does not import litellm either
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
