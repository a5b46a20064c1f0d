"""`bid_then_speak` (LangChain's bidding pattern, docs/engine.md §16): a score-only bid from
everyone, then the winner alone writes. Both calls of the winner are one bid row."""

from __future__ import annotations

from collections.abc import Sequence

from ..._records import Bid, Turn
from .._outcome import FAILED
from .._selection import Selection, candidate, select_speaker
from .._strategies import bid_then_speak_selection, score_only
from ._base import Floor, Strategy, add_call


class BidThenSpeak(Strategy):
    """§6 on the scores; the winner's written message is posted (empty or failed: a lull)."""

    name = "bid_then_speak"

    async def turn(self, floor: Floor, turn: int) -> str | None:
        """Both calls of the winner are one bid row (calls and tokens summed)."""
        bids = await floor.collect_bids(turn, "score")
        recent, threshold, penalty = list(floor.recent), self.config.threshold, \
            self.config.recency_penalty
        cands = [candidate(b) for b in bids]
        selection = bid_then_speak_selection(cands, None, recent, threshold, penalty)
        if selection.winner is not None:
            won = bids[selection.winner]
            written = await floor.one_bid(turn, selection.winner, "write")
            add_call(won, written)
            won.message, won.error = written.message, won.error or written.error
            if written.outcome == FAILED:
                won.message = ""
            cands[selection.winner] = candidate(won)
            selection = bid_then_speak_selection(cands, cands[selection.winner], recent,
                                                 threshold, penalty)
        return floor.settle(turn, bids, selection)

    def _replay(self, row: Turn, bids: Sequence[Bid], recent: Sequence[str]) -> Selection:
        cands = [candidate(b) for b in bids]
        threshold, penalty = self.config.threshold, self.config.recency_penalty
        won = select_speaker([score_only(c) for c in cands], recent, threshold,
                             penalty).winner
        return bid_then_speak_selection(cands, None if won is None else cands[won], recent,
                                        threshold, penalty)
