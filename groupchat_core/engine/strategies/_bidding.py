"""`bidding`, the seed's rule (docs/engine.md §6): every agent bids, the highest adjusted bid
above the threshold speaks. A turn a person picked (human as selector) replays as
`People.resolve` made it."""

from __future__ import annotations

from collections.abc import Sequence

from ..._records import Bid, Turn
from .._people import picked_selection, top_bids
from .._selection import Selection, candidate
from ._base import Floor, Strategy, picked, rules_note


class Bidding(Strategy):
    """Everyone bids on one snapshot; §6's `select_speaker` picks."""

    name = "bidding"

    async def turn(self, floor: Floor, turn: int) -> str | None:
        bids = await floor.collect_bids(turn)
        return floor.settle(turn, bids, self.select(bids, floor.recent))

    def replay(self, row: Turn, bids: Sequence[Bid], recent: Sequence[str]) -> Selection:
        if picked(row):
            return self._replay_pick(row, bids, recent)
        return self.select(bids, recent)

    def _replay_pick(self, row: Turn, bids: Sequence[Bid], recent: Sequence[str]) -> Selection:
        """A turn under a person as selector, re-made as the engine made it
        (engine/_people.People.resolve): the rule on the bids as bid (a person's no-post error
        came after), the pick among the top bids, then a picked person who did not post gives
        the floor to the next."""
        working = [b.model_copy() for b in bids]
        for bid in working:
            if bid.kind == "human":
                bid.error = None
        selection = self.select(working, recent)
        rule = None if selection.winner is None else working[selection.winner].agent
        if row.rule_winner != rule:
            raise ValueError(f"rule_winner is recorded as {row.rule_winner!r}, but the bidding "
                             f"rule on its bids picks {rule!r} "
                             f"({rules_note(self.config, recent)})")
        if row.human_pick is not None:
            k = self.config.selector_top_k
            top = top_bids(working, selection, k)
            index = next((i for i in top if working[i].agent == row.human_pick), None)
            if index is None:
                raise ValueError(
                    f"human_pick {row.human_pick!r} is not one of the top {k} bids the person "
                    f"chose among ({', '.join(repr(working[i].agent) for i in top) or 'none'})")
            if row.human_pick != rule:
                selection = picked_selection(selection, index, [candidate(b) for b in working])
        while selection.winner is not None and working[selection.winner].kind == "human":
            won = selection.winner
            if not bids[won].error:
                break
            working[won].error = bids[won].error
            selection = self.select(working, recent)
        return selection
