"""The one provider interface: what a provider receives for one bid and what it returns.

Every bid goes to a Provider: the litellm provider (_model_calls.py) for real models, the sim
provider (_sim_provider.py) for `sim/...`, and test fakes (groupchat_core.testing). The engine
picks one per agent (_routing.py) and hands it a BidRequest that carries everything the bid
needs, the deadline and the stream sink included: no context variable, no global. Kept apart
from the providers themselves so each depends on these types only; this module imports none.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from .._bidding import ParsedBid, parse_arguments
from .._records import BidPath

if TYPE_CHECKING:
    from .._agent import Agent

# Called with (score or None, message so far) whenever a streamed bid's partial reply changes.
DeltaSink = Callable[[float | None, str], None]


@dataclass(frozen=True)
class BidRequest:
    """Everything a provider may need for one bid.

    `messages` is the bid prompt (empty for a provider that does not need one); `history`,
    `turn` and `seed` are the structured parts in-process providers use. `deadline` is the
    loop time (asyncio loop.time()) by which the whole bid must be done, retries included
    (None: no deadline); `sink`, when set, wants the partial bid as it forms (the chat streams
    bids and an observer watches them); a provider that cannot stream ignores it."""

    agent: Agent
    messages: list[dict[str, Any]]
    history: Sequence[tuple[str, str]]
    turn: int
    seed: int = 0
    deadline: float | None = None
    sink: DeltaSink | None = None
    # A scored task's answer key, for offline sims only (they state an answer with a declared
    # accuracy, docs/engine.md §15); never part of a real model's request.
    answer_key: Mapping[str, Any] | None = None


@dataclass
class ModelReply:
    """One provider answer: the parsed bid, how it was obtained, and what it cost."""

    bid: ParsedBid
    path: BidPath
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost_usd: float | None = None
    calls: int = 1
    cached: bool = False  # served by the bid cache (see _bidcache.py): no call was made
    deployment: str | None = None  # the deployment that answered (_deployments.py), if routed


@runtime_checkable
class Provider(Protocol):
    """Answers bids. `needs_prompt`: whether the engine must build the bid prompt (`messages`)
    for it; the sims bid from the structured history and skip that work."""

    needs_prompt: bool

    async def bid(self, request: BidRequest) -> ModelReply: ...


def reply_from_arguments(arguments: Any, path: BidPath) -> ModelReply:
    """For in-process providers: parse respond-style arguments with the same rules as the wire."""
    return ModelReply(parse_arguments(arguments), path, calls=1)
