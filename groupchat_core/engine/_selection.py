"""Who speaks: the pure selection rule (docs/engine.md §6), the one place a bid's standing is
worked out.

A bid's `penalized`, `adjusted` and `eligible` are computed here and nowhere else: the turn
loop writes them onto its bids from `select_speaker`'s result (the live bidding floor gets the
same values early from `standing`), and the what-if analysis re-runs `select_speaker` itself, so
the bid table, who speaks and the counterfactuals can never disagree.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Protocol

from .._records import BidOutcome, TurnReason


@dataclass(frozen=True)
class Candidate:
    """What selection needs of one bid.

    `failed`: the call produced no reply. `unreadable`: a reply came back but no score could be
    read from it. Either way the bid was not read, and a turn with no read bid is not a lull.
    """

    agent: str
    score: float
    message: str
    failed: bool = False
    unreadable: bool = False

    @property
    def read(self) -> bool:
        """A bid parsed without error from a completed call (a clamped score still counts)."""
        return not (self.failed or self.unreadable)


class _Bidlike(Protocol):
    @property
    def agent(self) -> str: ...
    @property
    def score(self) -> float: ...
    @property
    def message(self) -> str: ...
    @property
    def outcome(self) -> BidOutcome: ...


HUMAN_FLOOR = "(a person asks for the floor)"
"""What selection sees as the message of a person's bid without a draft: a person writes after
winning (as bid_then_speak's agents do), so a bid of theirs may speak before its text exists."""


def human_message(score: float, message: str, error: str | None) -> str:
    """A person's bid as selection sees its message: a pass (score 0) or a bid that lost the
    floor for want of a post (an error) cannot speak; any other bid can, with its draft or
    HUMAN_FLOOR. Everything else about the bid is read as an agent's is."""
    if score <= 0.0 or error:
        return ""
    return message or HUMAN_FLOOR


def candidate(bid: _Bidlike) -> Candidate:
    """A recorded bid (Bid, BundleBid) as selection sees it: failed / unreadable from its
    outcome, the field the turn loop set; a person's bid's message by `human_message`."""
    message = bid.message
    if getattr(bid, "kind", "agent") == "human":
        message = human_message(bid.score, bid.message, getattr(bid, "error", None))
    return Candidate(bid.agent, bid.score, message, failed=bid.outcome == "failed",
                     unreadable=bid.outcome == "unreadable")


@dataclass(frozen=True)
class Standing:
    """One bid's place in the rule: recency penalty applied, adjusted score, may it win."""

    penalized: bool
    adjusted: float
    eligible: bool


@dataclass(frozen=True)
class Selection:
    """The outcome of one turn and the reasons behind it, so the UI can explain a turn.

    `runner_up`: the best other bid with a message from a completed call, eligible or not
    (ties go to the earlier agent). `raw_winner`: who would have won on raw scores, without the
    recency penalty (None when no bid's raw score is above the threshold). Both are indexes
    into the bids, so the analysis names them instead of re-ranking a frame."""

    winner: int | None
    adjusted: tuple[float, ...]
    penalized: tuple[bool, ...]
    eligible: tuple[bool, ...]
    winning_adjusted: float | None
    runner_up_adjusted: float | None
    margin: float | None
    reason: TurnReason
    penalty_changed_winner: bool
    runner_up: int | None = None
    raw_winner: int | None = None


def adjusted_score(score: float, penalized: bool, recency_penalty: float) -> float:
    """docs/engine.md §6: exactly score - recency_penalty for a recent speaker."""
    return score - recency_penalty if penalized else score


def _speaks(bid: Candidate) -> bool:
    """A bid with a message whose call did not fail: it could be posted."""
    return bool(bid.message) and not bid.failed


def standing(bid: Candidate, recent_speakers: Collection[str], threshold: float,
             recency_penalty: float) -> Standing:
    """One bid's standing; depends on no other bid, so it is final as soon as the bid arrives."""
    penalized = bid.agent in recent_speakers
    adjusted = adjusted_score(bid.score, penalized, recency_penalty)
    return Standing(penalized, adjusted, _speaks(bid) and adjusted > threshold)


def _best(values: Sequence[float], allowed: Sequence[bool]) -> int | None:
    best: int | None = None
    for i, (value, ok) in enumerate(zip(values, allowed, strict=True)):
        if ok and (best is None or value > values[best]):
            best = i  # strictly greater: ties stay with the earlier agent
    return best


def no_winner_reason(bids: Sequence[Candidate]) -> TurnReason:
    """Why a turn without a winner ended: `lull` only if at least one bid was read.

    `all_failed`: every call failed. `no_readable_bid`: no bid could be read (every reply
    unreadable, or some unreadable and the rest failed). Both stop the run with `error`.
    """
    if any(b.read for b in bids) or not bids:
        return "lull"
    return "all_failed" if all(b.failed for b in bids) else "no_readable_bid"


NO_READ_BID_REASONS = frozenset({"all_failed", "no_readable_bid"})
"""Turn reasons of a turn where no bid was read: the run stops with `error`, not `lull`."""


def select_speaker(
    bids: Sequence[Candidate],
    recent_speakers: Sequence[str],
    threshold: float,
    recency_penalty: float,
) -> Selection:
    """Pick the single highest adjusted bid above threshold (docs/engine.md §6), with reasons."""
    recent = set(recent_speakers)
    return decide(bids, [standing(b, recent, threshold, recency_penalty) for b in bids],
                  threshold)


def decide(bids: Sequence[Candidate], standings: Sequence[Standing],
           threshold: float) -> Selection:
    """The rest of the rule once each bid's standing is known: the winner, the runner-up, the
    raw-score winner and the reason. The analysis calls it with a recorded turn's standings."""
    penalized = tuple(s.penalized for s in standings)
    adjusted = tuple(s.adjusted for s in standings)
    eligible = tuple(s.eligible for s in standings)
    spoken = tuple(_speaks(b) for b in bids)
    winner = _best(adjusted, eligible)
    runner_up = _best(adjusted, [i != winner and s for i, s in enumerate(spoken)])
    runner_up_adjusted = adjusted[runner_up] if runner_up is not None else None
    raw_winner = _best([b.score for b in bids], [s and b.score > threshold
                                                  for s, b in zip(spoken, bids, strict=True)])
    if winner is None:
        return Selection(None, adjusted, penalized, eligible, None, runner_up_adjusted, None,
                         no_winner_reason(bids), False, runner_up, raw_winner)
    changed = raw_winner is not None and raw_winner != winner
    margin = None if runner_up_adjusted is None else adjusted[winner] - runner_up_adjusted
    reason: TurnReason = "highest_bid"
    if any(eligible[i] and adjusted[i] == adjusted[winner] for i in range(winner + 1, len(bids))):
        reason = "tie_by_order"
    elif changed:
        reason = "penalty_changed_winner"
    return Selection(winner, adjusted, penalized, eligible, adjusted[winner], runner_up_adjusted,
                     margin, reason, changed, runner_up, raw_winner)
