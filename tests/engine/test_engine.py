"""The turn loop, as a specification: scripted agents, exact speakers, stop reasons, bid log.
Private imports (`providers._routing`): a test hook with no public name."""

from __future__ import annotations

import asyncio
import threading
import uuid

import pytest

from groupchat_core import (
    RESPOND_TOOL,
    Agent,
    Bid,
    BidDelta,
    BidReceived,
    ConfigError,
    GroupChat,
    LiveRun,
    LullReached,
    MessagePosted,
    RunFinished,
    RunStarted,
    SpeakerSelected,
    TurnCompleted,
    TurnStarted,
)
from groupchat_core.providers._routing import in_process_provider
from groupchat_core.testing import ScriptedBid, ScriptedBids, UnexpectedModelCall
from tests.helpers.chats import scripted_chat_with_fake as make_chat
from tests.helpers.scripted_trio import trio_record
from tests.helpers.waits import HANG_GUARD_S

# A speaks on turn 1, then a lull; B never clears the threshold
A_THEN_LULL = {"A": [(0.9, "a"), (0.1, "")], "B": [(0.1, ""), (0.1, "")]}


def slow_second_turn(**settings):
    """A posts "kept" on turn 1; turn 2's bids take 5 s, so a run ends by being cancelled."""
    return make_chat({"A": [(0.9, "kept"), ScriptedBid(0.9, "never", latency=5)],
                      "B": [(0.1, ""), ScriptedBid(0.1, "", latency=5)]}, **settings)


def test_three_agents_exact_speakers_stop_reason_and_bid_table():
    events: list = []
    record = trio_record("Debate the plan.", on_event=events.append)  # every scripted bid used
    assert [m.role for m in record.messages] == ["User", "Alice", "Bob"]
    assert [m.content for m in record.messages] == ["Debate the plan.", "A1", "B2"]
    assert record.stop_reason == "lull"
    # turn 2: Alice 0.9 - 0.3 = 0.6 loses to Bob 0.7; turn 3: Bob penalised, nobody clears 0.5
    rows = [(b.turn, b.agent, b.score, round(b.adjusted, 10), b.penalized, b.eligible, b.winner)
            for b in record.bids]
    assert rows == [
        (1, "Alice", 0.9, 0.9, False, True, True),
        (1, "Bob", 0.7, 0.7, False, True, False),
        (1, "Cara", 0.1, 0.1, False, False, False),
        (2, "Alice", 0.9, 0.6, True, True, False),
        (2, "Bob", 0.7, 0.7, False, True, True),
        (2, "Cara", 0.65, 0.65, False, True, False),
        (3, "Alice", 0.2, 0.2, False, False, False),
        (3, "Bob", 0.4, 0.1, True, False, False),
        (3, "Cara", 0.3, 0.3, False, False, False),
    ]
    assert [(t.turn, t.winner, t.lull) for t in record.turns] == [
        (1, "Alice", False), (2, "Bob", False), (3, None, True)]
    assert record.turns[1].runner_up_adjusted == 0.65
    assert record.turns[1].reason == "penalty_changed_winner"
    assert record.messages[1].score == 0.9
    frame = record.bids_frame()
    assert list(frame.columns[:15]) == [
        "turn", "agent", "position", "score", "adjusted", "penalized", "eligible", "winner",
        "message", "latency_ms", "prompt_tokens", "completion_tokens", "cost_usd", "path",
        "error"]
    assert len(frame) == 9
    # the live bids carry the standing selection later records (the penalty shows live)
    live = [e.bid for e in events if isinstance(e, BidReceived)]
    def standing(b):
        return (b.turn, b.agent, b.penalized, round(b.adjusted, 10), b.eligible)

    assert sorted(map(standing, live)) == sorted(map(standing, record.bids))
    assert (2, "Alice", True, 0.6, True) in map(standing, live)


