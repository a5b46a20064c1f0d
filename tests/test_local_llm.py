"""The litellm path against a real LLM: SmolLM2-135M behind llama.cpp's OpenAI-compatible server.

Slow on purpose (seconds per bid, one request at a time): these tests keep chats short. They
never skip: `make test` builds the server once per machine (`make llm-setup`), and a missing
build fails here with the command that fixes it.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from groupchat_core import Agent, GroupChat
from groupchat_core.testing import LocalLLMServer

# Short replies keep each bid to a few seconds; long enough for a whole respond call.
MAX_TOKENS = 160


@pytest.fixture(scope="module")
def llm() -> Iterator[LocalLLMServer]:
    with LocalLLMServer(n_ctx=2048) as server:
        yield server


def llm_agent(server: LocalLLMServer, name: str, prompt: str, **kw: object) -> Agent:
    return Agent(agent_name=name, system_prompt=prompt, model_name=server.model_name,
                 api_base=server.base_url, api_key="x", max_tokens=MAX_TOKENS,
                 temperature=0.0, **kw)


def test_forced_tool_calls_reach_the_model_and_parse(llm: LocalLLMServer) -> None:
    chat = GroupChat(agents=[llm_agent(llm, "Optimist", "You argue for the benefits."),
                             llm_agent(llm, "Pessimist", "You argue for the risks.")],
                     max_loops=2, threshold=0.0)
    chat.run("Should we adopt AI for medical diagnosis?")
    record = chat.last_run
    assert record is not None
    first_turn = [b for b in record.bids if b.turn == 1]
    assert [b.agent for b in first_turn] == ["Optimist", "Pessimist"]
    for bid in first_turn:
        assert bid.path == "tool_call", bid  # the forced respond call, no fallback needed
        assert bid.calls == 1
        assert bid.prompt_tokens and bid.prompt_tokens > 100  # system + bid prompt + tools
        assert bid.completion_tokens and bid.completion_tokens > 0
        assert 0.0 <= bid.score <= 1.0


def test_bid_log_of_a_short_chat(llm: LocalLLMServer) -> None:
    agents = [llm_agent(llm, "Ann", "You are curious and ask questions."),
              llm_agent(llm, "Ben", "You are practical and give examples.")]
    chat = GroupChat(agents=agents, max_loops=3, threshold=0.0)
    chat.run("Plan a team offsite.")
    record = chat.last_run
    assert record is not None
    frame = record.bids_frame()
    turns = sorted(set(frame["turn"]))
    assert turns == list(range(1, len(record.turns) + 1))
    for turn in turns:  # every agent bid on every turn, in roster order
        assert list(frame[frame["turn"] == turn]["agent"]) == ["Ann", "Ben"]
    posted = [m for m in record.messages[1:]]
    winners = [t.winner for t in record.turns if t.winner]
    assert [m.role for m in posted] == winners
    for turn in record.turns:
        if turn.winner is not None:
            won = frame[(frame["turn"] == turn.turn) & frame["winner"]]
            assert list(won["agent"]) == [turn.winner]
            assert float(won["adjusted"].iloc[0]) == turn.winning_adjusted
    assert record.stop_reason in ("max_loops", "lull", "error")
    assert record.total_calls == len(record.bids)


def test_the_dashboard_preset_runs_against_the_local_server(llm: LocalLLMServer) -> None:
    """The Local LLM preset needs no key; only the port differs from `make llm`'s."""
    from ui.kit.presets import LOCAL_LLM_DEBATE, LOCAL_LLM_URL

    agents = LOCAL_LLM_DEBATE.build_agents()[:2]
    assert all(a.api_base == LOCAL_LLM_URL and a.api_key is None for a in agents)
    for agent in agents:
        agent.api_base = llm.base_url
    chat = GroupChat(agents=agents, max_loops=2, threshold=0.0)
    chat.run(LOCAL_LLM_DEBATE.task)
    record = chat.last_run
    assert record is not None
    # every call reached the model and came back as a respond call (no key was needed)
    assert all(b.path == "tool_call" and b.calls == 1 for b in record.bids), record.bids
