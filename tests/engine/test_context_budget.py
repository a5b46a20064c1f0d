"""The history budget against a small context window, over real HTTP: everything sent is
counted, the reply's room reserved, a window declared or learned from a rejection (retried once).
Private imports (`engine._transcript`, `testing._fake_replies`): units with no public name."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest

from groupchat_core import RESPOND_TOOL, Agent, GroupChat
from groupchat_core.engine._transcript import SAFETY_TOKENS, PromptBudget, completion_reserve
from groupchat_core.testing import FakeOpenAIServer, error, tool_call
from groupchat_core.testing._fake_replies import prompt_tokens

WINDOW = 1024
KEY = "sk-local-dummy-key"  # a local server ignores it; litellm's OpenAI client wants one
LONG = ("I think we should look at the schedule again, because the venue, the catering and "
        "the travel plans all depend on the date we pick, and nobody has confirmed it yet. ")
# A second tool with a long schema: about 2,400 characters that every request carries.
BIG_TOOL: dict[str, Any] = {"type": "function", "function": {
    "name": "lookup_calendar", "description": "Look up a date in the team calendar. " * 20,
    "parameters": {"type": "object", "properties": {
        f"field_{i}": {"type": "string", "description": "An optional filter on the calendar."}
        for i in range(12)}}}}


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as srv:
        yield srv
    assert srv.unexpected == [], f"unexpected calls: {srv.unexpected}"


def with_window(agent: Agent, window: int) -> Agent:
    return agent.model_copy(update={"context_window": window})


def agents(srv: FakeOpenAIServer, window: int | None, server_window: int = WINDOW,
           **settings: Any) -> list[Agent]:
    """A and B (bidding 0.9, 0.8, long replies) on a server with `server_window`."""
    made = []
    for name, score in (("A", 0.9), ("B", 0.8)):
        model = f"w{server_window}-{name.lower()}"
        srv.configure(model, context_window=server_window)
        srv.set_responder(model, lambda body, n=name, s=score: tool_call(s, f"{n}: {LONG * 2}"))
        agent = Agent(agent_name=name, model_name=f"openai/{model}", api_base=srv.base_url,
                      api_key=KEY, **settings)
        made.append(agent if window is None else with_window(agent, window))
    return made


def run_long_chat(chat_agents: list[Agent]) -> GroupChat:
    chat = GroupChat(agents=chat_agents, max_loops=16, threshold=0.3)
    chat.run("Plan the team offsite: pick a date, a venue and the travel.")
    return chat


def big(srv: FakeOpenAIServer, window: int | None) -> list[Agent]:
    """Agents with max_tokens 128 and BIG_TOOL, on a WINDOW-token server."""
    return agents(srv, window, max_tokens=128, tools_list_dictionary=[copy.deepcopy(BIG_TOOL)])


def rejected(srv: FakeOpenAIServer) -> list[Any]:
    return [r for r in srv.requests if r.status == 400]


def test_a_declared_window_keeps_a_long_chat_bidding_without_a_single_rejection(
        server: FakeOpenAIServer) -> None:
    chat = run_long_chat(big(server, WINDOW))
    record = chat.last_run
    assert record.stop_reason == "max_loops" and len(record.messages) == 16
    assert all(b.error is None and b.calls == 1 for b in record.bids)
    assert rejected(server) == []
    assert sum(len(m.content) for m in record.messages) // 4 > WINDOW  # it would not all fit
    last = server.requests[-1].body["messages"][-1]["content"]
    assert "earlier messages left out" in last  # the history was trimmed, the task kept
    assert "Plan the team offsite" in last and record.messages[-2].content in last  # the latest
    # the tools schema was counted: without it the prompt would take the reply's room
    assert all(prompt_tokens(r.body) <= WINDOW for r in server.requests)


def test_an_undeclared_window_is_learned_from_the_first_rejection_and_the_bid_retried(
        server: FakeOpenAIServer) -> None:
    chat = run_long_chat(big(server, None))
    record = chat.last_run
    assert record.stop_reason == "max_loops" and len(record.messages) == 16
    assert all(b.error is None for b in record.bids)
    retried = [b for b in record.bids if b.calls == 2]
    # each agent is rejected once: the window the error names is kept for the rest of the run
    assert sorted(b.agent for b in retried) == ["A", "B"]
    assert len(rejected(server)) == 2
    assert record.total_calls == len(record.bids) + 2


@pytest.mark.parametrize("declared", [True, False])
def test_the_issues_640_token_server_with_default_max_tokens_keeps_bidding(
        server: FakeOpenAIServer, declared: bool) -> None:
    """The report: a local server with a 640-token window failed every bid. max_tokens (1024 by
    default) is larger than the window: half the window is kept for the reply."""
    chat = GroupChat(agents=agents(server, 640 if declared else None, server_window=640),
                     max_loops=10, threshold=0.3)
    chat.run("Plan the team offsite.")
    record = chat.last_run
    assert record is not None and record.stop_reason == "max_loops"
    assert all(b.error is None for b in record.bids)
    assert len(rejected(server)) == (0 if declared else 2)


def test_a_rejection_that_names_no_window_halves_the_history_budget(
        server: FakeOpenAIServer) -> None:
    """llama.cpp's own server says only "exceeds the available context size"."""
    limit = 700

    def respond(body: dict[str, Any]) -> Any:
        if prompt_tokens(body) > limit:
            return error(400, "the request exceeds the available context size, try increasing "
                              "it", err_type="exceed_context_size_error")
        return tool_call(0.9 if "You are A" in body["messages"][-1]["content"] else 0.8,
                         LONG * 2)

    server.set_responder(None, respond)
    chat_agents = [Agent(agent_name=n, model_name=f"openai/plain-{n}", api_base=server.base_url,
                         api_key=KEY, max_tokens=128) for n in ("A", "B")]
    chat = GroupChat(agents=chat_agents, max_loops=14, threshold=0.3)
    chat.run("Plan the team offsite.")
    record = chat.last_run
    assert record.stop_reason == "max_loops"
    assert all(b.error is None for b in record.bids), [b.error for b in record.bids if b.error]
    assert {b.calls for b in record.bids} <= {1, 2} and any(b.calls == 2 for b in record.bids)