def test_task_counts_toward_max_loops_and_one_loop_calls_no_model():
    chat, fake = make_chat({"A": [(0.9, "a")] * 5, "B": [(0.8, "b")] * 5}, max_loops=3,
                           recency_penalty=0.0, output_type="list")
    assert chat.run("go") == ["User: go", "A: a", "A: a"]
    assert chat.last_run.stop_reason == "max_loops"
    assert fake.remaining() == {"A": 3, "B": 3}
    chat, fake = make_chat({"A": [], "B": []}, max_loops=1, output_type="final")
    assert chat.run("hello") == "hello"
    assert chat.last_run.stop_reason == "max_loops" and fake.calls == []


@pytest.mark.parametrize(("window", "expected"), [
    (0, ["A", "A", "A", "A"]),
    (1, ["A", "B", "A", "B"]),
    (2, ["A", "B", "C", "A"]),
])
def test_recency_window(window, expected):
    script = {"A": [(0.9, "a")] * 4, "B": [(0.85, "b")] * 4, "C": [(0.8, "c")] * 4}
    chat, fake = make_chat(script, max_loops=5, recency_window=window, recency_penalty=0.35)
    chat.run("t")
    assert [m.role for m in chat.last_run.messages[1:]] == expected
    fake.assert_complete()


def test_recency_resets_every_run():
    script = {"A": [(0.9, "a"), (0.9, "a")], "B": [(0.7, "b"), (0.7, "b")]}
    chat, fake = make_chat(script, max_loops=2)
    chat.run("first")
    chat.run("second")  # A spoke last in run one; a fresh run must not penalise it
    assert [b.penalized for b in chat.last_run.bids] == [False, False]
    assert chat.last_run.messages[1].role == "A"
    fake.assert_complete()


def test_assert_complete_names_each_agent_with_unused_bids():
    chat, fake = make_chat({"A": [(0.9, "a"), (0.1, ""), (0.1, "")], "B": [(0.1, "")] * 3,
                            "C": [(0.1, "")] * 2})
    chat.run("t")  # A speaks, then a lull on turn 2: A and B keep one bid each, C none
    with pytest.raises(AssertionError) as caught:
        fake.assert_complete()
    assert str(caught.value) == "scripted bids left over ('A': 1 unused, 'B': 1 unused)"


def test_every_bid_failing_stops_with_error_not_lull():
    chat, _ = make_chat({"A": [RuntimeError("boom")], "B": [TimeoutError("slow")]})
    chat.run("t")
    record = chat.last_run
    assert record.stop_reason == "error"
    assert record.turns[0].lull is False and record.turns[0].failed_bids == 2
    assert "A: RuntimeError: boom" in record.error and "B: TimeoutError: slow" in record.error
    assert [b.error for b in record.bids] == ["RuntimeError: boom", "TimeoutError: slow"]


def test_unreadable_scripted_replies_stop_with_error_and_no_lull_event():
    events: list[str] = []
    chat, fake = make_chat({"A": [{"score": "very high", "message": "hi"}],
                            "B": [{"score": float("nan"), "message": ""}],
                            "C": [RuntimeError("down")]},
                           on_event=lambda e: events.append(e.kind))
    chat.run("t")
    record = chat.last_run
    assert record.stop_reason == "error" and record.turns[0].reason == "no_readable_bid"
    assert record.turns[0].failed_bids == 1 and not record.turns[0].lull
    assert record.error == (
        "no agent produced a readable bid on turn 1: "
        "A: unreadable: invalid score 'very high': not a number; "
        "B: unreadable: invalid score nan: not finite; C: RuntimeError: down")
    assert "lull" not in events and events[-2:] == ["turn_completed", "run_finished"]
    fake.assert_complete()


def test_one_agent_failing_never_fails_the_turn():
    chat, _ = make_chat({"A": [ValueError("bad key"), (0.1, "")], "B": [(0.9, "b"), (0.1, "")]})
    chat.run("t")
    record = chat.last_run
    assert [m.role for m in record.messages] == ["User", "B"]
    assert record.bids[0].error == "ValueError: bad key" and record.bids[0].score == 0.0
    assert record.stop_reason == "lull"


