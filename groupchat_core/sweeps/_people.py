"""Why a sweep refuses people (issue 22): a sweep runs its cells unattended, so a person
seated in one would never be in the room to bid; each seat is refused in one line that says
so, before the spec's generic checks would call it an unknown key."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._errors import ConfigError

WHY = ("a sweep runs its cells unattended, so nobody would be in the room to bid; run a chat "
       "with people with GroupChat(...) or `groupchat-lab run --human NAME`")


def _is_person(agent: Any) -> bool:
    kind = agent.get("kind") if isinstance(agent, Mapping) else None
    return isinstance(kind, str) and kind.strip().lower() == "human"


def _seat(base: Mapping[str, Any], where: str) -> str | None:
    """Where a person sits in a chat mapping (e.g. 'base.people'), or None."""
    for key, what in (("people", "a sweep cannot seat people"),
                      ("human_selector", "a sweep cannot have a person pick the speaker")):
        if key in base:
            return f"{where}{key}: {what}"
    agents = base.get("agents")
    for i, agent in enumerate(agents if isinstance(agents, list) else []):
        if _is_person(agent):
            name = repr(agent.get("agent_name") or agent.get("name"))[:80]
            return (f"{where}agents[{i}]: {name} is a person (kind: human); a sweep cannot "
                    "seat people")
    return None


def refuse_people(data: Mapping[str, Any], source: str) -> None:
    """A one-line ConfigError when the sweep spec (or its base chat) seats a person."""
    base = data.get("base")
    seat = _seat(data, "") or (_seat(base, "base.") if isinstance(base, Mapping) else None)
    if seat is not None:
        raise ConfigError(f"invalid {source}: {seat}: {WHY}")
