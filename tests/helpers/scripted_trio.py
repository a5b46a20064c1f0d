"""The engine's specification run, written once: Alice speaks, Bob speaks, then a lull.

Turn 1: Alice 0.9 beats Bob 0.7 (Cara silent). Turn 2: Alice 0.9 - 0.3 = 0.6 loses to Bob
0.7, with Cara 0.65 the runner-up. Turn 3: Bob is penalised (0.4 - 0.3), nobody clears 0.5,
so the run stops on a lull after using every scripted bid.
"""

from __future__ import annotations

from typing import Any

from groupchat_core import GroupChat, RunRecord
from groupchat_core.testing import ScriptedBids
from tests.helpers.chats import scripted_chat_with_fake

TRIO = ("Alice", "Bob", "Cara")
TASK = "Debate the plan."


def trio_script() -> dict[str, list[tuple[float, str]]]:
    """A fresh copy of the script (callers may extend or change it)."""
    return {
        "Alice": [(0.9, "A1"), (0.9, "A2"), (0.2, "")],
        "Bob": [(0.7, "B1"), (0.7, "B2"), (0.4, "B3")],
        "Cara": [(0.1, ""), (0.65, "C1"), (0.3, "C2")],
    }


def trio_chat(**kwargs: Any) -> tuple[GroupChat, ScriptedBids]:
    """The trio as a GroupChat (max_loops=10 unless given) and its script."""
    return scripted_chat_with_fake(trio_script(), **{"max_loops": 10, **kwargs})


def trio_record(task: str = TASK, **kwargs: Any) -> RunRecord:
    """Run the trio to its lull and return the record; every scripted bid must be used."""
    chat, fake = trio_chat(output_type="basemodel", **kwargs)
    record = chat.run(task)
    fake.assert_complete()
    assert isinstance(record, RunRecord)
    return record