def test_bid_timeout_makes_a_silent_failed_bid():
    chat, _ = make_chat({"A": [ScriptedBid(0.9, "late", latency=2.0), (0, "")],
                         "B": [(0.6, "b"), (0, "")]}, bid_timeout=0.2)
    chat.run("t")
    assert chat.last_run.bids[0].error.startswith("TimeoutError")
    assert chat.last_run.messages[1].role == "B"


def test_bids_of_a_turn_run_concurrently():
    chat, fake = make_chat({n: [ScriptedBid(0.1, "", latency=0.3)] for n in "ABCD"})
    inner, in_flight, most = fake.bid, [0], [0]

    async def bid(request):  # counts the bids being answered at once (no clock involved)
        in_flight[0] += 1
        most[0] = max(most[0], in_flight[0])
        try:
            return await inner(request)
        finally:
            in_flight[0] -= 1

    fake.bid = bid
    events: list = []
    chat.add_observer(events.append)
    chat.run("t")
    starts = [e for e in events if isinstance(e, TurnStarted)]
    bids = [e.bid for e in events if isinstance(e, BidReceived)]
    assert len(starts) == 1 and len(bids) == 4
    assert most[0] == 4  # all four asked at once; one after another would be 1
    assert all(b.latency_ms >= 300 for b in bids)  # each bid's latency is its own wait


def test_every_agent_bids_on_the_same_snapshot_including_the_last_speaker():
    chat, fake = make_chat({"A": [(0.9, "first"), (0.1, "")], "B": [(0.2, ""), (0.1, "")]})
    chat.run("Opening question")
    second_turn_prompts = [c.messages[-1]["content"] for c in fake.calls if c.turn == 2]
    assert len(second_turn_prompts) == 2
    assert all("A: first" in p and "User: Opening question" in p for p in second_turn_prompts)


class Picky:
    """An observer of two kinds, safe to call on the engine's loop thread."""

    wants = frozenset({"run_finished", "turn_completed"})
    thread_safe = True

    def __init__(self):
        self.seen: list[tuple[str, str]] = []

    def __call__(self, event):
        self.seen.append((event.kind, threading.current_thread().name))


def test_events_arrive_in_order_wants_filters_them_and_a_failing_observer_breaks_nothing(caplog):
    chat, _ = make_chat(A_THEN_LULL)
    events: list = []
    picky = Picky()

    def broken(event):
        raise RuntimeError("observer bug")

    for observer in (events.append, broken, picky):
        chat.add_observer(observer)
    chat.run("t")
    kinds = [e.kind for e in events]
    assert kinds[:2] == ["run_started", "message_posted"]
    assert kinds[2] == "turn_started" and sorted(kinds[3:5]) == ["bid", "bid"]
    assert kinds[5:8] == ["speaker_selected", "message_posted", "turn_completed"]
    assert kinds[8] == "turn_started" and kinds[11:] == ["lull", "turn_completed", "run_finished"]
    assert {type(e) for e in events} == {RunStarted, TurnStarted, BidReceived, SpeakerSelected,
                                         MessagePosted, TurnCompleted, LullReached, RunFinished}
    # wants filters the kinds; thread_safe runs it on the loop
    assert [k for k, _ in picky.seen] == ["turn_completed", "turn_completed", "run_finished"]
    assert {t for _, t in picky.seen} == {"groupchat-loop"}
    chat.remove_observer(picky)
    assert picky not in chat._observers
    # the failing observer was logged, and the chat ran to its end
    assert chat.last_run.stop_reason == "lull" and "observer bug" in caplog.text


def test_streaming_callback_replays_posted_messages_on_the_calling_thread():
    # the posted message is stripped ("two  words"); the double space survives as a chunk
    chat, _ = make_chat({"A": [(0.9, "two  words "), (0.1, "")], "B": [(0.1, ""), (0.1, "")]})
    seen: list[tuple[str, str, bool, str]] = []
    chat.run("Hi all", streaming_callback=lambda a, c, f: seen.append(
        (a, c, f, threading.current_thread().name)))
    assert [(a, c, f) for a, c, f, _ in seen] == [
        ("User", "Hi ", False), ("User", "all", False), ("User", "", True),
        ("A", "two ", False), ("A", " ", False), ("A", "words", False), ("A", "", True)]
    assert {t for *_, t in seen} == {threading.current_thread().name}


