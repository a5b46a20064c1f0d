"""Who is asked, and who speaks, under each speaker-selection strategy (docs/engine.md §16).

Pure functions, so the property tests can run them over many thousands of cases. `bidding`
and `bid_then_speak` choose with `select_speaker` (§6); the others name one agent per turn
(`scheduled`, or a selector model's pick read by `pick_named`), and `assigned` turns that one
agent's bid into the same `Selection` shape, so the turn row, the bid log, the analysis and
the exports read every strategy alike.
"""

from __future__ import annotations

import dataclasses
import random
import re
from collections.abc import Sequence

from .._config import NAMES_SPEAKERS
from .._records import TurnReason
from ._selection import Candidate, Selection, no_winner_reason, select_speaker

# Strategies that ask one scheduled agent per turn (the others ask everyone).
SCHEDULED: frozenset[str] = frozenset({"round_robin", "random", "all_speak", "vote"})
ASKS_ONE: frozenset[str] = NAMES_SPEAKERS
"""Strategies whose turn holds one bid: the asked agent's (the scheduled ones and selector)."""


def scheduled(strategy: str, turn: int, agents: int, seed: int) -> int:
    """The position asked on `turn` (from 1) among `agents`: list order for round_robin and
    all_speak (a round is one turn per agent), a draw seeded by the chat's seed and the turn
    for random (the same seed and turn always draw the same agent)."""
    if agents < 1 or turn < 1:
        raise ValueError("a turn from 1 and at least one agent are needed")
    if strategy in ("round_robin", "all_speak", "vote"):  # vote: all_speak's first round
        return (turn - 1) % agents
    if strategy == "random":
        return random.Random(f"strategy-random:{seed}:{turn}").randrange(agents)
    raise ValueError(f"strategy {strategy!r} does not schedule its speakers")


def message_cap(strategy: str, max_loops: int, agents: int) -> int:
    """Messages a run may post, the task included: max_loops, and for `vote` one round (each
    agent answers once); reaching it stops the run with stop reason max_loops."""
    return min(max_loops, 1 + agents) if strategy == "vote" else max_loops


def round_start(turn: int, agents: int) -> bool:
    """all_speak: True on the first turn of a round (every agent is asked then, on one
    snapshot of the conversation, as in Du et al.'s debate)."""
    return (turn - 1) % agents == 0


def can_speak(bid: Candidate) -> bool:
    """A bid a strategy may post: a message from a completed call."""
    return bool(bid.message) and not bid.failed


def assigned(bid: Candidate, reason: TurnReason) -> Selection:
    """The Selection of a turn whose one asked agent was named by the rule: it speaks when its
    bid can be posted, else the turn has no winner (a lull, or an error when nothing was read,
    exactly as §6 says). No recency penalty applies: the rule, not the score, chose it."""
    ok = can_speak(bid)
    adjusted = (bid.score,)
    if not ok:
        return Selection(None, adjusted, (False,), (False,), None, None, None,
                         no_winner_reason([bid]), False)
    return Selection(0, adjusted, (False,), (True,), bid.score, None, None, reason, False)


def pick_named(reply: str, names: Sequence[str]) -> int | None:
    """The agent a selector's reply names: the name its reply starts with, else the first
    name it mentions as a whole word (longer names first, so 'Ann Lee' beats 'Ann'); None when
    it names nobody on the roster."""
    text = reply.strip()
    by_length = sorted(range(len(names)), key=lambda i: -len(names[i]))
    for i in by_length:
        if text.lower().startswith(names[i].lower()):
            return i
    best: tuple[int, int] | None = None
    for i in by_length:
        found = re.search(rf"(?<!\w){re.escape(names[i])}(?!\w)", text, re.IGNORECASE)
        if found and (best is None or found.start() < best[0]):
            best = (found.start(), i)
    return None if best is None else best[1]


def score_only(bid: Candidate) -> Candidate:
    """bid_then_speak's first call asks only for a score: a read score may take the floor,
    and the winner writes its message in a second call."""
    return Candidate(bid.agent, bid.score, "" if bid.failed else "(score only)",
                     failed=bid.failed, unreadable=bid.unreadable)


def bid_then_speak_selection(scores: Sequence[Candidate], written: Candidate | None,
                             recent: Sequence[str], threshold: float,
                             recency_penalty: float) -> Selection:
    """bid_then_speak's rule: §6 on the score-only bids; when the winner's written message
    cannot be posted (empty, or the call failed) the turn is a lull. `written` is the winner's
    second call as selection sees it (None before it is made)."""
    selection = select_speaker([score_only(c) for c in scores], recent, threshold,
                               recency_penalty)
    if selection.winner is None or written is None or can_speak(written):
        return selection
    eligible = list(selection.eligible)
    eligible[selection.winner] = False
    return dataclasses.replace(selection, winner=None, eligible=tuple(eligible),
                               winning_adjusted=None, margin=None, reason="lull",
                               penalty_changed_winner=False)

