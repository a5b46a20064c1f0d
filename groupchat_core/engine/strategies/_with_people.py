"""`bidding` with people in the room (docs/engine.md §17): the agents bid while the people's
bid window is open, every bid goes through §6's rule, then a selector person's pick and a
winning person's post (`People`, the room's engine side)."""

from __future__ import annotations

from collections.abc import Sequence

from ..._config import ChatConfig
from ..._records import Bid, BidReceived
from .._people import People
from .._selection import Selection, candidate, standing
from ._base import Floor
from ._bidding import Bidding


class PeopleBidding(Bidding):
    """The bidding rule over the agents' and the people's bids, through the chat's Room; a
    recorded turn replays as bidding's (a person's pick included)."""

    def __init__(self, config: ChatConfig, agents: int, people: People) -> None:
        super().__init__(config, agents)
        self.people = people

    def begin(self, run_id: str) -> None:
        self.people.start(run_id)

    def end(self) -> None:
        self.people.finish()

    async def turn(self, floor: Floor, turn: int) -> str | None:
        people, config = self.people, self.config
        history = tuple(floor.history)
        agent_bids, person_bids = await people.collect(turn, floor.collect_bids(turn), history)
        bids = sorted([*agent_bids, *person_bids], key=lambda b: b.position)
        recent = set(floor.recent)
        for bid in person_bids:  # the live floor shows them as the agents' bids are shown
            early = standing(candidate(bid), recent, config.threshold, config.recency_penalty)
            floor.emit(BidReceived(run_id=floor.record.run_id, bid=bid.model_copy(update={
                "penalized": early.penalized, "adjusted": early.adjusted,
                "eligible": early.eligible})))

        def select(bids: Sequence[Bid]) -> Selection:
            return self.select(bids, floor.recent)

        resolved = await people.resolve(turn, bids, select(bids), select, history)
        return floor.settle(turn, bids, resolved.selection, resolved.rule_winner,
                            resolved.human_pick)
