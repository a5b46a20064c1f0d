"""A bid's outcome from what its call returned (docs/engine.md §9 `Bid.outcome`).

The one place it is decided: the turn loop writes it onto the bid (a call that raised is
"failed" where it is caught), and the bid cache stores only what this calls "read". Everything
downstream (selection, metrics, charts, CLI, exports) reads the field, never the error text.
"""

from __future__ import annotations

from .._records import Bid, BidOutcome
from ..providers._providers import ModelReply

FAILED: BidOutcome = "failed"
"""The outcome of a call that produced no reply (an exception, a timeout, a rejection)."""


def reply_outcome(reply: ModelReply) -> BidOutcome:
    """A reply's outcome: unreadable when no score could be read, else read (cached when the
    bid cache answered)."""
    if not reply.bid.readable:
        return "unreadable"
    return "cached" if reply.cached else "read"


def apply_reply(bid: Bid, reply: ModelReply) -> None:
    """What a call returned, onto its bid: score, message, tokens, cost, and the outcome."""
    bid.score, bid.message, bid.error = reply.bid.score, reply.bid.message, reply.bid.error
    bid.path, bid.calls = reply.path, reply.calls
    bid.prompt_tokens, bid.completion_tokens = reply.prompt_tokens, reply.completion_tokens
    bid.cost_usd, bid.cached, bid.deployment = reply.cost_usd, reply.cached, reply.deployment
    bid.cached_calls = int(reply.cached)
    bid.outcome = reply_outcome(reply)  # a failed call's is set where it is caught