def test_run_works_inside_a_running_event_loop_and_its_async_twin_on_the_callers_loop():
    chat, _ = make_chat(A_THEN_LULL, output_type="final")

    async def notebook_cell() -> str:
        return chat.run("inside a loop")

    assert asyncio.run(notebook_cell()) == "a"
    chat, _ = make_chat(A_THEN_LULL, output_type="list")
    assert asyncio.run(chat.arun("t")) == ["User: t", "A: a"]


def test_run_batch_gives_fresh_independent_chats_in_order_even_concurrently():
    chat, _ = make_chat({"A": [(0.9, "a1"), (0.1, ""), (0.9, "a2"), (0.1, "")],
                         "B": [(0.1, ""), (0.1, ""), (0.1, ""), (0.1, "")]}, output_type="list")
    assert chat.run_batch(["one", "two"]) == [["User: one", "A: a1"], ["User: two", "A: a2"]]
    assert chat.last_run.task == "two" and len(chat.last_run.messages) == 2
    chat, _ = make_chat({"A": [ScriptedBid(0.1, "", latency=0.05)] * 3,
                         "B": [ScriptedBid(0.1, "", latency=0.05)] * 3},
                        output_type="final", batch_concurrency=3)
    assert chat.run_batch(["x", "y", "z"]) == ["x", "y", "z"]


def cancelled_bids(chat, fake, cancel_at_turn: int | None = None,
                   asked_all: threading.Event | None = None) -> list[str]:
    """The agents whose bid was cancelled in flight (not waited out), listed as it happens;
    with `cancel_at_turn`, the chat is cancelled as soon as every bid of that turn is asked
    (a condition, not a timer: a loaded machine cannot make the cancel land in turn 1), or,
    given `asked_all`, that event is set then instead."""
    cancelled: list[str] = []
    inner, asked = fake.bid, [0]
    agents = len(chat.agents)

    async def bid(request):
        asked[0] += 1
        if cancel_at_turn is not None and asked[0] == cancel_at_turn * agents:
            if asked_all is not None:
                asked_all.set()
            else:
                chat.cancel()
        try:
            return await inner(request)
        except asyncio.CancelledError:
            cancelled.append(request.agent.agent_name)
            raise

    fake.bid = bid
    return cancelled


RUN = {"run": lambda chat, **kw: chat.run("t", **kw),  # the same run, sync and on a new loop
       "arun": lambda chat, **kw: asyncio.run(chat.arun("t", **kw))}


