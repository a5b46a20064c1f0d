"""What a bid provider receives and returns, and the registry of in-process providers.

Kept apart from the litellm seam (_model_calls.py) so in-process providers (the sim provider,
scripted fakes) depend on these types without depending on the module that routes to them:
`_model_calls` and `_sim_provider` both import this module, and it imports neither.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ._bidding import ParsedBid, parse_arguments
from ._records import BidPath

if TYPE_CHECKING:
    from ._agent import Agent


@dataclass(frozen=True)
class BidRequest:
    """Everything a provider may need for one bid; in-process models use the structured parts."""

    agent: Agent
    messages: list[dict[str, Any]]
    history: Sequence[tuple[str, str]]
    turn: int
    seed: int = 0
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


class InProcessModel(Protocol):
    """A provider run inside the engine (sims, scripted fakes): no litellm, no network."""

    needs_prompt: bool

    def __call__(self, request: BidRequest) -> Awaitable[ModelReply]: ...


def reply_from_arguments(arguments: Any, path: BidPath) -> ModelReply:
    """For in-process models: parse respond-style arguments with the same rules as the wire."""
    return ModelReply(parse_arguments(arguments), path, calls=1)


_IN_PROCESS: dict[str, InProcessModel] = {}


def register_in_process(prefix: str, model: InProcessModel) -> None:
    """Route every model named '<prefix>/...' to `model` instead of litellm."""
    _IN_PROCESS[prefix] = model


def unregister_in_process(prefix: str, model: InProcessModel) -> None:
    """Stop routing '<prefix>/...' to `model` (if it is still the one registered)."""
    if _IN_PROCESS.get(prefix) is model:
        del _IN_PROCESS[prefix]


def registered_in_process(prefix: str) -> InProcessModel | None:
    """The provider registered for a model-name prefix, if any (routing is _model_calls')."""
    return _IN_PROCESS.get(prefix)
