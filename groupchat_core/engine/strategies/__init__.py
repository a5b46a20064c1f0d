"""Speaker-selection strategies, one class each (docs/engine.md §16): each plays its turn on
the turn loop's `Floor` and replays a recorded turn (a bundle's import check). The pure rules
they apply are in `engine/_strategies.py` and `engine/_selection.py`."""

from __future__ import annotations

from ..._config import ChatConfig
from ...providers._routing import Providers
from .._people import People
from ._base import Floor, Strategy, recent_speakers, rules_note, turn_row
from ._bid_then_speak import BidThenSpeak
from ._bidding import Bidding
from ._scheduled import AllSpeak, Random, RoundRobin, Vote
from ._selector import Selector
from ._with_people import PeopleBidding

__all__ = ["AllSpeak", "BidThenSpeak", "Bidding", "Floor", "PeopleBidding", "Random",
           "RoundRobin", "Selector", "Strategy", "Vote", "recent_speakers", "rules_note",
           "strategy_for", "turn_row"]

_CLASSES: dict[str, type[Strategy]] = {
    cls.name: cls for cls in (Bidding, RoundRobin, Random, BidThenSpeak, AllSpeak, Vote)}


def strategy_for(config: ChatConfig, agents: int, providers: Providers | None = None,
                 people: People | None = None) -> Strategy:
    """The strategy of a chat with `agents` agents (a run's, or a bundle check's): the one
    `config.strategy` names; with people in the room (bidding only), the people's."""
    if people is not None:
        return PeopleBidding(config, agents, people)
    if config.strategy == "selector":
        return Selector(config, agents, providers)
    return _CLASSES[config.strategy](config, agents)
