"""Transcript.window: the task always kept, then the newest whole messages that fit; the prompt
says how many were left out. Private imports (`engine._transcript`): units with no public name."""

from __future__ import annotations

import pytest

from groupchat_core.engine import _transcript as transcript_module
from groupchat_core.engine._transcript import Transcript
from groupchat_core.providers._tokens import approximate_tokens
from tests.helpers.chats import scripted_chat_with_fake

LINES = [("User", "abcd"), ("A", "1234567"), ("B", "2234567"), ("A", "3234567"),
         ("B", "4234567")]  # every "role: content" line is 10 characters


@pytest.fixture
def transcript(monkeypatch: pytest.MonkeyPatch) -> Transcript:
    """Five 10-token lines (one token a character; a newline counts one)."""
    monkeypatch.setattr(transcript_module, "count_tokens", lambda model, text: len(text))
    made = Transcript()
    for role, content in LINES:
        made.append(role, content)
    return made


@pytest.mark.parametrize(("budget", "expected"), [
    (54, ("\n".join(f"{r}: {c}" for r, c in LINES), 0, 54)),  # everything fits
    (53, ("User: abcd\nB: 2234567\nA: 3234567\nB: 4234567", 1, 43)),  # oldest whole ones go
    (31, ("User: abcd\nB: 4234567", 3, 21)),
    (5, ("User: abcd", 4, 10)),  # the task stays even when nothing fits, not even itself
    (-100, ("User: abcd", 4, 10)),
])
def test_the_newest_whole_messages_that_fit_and_the_task_are_kept(
        transcript: Transcript, budget: int, expected: tuple[str, int, int]) -> None:
    assert transcript.window("m", budget) == expected


def test_kept_messages_are_the_newest_run_without_gaps(transcript: Transcript) -> None:
    transcript.append("A", "x" * 40)  # a long newest-but-one message
    transcript.append("B", "short")
    # task 10 + "B: short" 8 + a newline fit; the 43-token message does not
    assert transcript.window("m", 35) == ("User: abcd\nB: short", 5, 19)


def test_lines_added_after_a_window_are_counted(transcript: Transcript) -> None:
    transcript.window("m", 53)
    transcript.append("A", "5234567")
    assert transcript.window("m", 53) == (
        "User: abcd\nA: 3234567\nB: 4234567\nA: 5234567", 2, 43)


def message(n: int) -> str:
    return f"message number {n:02d}..."  # 20 characters


def test_a_long_chat_leaves_out_old_messages_and_the_prompt_says_how_many(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Turns 1-3 fit; from turn 4 the oldest messages go (the budget: test_context_budget.py)."""
    task = "Discuss the plan now"
    template = "{omitted_note}\n{conversation}"
    chat, script = scripted_chat_with_fake({
        "A": [(0.9, message(1)), (0.1, ""), (0.9, message(3)), (0.1, ""), (0.1, "")],
        "B": [(0.1, ""), (0.9, message(2)), (0.1, ""), (0.9, message(4)), (0.1, "")],
    }, bid_prompt=template)
    # room for the task line and the two newest message lines, with their newlines
    room = approximate_tokens(f"User: {task}") + 2 * approximate_tokens(f"A: {message(1)}") + 2
    monkeypatch.setattr(transcript_module.PromptBudget, "history_budget",
                        lambda self, prompt_tokens: room)

    chat.run(task)
    script.assert_complete()

    prompts = {(c.turn, c.agent.agent_name): c.messages[-1]["content"] for c in script.calls}
    assert prompts[3, "A"] == "\n".join(
        ["", f"User: {task}", f"A: {message(1)}", f"B: {message(2)}"])
    assert prompts[4, "A"] == "\n".join(
        [" (1 earlier message left out)", f"User: {task}", f"B: {message(2)}", f"A: {message(3)}"])
    assert prompts[5, "B"] == "\n".join(
        [" (2 earlier messages left out)", f"User: {task}", f"A: {message(3)}",
         f"B: {message(4)}"])
    assert [m.content for m in chat.last_run.messages[1:]] == [message(n) for n in range(1, 5)]
