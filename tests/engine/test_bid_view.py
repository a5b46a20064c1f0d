"""What a bidder sees (issue 43): prompt presets, typed history, anonymised names, the others'
bids, the vote tally; defaults keep today's requests byte-identical. Private imports: units."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from groupchat_core import (
    BID_PROMPT_PRESETS,
    CHAT_CHOICES,
    DEFAULT_BID_PROMPT,
    Agent,
    BidRequest,
    ConfigError,
    GroupChat,
)
from groupchat_core._bidding import SWARMS_16_BID_PROMPT, validate_bid_prompt
from groupchat_core.engine._bidcache import request_key
from groupchat_core.engine._transcript import TYPED_CONVERSATION, aliases, typed_turns
from groupchat_core.engine._turn_loop import tally_note, view_key
from groupchat_core.outcomes import Task
from groupchat_core.testing import FakeOpenAIServer, ScriptedBids, tool_call
from tests.helpers.chats import scripted_chat_with_fake

SCRIPT: dict[str, list[Any]] = {
    "Ann": [(0.9, "Ann one"), (0.1, ""), (0.8, "Ann two")],
    "Bob": [(0.2, "Bob one"), (0.7, "Bob two"), (0.1, "")],
    "Cy": [(0.0, ""), (0.3, "Cy one"), (0.2, "")],
}


def _run(task: str | Task = "What is 6*7?", script: dict[str, list[Any]] | None = None,
         **settings: Any) -> tuple[Any, ScriptedBids]:
    """Three scripted agents (Ann with a system prompt, Bob with a description), 4 messages."""
    fake = ScriptedBids(script or SCRIPT, shared=False)
    agents = [Agent(agent_name="Ann", model_name=fake.model_name, system_prompt="You are Ann."),
              Agent(agent_name="Bob", model_name=fake.model_name,
                    description="a careful checker"),
              Agent(agent_name="Cy", model_name=fake.model_name)]
    settings.setdefault("max_loops", 4)
    chat = GroupChat(agents=agents, providers=fake.providers, bid_cache=False,
                     output_type="basemodel", **settings)
    return chat.run(task), fake


def _pair(**settings: Any) -> GroupChat:
    return GroupChat(agents=[Agent(agent_name="a"), Agent(agent_name="b")], **settings)


def _asked(fake: ScriptedBids, agent: str, turn: int) -> list[dict[str, Any]]:
    return next(c.messages for c in fake.calls if c.agent.agent_name == agent and c.turn == turn)


def _requests_json(fake: ScriptedBids) -> str:
    calls = sorted(([c.agent.agent_name, c.turn, c.messages] for c in fake.calls),
                   key=lambda x: (x[1], x[0]))
    return json.dumps(calls, sort_keys=True, ensure_ascii=False)


# --- defaults: today's requests, byte for byte -------------------------------------------

# sha256 of _requests_json after _run() with the code before issue 43 (commit bb443bd, the
# same scenario run against `git archive bb443bd`): 9 requests, 7,422 characters.
BEFORE_ISSUE_43 = "576a4e49ca127e658c7b2caf4f721974ec1ae9d8378ac4664963b38d979d0664"


@pytest.mark.parametrize("explicit", [False, True])
def test_defaults_leave_the_requests_byte_identical(explicit: bool) -> None:
    settings = {"bid_prompt": "swarms-14", **{k: v[0] for k, v in CHAT_CHOICES.items()}} \
        if explicit else {}
    _, fake = _run(**settings)
    text = _requests_json(fake)
    assert len(fake.calls) == 9 and len(text) == 7422
    assert hashlib.sha256(text.encode()).hexdigest() == BEFORE_ISSUE_43
    # readably: the roster gives the others, each with its description, never one's own
    assert "with Bob (a careful checker), Cy." in _asked(fake, "Ann", 1)[-1]["content"]
    assert "a careful checker" not in _asked(fake, "Bob", 1)[-1]["content"]
    assert "latest bids" not in _asked(fake, "Ann", 3)[-1]["content"]  # show_bids: hidden


def test_every_choice_defaults_to_its_first_and_a_bad_one_is_one_line() -> None:
    assert {k: _pair().to_dict()[k] for k in CHAT_CHOICES} == {
        "history": "flattened", "speaker_names": "shown", "show_bids": "hidden",
        "show_tally": "hidden"}
    for name in CHAT_CHOICES:
        with pytest.raises(ConfigError) as err:
            _pair(**{name: "loud"})
        assert "\n" not in str(err.value)
        assert f"{name} must be one of: {', '.join(CHAT_CHOICES[name])}; got 'loud'" in str(
            err.value)


# --- bid prompt presets --------------------------------------------------------------------

def test_swarms_14_is_todays_prompt_and_stays_the_default() -> None:
    assert BID_PROMPT_PRESETS["swarms-14"] is DEFAULT_BID_PROMPT
    assert list(BID_PROMPT_PRESETS) == ["swarms-14", "swarms-16"]
    assert _pair().to_dict()["bid_prompt"] == DEFAULT_BID_PROMPT


def test_swarms_16_says_what_pr_2141_describes() -> None:
    text = BID_PROMPT_PRESETS["swarms-16"]
    assert validate_bid_prompt(text) == text
    for line in ("1. ", "2. ", "3. ", "4. ", "5. ", "   - 0.0: nothing to add",
                 "   - 0.1-0.3: a minor point", "   - 0.4-0.6: a useful contribution",
                 "   - 0.7-0.8: highly relevant", "   - 0.9-1.0: urgent"):
        assert "\n" + line in text
    assert "five steps" in text
    assert "do not inflate it to keep the conversation active" in text
    assert text.endswith("Call `respond` exactly once, with your score and the message you "
                         "would post.")
    lowered = text.lower()
    assert "silence is the default" not in lowered and "below 0.5" not in lowered
    assert "empty" not in lowered  # no "return an empty message" rule
    assert "{threshold}" in text and "0.5" not in text  # the room's own number, never fixed


def test_a_preset_name_is_its_text_in_the_request_and_the_record() -> None:
    record, fake = _run(bid_prompt="swarms-16")
    assert record.config["bid_prompt"] == SWARMS_16_BID_PROMPT
    prompt = _asked(fake, "Cy", 1)[-1]["content"]
    assert prompt.startswith("You are Cy, taking part in a group conversation with Ann, "
                             "Bob (a careful checker).")
    assert "Call `respond` exactly once" in prompt and "only a score above 0.5" in prompt
    with pytest.raises(ConfigError, match="bid_prompt has unknown placeholder"):
        _pair(bid_prompt="swarms-{version}")


# --- history typed -----------------------------------------------------------------------

def test_typed_history_gives_own_posts_as_assistant_and_the_others_as_user_turns() -> None:
    _, fake = _run(history="typed")
    # turn 3: posted so far are the task, Ann one (turn 1), Bob two (turn 2)
    ann = _asked(fake, "Ann", 3)
    assert [(m["role"], m["content"]) for m in ann[:-1]] == [
        ("system", "You are Ann."), ("user", "What is 6*7?"), ("assistant", "Ann one"),
        ("user", "Bob: Bob two")]
    bob = _asked(fake, "Bob", 3)
    assert [(m["role"], m["content"]) for m in bob[:-1]] == [
        ("user", "What is 6*7?"), ("user", "Ann: Ann one"), ("assistant", "Bob two")]
    last = bob[-1]
    assert last["role"] == "user"
    assert "Conversation so far, oldest first:\n" + TYPED_CONVERSATION + "\n" in last["content"]
    assert "The latest message is from Bob:\nBob two" in last["content"]
    assert "User: What is 6*7?" not in last["content"]  # the history is not flattened again
    first = _asked(fake, "Cy", 1)
    assert [m["role"] for m in first] == ["user", "user"]
    assert first[0]["content"] == "What is 6*7?"


def test_typed_turns_leave_out_what_the_window_left_out() -> None:
    history = [("User", "task"), ("A", "a1"), ("B", "b1"), ("A", "a2")]
    assert typed_turns(history, "A", 2) == [{"role": "user", "content": "task"},
                                            {"role": "assistant", "content": "a2"}]
    assert typed_turns(history, "B", 0)[1:] == [
        {"role": "user", "content": "A: a1"}, {"role": "assistant", "content": "b1"},
        {"role": "user", "content": "A: a2"}]


# --- speaker names anonymised ------------------------------------------------------------

def test_anonymised_names_reach_no_bidder_and_the_record_keeps_them() -> None:
    record, fake = _run(speaker_names="anonymised")
    assert aliases(["Ann", "Bob", "Cy"]) == {"Ann": "Participant 1", "Bob": "Participant 2",
                                            "Cy": "Participant 3"}
    posted = [m.content for m in record.messages[1:]]  # the posts say their author's name
    for call in fake.calls:
        user = " ".join(m["content"] for m in call.messages if m["role"] == "user")
        for text in posted:
            user = user.replace(text, "")
        assert not any(name in user for name in ("Ann", "Bob", "Cy"))
    prompt = _asked(fake, "Cy", 3)[-1]["content"]
    assert prompt.startswith("You are Participant 3, taking part in a group conversation "
                             "with Participant 1, Participant 2 (a careful checker).")
    assert "User: What is 6*7?\nParticipant 1: Ann one\nParticipant 2: Bob two" in prompt
    assert "The latest message is from Participant 2:" in prompt
    assert [m.role for m in record.messages] == ["User", "Ann", "Bob", "Ann"]
    assert {b.agent for b in record.bids} == {"Ann", "Bob", "Cy"}


def test_anonymised_and_typed_together() -> None:
    _, fake = _run(speaker_names="anonymised", history="typed")
    assert [(m["role"], m["content"]) for m in _asked(fake, "Cy", 3)[:-1]] == [
        ("user", "What is 6*7?"), ("user", "Participant 1: Ann one"),
        ("user", "Participant 2: Bob two")]


# --- the others' bids, the running tally ---------------------------------------------------

def test_show_bids_lists_the_others_latest_read_bids() -> None:
    _, fake = _run(show_bids="shown")
    assert _asked(fake, "Ann", 1)[-1]["content"].endswith(
        "do not want to speak.\n\nThe other participants' latest bids: none yet.")
    assert _asked(fake, "Ann", 3)[-1]["content"].endswith(
        "\n\nThe other participants' latest bids: Bob 0.7 (turn 2), Cy 0.3 (turn 2).")


VOTE_TASK = Task(id="q", prompt="What is 6*7?", answer="42", scorer="numeric",
                 answer_from="vote")
TALLY_SCRIPT: dict[str, list[Any]] = {
    "Ann": [(0.9, "I get 42."), (0.1, ""), (0.1, "")],
    "Bob": [(0.2, ""), (0.8, "It is 41."), (0.1, "")],
    "Cy": [(0.1, ""), (0.3, ""), (0.9, "The answer is 42.0")],
}


def test_show_tally_gives_the_running_vote_by_the_tasks_rule_and_nothing_without_one() -> None:
    record, fake = _run(VOTE_TASK, TALLY_SCRIPT, show_tally="shown")
    assert _asked(fake, "Bob", 1)[-1]["content"].endswith(
        "\n\nThe running vote: no answers stated yet.")
    assert _asked(fake, "Cy", 3)[-1]["content"].endswith(
        "\n\nThe running vote (each participant's latest stated answer): 42 (1 vote), "
        "41 (1 vote).")
    assert record.outcome is not None and record.outcome.answer == "42"  # 42 and 42.0: one
    _, plain = _run(show_tally="shown")  # no task with an answer: no tally
    final = Task(id="q", prompt="What is 6*7?", answer="42", scorer="numeric")
    _, scored = _run(final, TALLY_SCRIPT, show_tally="shown")  # answered by the final message
    for fake in (plain, scored):
        assert all("running vote" not in c.messages[-1]["content"] for c in fake.calls)


def test_the_tally_counts_equal_numbers_as_one_answer_most_votes_first() -> None:
    votes = {"A": "41", "B": "42", "C": "42.0", "D": None}
    assert tally_note(votes, numeric=True) == (
        "\n\nThe running vote (each participant's latest stated answer): 42 (2 votes), "
        "41 (1 vote).")
    assert tally_note({"A": "Paris", "B": "paris."}, numeric=False).endswith(
        "answer): Paris (2 votes).")


# --- the bid cache key ---------------------------------------------------------------------

def test_the_cache_key_holds_the_view_and_defaults_keep_todays_key() -> None:
    agent = Agent(agent_name="A", model_name="sim/balanced")
    pair = [agent, Agent(agent_name="B", model_name="sim/balanced")]
    request = BidRequest(agent, [], [("User", "task")], 1)
    defaults = GroupChat(agents=pair)._config
    assert view_key(defaults) is None
    assert request_key(request, view_key(defaults)) == request_key(request)
    keys = set()
    for settings in ({"bid_prompt": "swarms-16"}, {"history": "typed"},
                     {"speaker_names": "anonymised"}, {"show_bids": "shown"},
                     {"show_tally": "shown"}, {"bid_prompt": "swarms-16", "history": "typed"}):
        config = GroupChat(agents=pair, **settings)._config
        view = view_key(config)
        assert view == ({**settings, "bid_prompt": "swarms-16"} if "bid_prompt" in settings
                        else settings)
        keys.add(request_key(request, view))
    assert len(keys) == 6 and request_key(request) not in keys


# --- the vote-only baseline (docs/engine.md §16) -----------------------------------------

def test_vote_asks_every_agent_once_on_the_task_alone_and_the_vote_answers() -> None:
    """Over real HTTP (token counts): one call each on the task alone, in list order; the run
    stops after the round whatever max_loops, and the group's answer is the vote."""
    with FakeOpenAIServer() as fake:
        for model, said in (("a", "It is 41."), ("b", "I get 42."), ("c", "42, surely")):
            fake.script(model, [tool_call(0.0, said)])
        agents = [Agent(agent_name=n.upper(), model_name=f"openai/{n}", api_base=fake.base_url,
                        num_retries=0) for n in "abc"]
        chat = GroupChat(agents=agents, bid_cache=False, max_loops=10, strategy="vote",
                         output_type="basemodel")
        record = chat.run(VOTE_TASK)
        asked = [fake.requests_for(m) for m in "abc"]
    assert [len(a) for a in asked] == [1, 1, 1]
    for requests in asked:
        prompt = requests[0].body["messages"][-1]["content"]
        assert "User: What is 6*7?\n\nThe latest message is from User:" in prompt
        assert "It is your turn to speak" in prompt
    assert [(m.role, m.content) for m in record.messages] == [
        ("User", "What is 6*7?"), ("A", "It is 41."), ("B", "I get 42."), ("C", "42, surely")]
    assert [(t.winner, t.reason) for t in record.turns] == [
        ("A", "all_speak"), ("B", "all_speak"), ("C", "all_speak")]
    assert record.stop_reason == "max_loops"
    assert record.outcome is not None and record.outcome.answer == "42"
    assert record.outcome.votes == {"A": "41", "B": "42", "C": "42"}
    assert record.total_calls == 3 == sum(b.calls for b in record.bids)
    assert record.total_prompt_tokens == sum(b.prompt_tokens or 0 for b in record.bids) > 0
    assert all((b.prompt_tokens or 0) > 0 and (b.completion_tokens or 0) > 0
               for b in record.bids)


def test_vote_stops_at_max_loops_and_an_empty_answer_as_all_speak_does() -> None:
    vote = {"bid_cache": False, "strategy": "vote", "output_type": "basemodel"}
    chat, fake = scripted_chat_with_fake({"A": [(0.0, "7")], "B": [(0.0, "")], "C": [(0.0, "8")]},
                                         **vote)
    record = chat.run("task")
    assert [m.content for m in record.messages] == ["task", "7"]  # B's empty answer: a lull
    assert record.stop_reason == "lull" and len(fake.calls) == 3  # all asked on one snapshot
    chat, short = scripted_chat_with_fake({"A": [(0.0, "7")], "B": [(0.0, "8")], "C": []},
                                          max_loops=3, **vote)
    record = chat.run("task")
    assert [m.content for m in record.messages] == ["task", "7", "8"]
    assert len(short.calls) == 2  # only the agents that can still post are asked
