"""The litellm path against a real LLM: SmolLM2-135M behind llama.cpp's OpenAI-compatible server.
Slow (seconds per bid, one request at a time): chats are short. Never skipped: `make llm-setup`
builds the server once per machine, and a missing build fails here with that command.

Private imports: the window test spies on `Transcript.window` (engine/_transcript.py, no public
name) to show the declared window really trimmed the history."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from groupchat_core import Agent, GroupChat, RunRecord
from groupchat_core.testing import LocalLLMServer
from tests.providers.conftest import Deltas

MAX_TOKENS = 160  # a bid in a few seconds, long enough for a whole respond call
TIMEOUT_S = 600.0  # one request at a time: a bid may wait for the others' on a busy machine
# beside other xdist workers llama.cpp's two threads spin waiting for each other (BENCHMARKS.md)
THREADS = 1 if os.environ.get("PYTEST_XDIST_WORKER") else 2


def local_server(n_ctx: int) -> LocalLLMServer:
    return LocalLLMServer(n_ctx=n_ctx, threads=THREADS)


@pytest.fixture(scope="module")
def llm() -> Iterator[LocalLLMServer]:
    with local_server(2048) as server:
        yield server


# A window the pair's bid prompt just fits (SmolLM2 counts 458-478 tokens on turns 1-2, plus 100
# of reply). Our count of it leaves the history 17 tokens on turn 1 (the 12-token task fits) and
# about 10 on turn 2, so the task plus any first message overflows: turn 2 is the first that
# trims (at 640 it was turn 4). llama.cpp rounds the window up to 768 for its own length check
# but sizes its buffers at 590: a prompt between the two fails in numpy (HTTP 500).
SMALL_WINDOW = 590


@pytest.fixture(scope="module")
def small_llm() -> Iterator[LocalLLMServer]:
    """One server for both window tests."""
    with local_server(SMALL_WINDOW) as server:
        yield server


def llm_agent(server: LocalLLMServer, name: str, prompt: str, **kw: Any) -> Agent:
    options: dict[str, Any] = {"max_tokens": MAX_TOKENS, "temperature": 0.0,
                               "timeout": TIMEOUT_S, **kw}
    return Agent(agent_name=name, system_prompt=prompt, model_name=server.model_name,
                 api_base=server.base_url, api_key="x", **options)


def pair(server: LocalLLMServer, **kw: Any) -> list[Agent]:
    return [llm_agent(server, "Ann", "You argue for the park.", **kw),
            llm_agent(server, "Ben", "You argue for the data centre.", **kw)]


TASK = "Park or data centre for the old rail yard?"


def one_turn(agents: list[Agent], task: str = TASK) -> RunRecord:
    chat = GroupChat(agents=agents, max_loops=2, threshold=0.0, bid_timeout=None)
    chat.run(task)
    assert chat.last_run is not None
    return chat.last_run


def test_forced_tool_calls_parse_into_the_bid_log_and_stream_into_the_same_bids(
        llm: LocalLLMServer) -> None:
    """One turn unstreamed, then streamed: at temperature 0 the streamed bids are the bids the
    same requests give unstreamed. (The bid log over several turns: test_engine.py's
    test_three_agents_exact_speakers_stop_reason_and_bid_table.)"""
    records = []
    deltas = Deltas()
    for stream in (False, True):  # no bid cache: the second run must reach the model
        chat = GroupChat(agents=pair(llm), max_loops=2, threshold=0.0, bid_timeout=None,
                         stream_bids=stream, on_event=[deltas], bid_cache=False)
        chat.run(TASK)
        records.append(chat.last_run)
    record, streamed = records
    assert record is not None and streamed is not None
    for bid in record.bids:
        assert bid.path == "tool_call", bid  # the forced respond call, no fallback needed
        assert bid.calls == 1
        assert bid.prompt_tokens and bid.prompt_tokens > 100  # system + bid prompt + tools
        assert bid.completion_tokens and bid.completion_tokens > 0
        assert 0.0 <= bid.score <= 1.0
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
    assert record.total_calls == sum(b.calls for b in record.bids)

    first = [b for b in streamed.bids if b.turn == 1]
    assert all(b.path == "tool_call:stream" and b.calls == 1 for b in first), first
    assert all(b.completion_tokens for b in first)
    assert [(b.score, b.message, b.error) for b in first] == [
        (b.score, b.message, b.error) for b in record.bids if b.turn == 1]
    for bid in first:
        mine = [e for e in deltas if e.agent == bid.agent and e.turn == 1]
        assert mine, f"no deltas from {bid.agent}"
        assert mine[-1].message.strip() == bid.message
        assert mine[-1].score == bid.score
        if len(bid.message) > 20:  # a real message grew over several deltas
            assert len({e.message for e in mine}) > 2


def test_the_dashboard_preset_talks_on_the_local_server(llm: LocalLLMServer) -> None:
    """The Local LLM preset needs no key, and at its own settings (seeded) its first turn posts
    a message: at threshold 0.5 every agent bid 0.30 and the run lulled on turn 1 (issue 41)."""
    from groupchat_ui.kit.presets import LOCAL_LLM_DEBATE, LOCAL_LLM_URL

    agents = LOCAL_LLM_DEBATE.build_agents()[:2]
    assert all(a.api_base == LOCAL_LLM_URL and a.api_key is None for a in agents)
    for agent in agents:
        agent.api_base, agent.timeout = llm.base_url, TIMEOUT_S
        agent.litellm_kwargs = {"seed": 7}
    settings = {**LOCAL_LLM_DEBATE.settings, "max_loops": 2}
    chat = GroupChat(agents=agents, bid_timeout=None, **settings)
    chat.run(LOCAL_LLM_DEBATE.task)
    record = chat.last_run
    assert record is not None
    # every call reached the model and came back as a respond call (no key was needed)
    assert all(b.path == "tool_call" and b.calls == 1 for b in record.bids), record.bids
    assert record.turns[0].winner is not None, [(b.score, b.message) for b in record.bids]
    assert record.messages[1].content.strip(), record.messages


# --- each rung of the fallback ladder, against the real server ---------------------------------


def test_auto_tool_choice_is_answered_with_a_respond_call_and_json_text_is_read(
        llm: LocalLLMServer) -> None:
    """One agent on each rung. "auto": the model answers with a respond call. "json": no tools
    are sent and the text is read; a 135M model rarely writes valid JSON, so the bid is read
    or unreadable with the reason (a run whose every bid is unreadable stops with an error:
    test_a_prompt_larger_than_the_window_is_an_error_not_a_lull)."""
    # "json" sends no tools, so a 135M model writes prose to the cap: 64 tokens hold a bid's
    # JSON object, and whatever it writes is read or unreadable all the same
    json_agent = llm_agent(llm, "Ben", "You argue for the data centre.", tool_choice_mode="json",
                           max_tokens=64)
    record = one_turn([llm_agent(llm, "Ann", "You argue for the park.", tool_choice_mode="auto"),
                       json_agent])
    by_agent = {b.agent: b for b in record.bids}
    assert len(record.bids) == 2 and by_agent["Ann"].path == "tool_call:auto", record.bids
    bid = by_agent["Ben"]
    assert bid.path in ("json_text", "tool_call:json"), bid
    # the agent's retries (a transient error on a loaded machine); pinned: no fallback rung
    assert 1 <= bid.calls <= json_agent.num_retries + 1, bid
    assert bid.error is None or bid.error.startswith("unreadable"), bid.error


def test_required_tool_choice_breaks_this_server_and_the_run_says_so(llm: LocalLLMServer) -> None:
    """llama-cpp-python 0.3.36 answers tool_choice="required" with HTTP 500: pinned, every bid
    fails and the run stops with an error naming each agent's reason, not a quiet room."""
    record = one_turn(pair(llm, tool_choice_mode="required", num_retries=0))
    assert record.stop_reason == "error"
    assert all(b.path == "none" and "InternalServerError" in (b.error or "") for b in record.bids)
    assert record.error is not None
    assert "Ann: InternalServerError" in record.error and "Ben: InternalServerError" in record.error
    assert not any(t.lull for t in record.turns)