def test_async_cancellation_records_cancelled_and_propagates():
    chat, _ = make_chat({"A": [ScriptedBid(0.9, "x", latency=5)], "B": [(0.1, "")]})

    async def main() -> None:
        task = asyncio.ensure_future(chat.arun("t"))
        await asyncio.sleep(0.1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert chat.last_run.stop_reason == "cancelled"
    assert [m.content for m in chat.last_run.messages] == ["t"]


def test_a_scripted_fake_fails_loudly_past_its_script_and_once_closed_is_not_routed_to():
    """close() drops it from the process-wide table; closing twice is harmless. A fake passed
    to the chat (make_chat, as every scripted test here) joins no table at all."""
    chat, passed = make_chat({"A": [(0.9, "a")], "B": [(0.1, "")]})
    assert in_process_provider(passed.model_name) is None
    with pytest.raises(UnexpectedModelCall):
        chat.run("t")
    fake = ScriptedBids({"A": [(0.9, "a")], "B": [(0.1, "")]})
    assert in_process_provider(fake.model_name) is fake
    fake.close()
    fake.close()
    assert in_process_provider(fake.model_name) is None


def test_validation_errors():
    a, b = Agent(agent_name="A"), Agent(agent_name="B")
    fewer = r"^GroupChat requires at least 2 agents\.$"
    for settings, error, match in [
        ({"agents": [a]}, ValueError, fewer), ({}, ValueError, fewer),
        ({"agents": [a, Agent(agent_name="A")]}, ValueError, "duplicate agent_name 'A'"),
        ({"max_loops": True}, ValueError, "max_loops must be an integer >= 1, got True"),
        ({"threshold": float("nan")}, ValueError, "threshold must be a finite number, got nan"),
        ({"recency_window": -1}, ValueError, "recency_window must be an integer >= 0, got -1"),
        ({"output_type": "html"}, ValueError, "output_type 'html'"),
        ({"agents": [a, Agent(agent_name="C", model_name="sim/nobody")]}, ValueError,
         "unknown sim persona 'nobody'"),
        ({"bogus_option": 1}, ConfigError, "bogus_option"),
    ]:
        with pytest.raises(error, match=match):
            GroupChat(**(({"agents": [a, b]} | settings) if settings else {}))  # {}: no agents


def test_auto_equip_in_place_once_and_opt_out_is_checked():
    a, b = Agent(agent_name="A"), Agent(agent_name="B")
    GroupChat(agents=[a, b])
    GroupChat(agents=[a, b])
    assert a.tools_list_dictionary == [RESPOND_TOOL]
    bare = Agent(agent_name="C")
    with pytest.raises(ValueError, match="'C' has no 'respond' tool and auto_equip=False"):
        GroupChat(agents=[a, bare], auto_equip=False)
    assert bare.tools_list_dictionary == []


def test_attributes_write_through_validation_and_to_dict_has_config_only():
    chat = GroupChat(agents=[Agent(agent_name="A"), Agent(agent_name="B")], max_loops=7)
    chat.threshold = 0.35
    assert chat.threshold == 0.35 and chat.to_dict()["threshold"] == 0.35
    with pytest.raises(ValueError, match="threshold must be a finite number"):
        chat.threshold = "high"
    assert chat.idle_timeout == 8.0
    data = chat.to_dict()  # config, without agents or conversation
    assert data["max_loops"] == 7 and data["name"] == "dynamic-groupchat"
    assert "agents" not in data and "conversation" not in data


def test_spec_round_trip_rebuilds_an_equivalent_chat():
    chat = GroupChat(agents=[Agent(agent_name="A", system_prompt="pro", api_key="sk-secret-1"),
                             Agent(agent_name="B", model_name="sim/eager")], threshold=0.35)
    spec = chat.to_spec()
    assert "sk-secret-1" not in spec.model_dump_json()
    again = GroupChat.from_spec(spec.to_data())
    assert again.to_dict() == chat.to_dict()
    assert [a.model_name for a in again.agents] == ["sim/balanced", "sim/eager"]


def test_verbose_prints_panels(capsys):
    chat, _ = make_chat({"A": [(0.9, "hello there"), (0.1, "")], "B": [(0.1, ""), (0.1, "")]},
                        verbose=True)
    chat.run("the task")
    out = capsys.readouterr().out
    assert "User task" in out and "the task" in out and "A (score 0.90)" in out


@pytest.mark.parametrize("runner", ["run", "arun"])
def test_cancel_keeps_what_was_posted_and_callbacks_run_on_the_callers_thread(runner):
    chat, fake = slow_second_turn(output_type="list")
    cancelled = cancelled_bids(chat, fake, cancel_at_turn=2)
    threads: set[str] = set()
    assert RUN[runner](chat, streaming_callback=lambda *a: threads.add(
        threading.current_thread().name)) == ["User: t", "A: kept"]
    assert sorted(cancelled) == ["A", "B"]  # the slow turn-2 bids were cut, not waited out
    assert threads == {threading.current_thread().name}
    assert chat.last_run.stop_reason == "cancelled" and chat.last_run.ended_at


@pytest.mark.parametrize("runner", ["run", "arun"])
def test_a_raising_streaming_callback_stops_the_run_and_propagates(runner):
    chat, fake = slow_second_turn()
    turn_two = threading.Event()
    cancelled = cancelled_bids(chat, fake, cancel_at_turn=2, asked_all=turn_two)

    def callback(agent, chunk, final):
        if agent == "A":  # raised once the slow turn-2 bids are in flight (else none to cut)
            assert turn_two.wait(HANG_GUARD_S)
            raise KeyError("stop")

    with pytest.raises(KeyError):
        RUN[runner](chat, streaming_callback=callback)
    assert sorted(cancelled) == ["A", "B"]  # the slow second turn was cancelled
    assert chat.last_run.stop_reason == "cancelled"
    assert [m.role for m in chat.last_run.messages] == ["User", "A"]


def test_observers_still_see_run_finished_after_the_caller_interrupts():
    chat, _ = slow_second_turn()
    kinds: list[str] = []
    chat.add_observer(lambda e: kinds.append(e.kind))

    def callback(agent, chunk, final):
        if agent == "A" and final:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        chat.run("t", streaming_callback=callback)
    assert kinds[-1] == "run_finished" and chat.last_run.stop_reason == "cancelled"


def test_nul_characters_never_reach_the_record():
    chat, _ = make_chat({"A": [(0.9, "a\x00b"), (0.1, "")], "B": [(0.1, ""), (0.1, "")]})
    chat.run("task\x00")
    assert [m.content for m in chat.last_run.messages] == ["task\ufffd", "a\ufffdb"]


@pytest.mark.parametrize(("name", "problem"), [
    ("x" * 201, "201 characters long; keep it to 200"),
    ("two\nlines", "must not contain control characters"),
])
def test_agent_names_are_short_single_line_identifiers(name, problem):
    with pytest.raises(ValueError, match=problem):
        Agent(agent_name=name)
    Agent(agent_name="x" * 200)


@pytest.mark.usefixtures("fresh_engines")
def test_a_run_is_recorded_under_the_id_given_and_a_bad_id_is_refused():
    """The dashboard records a chat job's run under the job's id (issue 21: one id on every page;
    its side: tests/ui/test_app.py::test_run_page_runs_a_sim_chat_live_and_ends_with_a_summary)."""
    def record(**run_id: str):
        chat = GroupChat(agents=[Agent(agent_name="A", model_name="sim/eager"),
                                 Agent(agent_name="B", model_name="sim/reserved")], max_loops=3)
        return asyncio.run(chat.arun_record("Plan it.", **run_id))

    wanted = uuid.uuid4().hex
    assert record(run_id=wanted).run_id == wanted
    with pytest.raises(ConfigError, match="32 lowercase hex"):
        record(run_id="../etc")
    assert record().run_id != wanted  # default: a new one


def test_a_live_fold_follows_the_turn_and_its_streamed_candidates_then_the_whole_run():
    """`LiveRun`, the one fold the dashboard's job shows: deltas of the open turn only, a bid in
    replaces its preview, a new turn starts empty; every event counted, the record at the end.
    (Keys are masked before any observer: tests/providers/test_hostile_routes.py.)"""
    live = LiveRun()
    live(TurnStarted(run_id="r", turn=1))
    live(BidDelta(run_id="r", turn=1, agent="A", score=None, message="Hi"))
    live(BidDelta(run_id="r", turn=0, agent="B", message="stale turn"))  # not this turn's
    assert (live.state().turn, dict(live.state().candidates)) == (1, {"A": (None, "Hi", False)})
    bid = Bid(turn=1, agent="A", position=0, score=0.7, message="Hi there!")
    live(BidReceived(run_id="r", bid=bid))
    assert dict(live.state().candidates) == {"A": (0.7, "Hi there!", True)}
    whole = LiveRun()
    record = asyncio.run(make_chat(A_THEN_LULL)[0].arun_record("t", observers=[whole]))
    state = whole.state()
    assert (state.run_id, state.messages, state.turns) == (record.run_id, tuple(record.messages),
                                                          tuple(record.turns))
    assert state.record is record and state.deltas == 0
    assert [b.winner for b in state.bids_by_turn[1]] == [b.winner for b in record.bids
                                                         if b.turn == 1]
    live(TurnStarted(run_id="r", turn=2))
    assert (live.state().turn, dict(live.state().candidates), live.state().bids) == (2, {}, ())
    assert (live.state().events, live.state().deltas) == (3, 1)  # the stale delta not folded
