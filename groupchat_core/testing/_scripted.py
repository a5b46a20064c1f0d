"""Fakes shipped with the package, for tests and demos: scripted bids and a local HTTP server.

    script = ScriptedBids({"Alice": [(0.9, "hi")], "Bob": [(0.1, "")]})
    alice = Agent(agent_name="Alice", model_name=script.model_name)
    chat = GroupChat(agents=[alice, ...], providers=script.providers)

A ScriptedBids is a Provider (`bid(request)`) passed to the chat as an object. For chats built
where no object can be passed (the dashboard's job runner, sweeps), it also routes its own
`model_name` process-wide until `close()` (shared=True, the default, kept for that documented
use); `ScriptedBids(script, shared=False)` only answers the chats it is given to.

Each agent's entries are consumed one per turn. An entry is (score, message), a dict of raw
respond arguments, an Exception (a failed call), or a ScriptedBid for latency. A call beyond the
script raises UnexpectedModelCall, which the engine does not swallow: the test fails loudly;
`assert_complete()` catches the opposite mistake, a script the run did not use up.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..providers._providers import BidRequest, ModelReply, Provider, reply_from_arguments
from ..providers._routing import share_provider, unshare_provider


class UnexpectedModelCall(BaseException):  # noqa: N818 - BaseException so the engine re-raises
    """A scripted model was called more often than scripted, or for an unknown agent."""


@dataclass(frozen=True)
class ScriptedBid:
    score: Any = 0.0
    message: Any = ""
    latency: float = 0.0
    raw: Any = None  # when set, sent as the respond arguments verbatim
    error: BaseException | None = None


_ids = itertools.count(1)


class ScriptedBids:
    """In-process fake provider: scripted bids per agent per turn, with a record of every call."""

    needs_prompt = True

    def __init__(self, script: Mapping[str, Sequence[Any]], *, shared: bool = True) -> None:
        self._prefix = f"scripted-{next(_ids)}"
        self._script = {name: [_entry(e) for e in entries] for name, entries in script.items()}
        self._used: dict[str, int] = dict.fromkeys(self._script, 0)
        self._lock = threading.Lock()
        self.calls: list[BidRequest] = []
        if shared:
            share_provider(self._prefix, self)

    @property
    def prefix(self) -> str:
        return self._prefix

    @property
    def model_name(self) -> str:
        return f"{self._prefix}/model"

    @property
    def providers(self) -> dict[str, Provider]:
        """What to pass as GroupChat(providers=...) for agents on `model_name`."""
        return {self._prefix: self}

    def close(self) -> None:
        """Stop routing `model_name` process-wide (shared=True): the shared table otherwise
        keeps this fake, its script and every call it answered, for the life of the process."""
        unshare_provider(self._prefix, self)

    def remaining(self) -> dict[str, int]:
        """Scripted bids not yet used, per agent."""
        with self._lock:
            return {name: len(self._script[name]) - used for name, used in self._used.items()}

    def assert_complete(self) -> None:
        """Fail unless every scripted bid was used: a script longer than the run it drives
        means the run stopped earlier than the test believes."""
        unused = {name: left for name, left in self.remaining().items() if left}
        if unused:
            listing = ", ".join(f"{name!r}: {left} unused" for name, left in unused.items())
            raise AssertionError(f"scripted bids left over ({listing})")

    async def bid(self, request: BidRequest) -> ModelReply:
        name = request.agent.agent_name
        with self._lock:
            self.calls.append(request)
            entries = self._script.get(name)
            if entries is None or self._used[name] >= len(entries):
                raise UnexpectedModelCall(
                    f"unexpected bid call for agent {name!r} on turn {request.turn}: the script "
                    f"has {len(entries or [])} entries for it")
            entry = entries[self._used[name]]
            self._used[name] += 1
        if entry.latency:
            await asyncio.sleep(entry.latency)
        if entry.error is not None:
            raise entry.error
        arguments = entry.raw if entry.raw is not None else {
            "score": entry.score, "message": entry.message}
        return reply_from_arguments(arguments, "scripted")


def _entry(value: Any) -> ScriptedBid:
    if isinstance(value, ScriptedBid):
        return value
    if isinstance(value, BaseException):
        return ScriptedBid(error=value)
    if isinstance(value, Mapping):
        return ScriptedBid(raw=dict(value))
    if isinstance(value, tuple) and len(value) == 2:
        return ScriptedBid(score=value[0], message=value[1])
    raise TypeError(f"cannot script a bid from {value!r}; use (score, message), a dict, or an "
                    "Exception")