def test_a_prompt_that_cannot_shrink_fails_with_the_servers_reason(
        server: FakeOpenAIServer) -> None:
    """Nothing to trim (only the task): one call, no pointless retry, the error names why."""
    server.configure("tiny", context_window=50)
    server.set_responder("tiny", lambda body: tool_call(0.9, "never"))
    chat_agents = [Agent(agent_name=n, model_name="openai/tiny", api_base=server.base_url,
                         api_key=KEY) for n in ("A", "B")]
    chat = GroupChat(agents=chat_agents)
    chat.run("A short task.")
    record = chat.last_run
    assert record.stop_reason == "error"
    assert all("ContextWindowExceededError" in b.error and "maximum context length is 50"
               in b.error for b in record.bids)
    assert all(b.calls == 1 for b in record.bids)


# --- the budget's arithmetic -----------------------------------------------------------------


def test_the_reply_room_is_max_tokens_capped_at_half_the_window() -> None:
    assert completion_reserve(128, 1024) == 128
    assert completion_reserve(1024, 640) == 320  # max_tokens above the window: half of it
    assert completion_reserve(0, 640) == 0


def test_the_budget_counts_system_prompt_tools_and_reserve() -> None:
    def plain() -> Agent:
        return Agent(agent_name="A", model_name="openai/unknown-model", max_tokens=100)

    tooled = Agent(agent_name="A", model_name="openai/unknown-model", max_tokens=100,
                   system_prompt="You are careful. " * 20,
                   tools_list_dictionary=[copy.deepcopy(RESPOND_TOOL), copy.deepcopy(BIG_TOOL)])
    small, big = PromptBudget.for_agent(with_window(plain(), 2000)), PromptBudget.for_agent(
        with_window(tooled, 2000))
    assert small.window == big.window == 2000 and small.reserve == 100
    assert big.fixed > small.fixed + 500  # the schema and the system prompt are counted
    assert small.history_budget(300) == 2000 - 100 - small.fixed - 300 - SAFETY_TOKENS
    assert PromptBudget.for_agent(plain()).window == 8192  # unknown to litellm, nothing declared


def test_shrinking_believes_a_smaller_stated_window_else_halves_what_was_sent() -> None:
    budget = PromptBudget("m", window=4000, max_tokens=100, fixed=100)
    budget.sent = 1500
    budget.shrink(None)
    assert budget.history_budget(200) == 750
    budget.shrink(1000)
    assert budget.window == 1000
    budget.sent = 600
    budget.shrink(5000)  # a larger "window" than we use teaches nothing: halve what was sent
    assert budget.window == 1000 and budget.cap == 300