# --- context windows that are too small ---------------------------------------------------------


def test_a_declared_small_window_keeps_a_long_chat_bidding(
        small_llm: LocalLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """A declared `context_length`: the history is trimmed to fit with room for the reply."""
    from groupchat_core.engine._transcript import Transcript

    windows: list[tuple[int, int]] = []  # (history lines, lines left out) of each prompt built
    whole = Transcript.window

    def window(self: Transcript, model: str | None, budget: int) -> Any:
        built = whole(self, model, budget)
        windows.append((len(self.lines), built.omitted))
        return built

    monkeypatch.setattr(Transcript, "window", window)
    agents = pair(small_llm, context_length=SMALL_WINDOW, max_tokens=100)
    chat = GroupChat(agents=agents, max_loops=3, threshold=0.0, bid_timeout=None)
    chat.run(TASK)
    record = chat.last_run
    assert record is not None and record.stop_reason == "max_loops"
    assert sorted(set(windows)) == [(1, 0), (2, 1)]  # turn 2 left the first message out
    assert all(b.path == "tool_call" and b.calls == 1 for b in record.bids), record.bids
    used = [b.prompt_tokens or 0 for b in record.bids]
    assert max(used) + 100 <= SMALL_WINDOW  # what the server counted, plus the reply's room
    assert used[-1] > used[0]  # the prompt grew (the last message) while the history was cut


def test_a_prompt_larger_than_the_window_is_an_error_not_a_lull(
        small_llm: LocalLLMServer) -> None:
    """A task too long for the window (no window declared): not even the first prompt fits,
    the server's numpy error (HTTP 500) is read as a context overflow, not retried (nothing to
    trim), and the run stops with an error."""
    long_task = TASK + " Consider" + " the neighbours, the trains, the jobs and the power grid;" * 8
    record = one_turn(pair(small_llm), long_task)
    assert record.stop_reason == "error"
    assert [b.calls for b in record.bids] == [1, 1]
    assert all("could not broadcast input array" in (b.error or "") for b in record.bids)
    assert record.error and record.error.startswith("no agent produced a readable bid on turn 1")


# --- constrained bids and a slice of Du et al.'s arithmetic (issue 20 items 3 and 6) -----------


def test_constrained_bids_and_a_du_math_problem_run_end_to_end(llm: LocalLLMServer) -> None:
    """tool_choice_mode="json_schema": the server's grammar makes the model write the respond
    object, read as JSON text (not every bid is read yet: BENCHMARKS.md; one that is not says
    why). One of Du et al.'s problems: a numeric scorer on the majority vote, an outcome
    recorded; whatever the accuracy, the pipeline scored what the agents said."""
    from groupchat_core.outcomes import du_math_tasks, extract

    task = du_math_tasks()[0]
    agents = [llm_agent(llm, "Solver", "You solve arithmetic carefully.",
                        tool_choice_mode="json_schema"),
              llm_agent(llm, "Checker", "You check the arithmetic of others.",
                        tool_choice_mode="json_schema")]
    chat = GroupChat(agents=agents, max_loops=2, threshold=0.0, bid_timeout=None)
    chat.run(task)
    record = chat.last_run
    assert record is not None and record.task == task.prompt
    assert all(b.path == "json_schema" for b in record.bids), record.bids
    first = [b for b in record.bids if b.turn == 1]
    assert all(b.calls == 1 for b in first), first
    assert all(b.outcome == "read" or (b.outcome == "unreadable" and b.error) for b in first)
    outcome = record.outcome
    assert outcome is not None, record
    assert (outcome.task_id, outcome.scorer, outcome.answer_from, outcome.expected) == (
        task.id, "numeric", "vote", task.answer)
    last_said = {m.role: extract(m.content, task) for m in record.messages[1:]}
    for name, said in last_said.items():  # each agent's last stated answer, as posted
        assert outcome.votes[name] == said, (name, outcome.votes)
    if outcome.answer is None:
        assert outcome.correct is False
    else:
        assert outcome.answer in outcome.votes.values()
        assert outcome.correct == (float(outcome.answer) == float(task.answer))


def test_the_thread_count_reaches_both_of_llama_cpps_thread_options() -> None:
    """Prompt and reply both: `--n_threads` alone leaves prompt processing on every core."""
    command = LocalLLMServer(threads=1).command()
    for option in ("--n_threads", "--n_threads_batch"):
        assert command[command.index(option) + 1] == "1", command
