"""The strategies that ask agents by a schedule (docs/engine.md §16): `round_robin`, `random`,
`all_speak` (Du et al.'s debate: everyone answers a round on one snapshot) and `vote` (all_speak's
first round, no more). The asked agent's score is recorded and ignored."""

from __future__ import annotations

from ..._config import ChatConfig
from ..._records import Bid, Turn
from .._selection import Selection, candidate
from .._strategies import assigned, round_start, scheduled
from ._base import Floor, Named


class Scheduled(Named):
    """One agent a turn, at the position `scheduled` names for the turn."""

    def asked(self, turn: int) -> int:
        return scheduled(self.name, turn, self.agents, self.config.seed)

    async def turn(self, floor: Floor, turn: int) -> str | None:
        bid = await floor.one_bid(turn, self.asked(turn), "speak")
        return floor.settle(turn, [bid], assigned(candidate(bid), self.reason))

    def _replay_one(self, row: Turn, bid: Bid) -> Selection:
        asked = self.asked(row.turn)
        if bid.position != asked:
            raise ValueError(f"{self.name} asks the agent at position {asked} on this turn, "
                             f"not {bid.position}")
        return assigned(candidate(bid), self.reason)


class RoundRobin(Scheduled):
    """The agent at position (turn - 1) mod n."""

    name = "round_robin"
    reason = "round_robin"


class Random(Scheduled):
    """One agent drawn by the chat's seed and the turn."""

    name = "random"
    reason = "random"


class AllSpeak(Scheduled):
    """Every agent once per round, asked together at the round's start, posted in list
    order (each bid carries the turn it is posted on)."""

    name = "all_speak"
    reason = "all_speak"

    def __init__(self, config: ChatConfig, agents: int) -> None:
        super().__init__(config, agents)
        self._round: list[Bid] = []  # the round's bids not yet posted

    async def turn(self, floor: Floor, turn: int) -> str | None:
        if round_start(turn, self.agents) or not self._round:
            # Only the agents that can still post: each all_speak turn posts or ends the
            # run, so a bid past max_loops would be a call paid for and never recorded.
            left = self.config.max_loops - len(floor.record.messages)
            self._round = await floor.collect_bids(turn, "speak", first=left)
        bid = self._round.pop(0)
        bid.turn = turn
        return floor.settle(turn, [bid], assigned(candidate(bid), self.reason))


class Vote(AllSpeak):
    """The vote-only baseline: all_speak's first round, recorded as all_speak's turns (the
    run stops after it: `message_cap`)."""

    name = "vote"
    reason = "all_speak"
