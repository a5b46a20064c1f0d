"""Scripted chats, built one way: one agent per key of the script, in its order, on one
ScriptedBids fake (groupchat_core.testing), so a test states only the script and the settings."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from groupchat_core import Agent, GroupChat
from groupchat_core.testing import ScriptedBids


def scripted_chat_with_fake(script: Mapping[str, Sequence[Any]],
                            **settings: Any) -> tuple[GroupChat, ScriptedBids]:
    """The chat and its fake (to read what each agent was asked)."""
    fake = ScriptedBids(dict(script), shared=False)  # passed in: no process-wide table
    agents = [Agent(agent_name=name, model_name=fake.model_name) for name in script]
    return GroupChat(agents=agents, providers=fake.providers, **settings), fake


def scripted_chat(script: Mapping[str, Sequence[Any]], **settings: Any) -> GroupChat:
    """A GroupChat whose agents say and bid what `script` gives them, turn by turn."""
    return scripted_chat_with_fake(script, **settings)[0]
