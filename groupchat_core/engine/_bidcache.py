"""The bid cache: identical bid requests are answered once, from memory or the run store.

Why: a sweep runs many chats that differ in a parameter or two. With deterministic agents
(the `sim/` models, or an LLM at temperature 0) two cells that differ only in threshold or
recency post the same messages until their selections first differ, so they send the same bid
requests over that common prefix; answering those from a cache makes the prefix cost one set of
calls instead of one per cell.

What counts as "identical" is the whole request that reaches the model, hashed (sha256 of
canonical JSON): for litellm models the model, api_base, messages (the bid prompt included),
tools, tool-choice mode, temperature, max_tokens, extra litellm arguments and the chat's seed;
for `sim/` models, which are run in-process without a prompt, exactly what a simulated bid
depends on (model, agent name, system prompt, history, turn, seed, temperature). The bid prompt
states the threshold and penalty (docs/engine.md §4), so LLM requests of cells that differ in those
numbers are *not* identical and never share; the sims ignore the prompt, so they do.

Policy: on by default where answers are deterministic (sim models, temperature 0), opt-in for
everything else (`cache_all=True`); in-process test fakes (`ScriptedBids`) are never cached,
since their calls are the point. Failed calls and replies that did not parse are never cached.
A hit is recorded on the bid (`cached=True`, `calls=0`, cost 0, no tokens: nothing was sent);
concurrent identical requests on one event loop share one call ("single flight").
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._agent import Agent
from .._bidding import ParsedBid
from .._errors import ConfigError, StoreError
from ..providers._deployments import routed_bases
from ..providers._providers import BidRequest, ModelReply, Provider
from ..providers._sim import is_sim_model
from ._outcome import reply_outcome

if TYPE_CHECKING:
    from ..store import RunStore

logger = logging.getLogger("groupchat_core")
KEY_VERSION = 2  # bump when what a key covers changes: old entries then simply stop matching
DEFAULT_MEMORY_ENTRIES = 50_000


def request_key(request: BidRequest, view: dict[str, str] | None = None) -> str:
    """sha256 of the canonical JSON of everything the answer to this request depends on.

    `view`: the chat's non-default settings of what a bidder sees (bid_prompt, history,
    speaker_names, show_bids, show_tally; the turn loop's `view_key`), so cells that differ in
    them never share an answer, even for an in-process model that reads no prompt. None (all
    defaults) leaves the key as it always was."""
    agent = request.agent
    if request.messages:  # a real prompt: the request as litellm would send it
        parts: dict[str, Any] = {
            "model": agent.model_name, "api_base": agent.api_base,
            "messages": request.messages, "tools": agent.tools_list_dictionary,
            "tool_choice": agent.tool_choice_mode, "temperature": agent.temperature,
            "max_tokens": agent.max_tokens, "extra": agent.litellm_kwargs,
        }
    else:  # an in-process sim: no prompt, only the context a simulated bid reads
        parts = {
            "model": agent.model_name, "agent": agent.agent_name,
            "system": agent.system_prompt, "history": [list(m) for m in request.history],
            "turn": request.turn, "temperature": agent.temperature,
            "extra": agent.litellm_kwargs, "answer_key": request.answer_key,
        }
    routed = routed_bases(agent.model_name)  # the chat's own deployments answer, not api_base
    if routed is not None:
        parts["routed"] = routed
    if view:
        parts["view"] = view
    parts.update(v=KEY_VERSION, seed=request.seed)
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _entry(reply: ModelReply) -> dict[str, Any]:
    return {"score": reply.bid.score, "message": reply.bid.message, "path": reply.path,
            "prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens,
            "cost_usd": reply.cost_usd}


def _hit(entry: dict[str, Any]) -> ModelReply:
    """A reply served from the cache: no call, no tokens, no cost (0 where a price was known)."""
    cost = None if entry.get("cost_usd") is None else 0.0
    return ModelReply(ParsedBid(float(entry["score"]), str(entry["message"])), entry["path"],
                      None, None, cost, calls=0, cached=True)


def _storable(reply: ModelReply) -> bool:
    """A reply read from a model call, without a note (a cut message is not worth keeping)."""
    return reply_outcome(reply) == "read" and reply.bid.error is None


@dataclass
class CacheStats:
    """Counters since the cache was made (all views of one cache share them)."""

    hits: int = 0  # answered from memory or the store
    shared: int = 0  # waited for an identical call in flight and took its answer
    misses: int = 0  # calls made
    stored: int = 0

    @property
    def hit_rate(self) -> float | None:
        total = self.hits + self.shared + self.misses
        return (self.hits + self.shared) / total if total else None


@dataclass
class _Flight:
    done: asyncio.Event = field(default_factory=asyncio.Event)
    reply: ModelReply | None = None


class _Backing:
    """The storage behind one or more BidCache views: an LRU in memory, optionally a store."""

    def __init__(self, store: RunStore | None, max_entries: int) -> None:
        self.store = store
        self.max_entries = max_entries
        self.lock = threading.Lock()
        self.memory: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self.inflight: dict[tuple[str, int], _Flight] = {}
        self.pending: dict[str, tuple[str, dict[str, Any]]] = {}
        self.scheduled = False
        self.stats = CacheStats()
        self.lookup: Callable[[str], dict[str, Any] | None] | None = None  # set on first use

    def remember(self, key: str, entry: dict[str, Any]) -> None:
        with self.lock:
            self.memory[key] = entry
            self.memory.move_to_end(key)
            while len(self.memory) > self.max_entries:
                self.memory.popitem(last=False)

    def recall(self, key: str) -> dict[str, Any] | None:
        with self.lock:
            entry = self.memory.get(key)
            if entry is not None:
                self.memory.move_to_end(key)
            return entry


class BidCache:
    """Answers repeated bid requests; pass one to GroupChat(bid_cache=...) or a sweep.

    `store`: also keep answers in the run store's `bid_cache` table (shared across processes
    and sessions), written in batches on the store's writer thread. `cache_all`: cache every
    agent's bids, not only deterministic ones (then repeats of a random model are replayed).
    """

    def __init__(self, store: RunStore | None = None, *, cache_all: bool = False,
                 max_entries: int = DEFAULT_MEMORY_ENTRIES) -> None:
        self._backing = _Backing(store, max_entries)
        self.cache_all = cache_all

    def view(self, *, cache_all: bool) -> BidCache:
        """The same storage under another policy."""
        other = object.__new__(BidCache)
        other._backing, other.cache_all = self._backing, cache_all
        return other

    @property
    def store(self) -> RunStore | None:
        return self._backing.store

    @property
    def stats(self) -> CacheStats:
        return self._backing.stats

    def applies(self, agent: Agent, local: Provider | None) -> bool:
        """Whether this agent's bids may be cached under this policy."""
        if local is not None:
            return is_sim_model(agent.model_name)
        return self.cache_all or agent.temperature == 0

    async def fetch(self, request: BidRequest,
                    call: Callable[[], Awaitable[ModelReply]],
                    view: dict[str, str] | None = None) -> ModelReply:
        """The cached answer to `request`, else the result of `call()` (stored if valid);
        `view` as request_key's.

        The memory check and joining a flight happen without an await in between, and an
        answer is remembered before its flight ends, so an identical request never slips
        through to a second call.
        """
        key = request_key(request, view)
        entry = self._backing.recall(key)
        if entry is not None:
            self._count("hits")
            return _hit(entry)
        loop_id = id(asyncio.get_running_loop())
        with self._backing.lock:
            flight = self._backing.inflight.get((key, loop_id))
            leader = flight is None
            if leader:
                flight = self._backing.inflight[(key, loop_id)] = _Flight()
        assert flight is not None
        if not leader:
            await flight.done.wait()
            if flight.reply is not None:
                self._count("shared")
                return _hit(_entry(flight.reply))
            return await call()  # the first call failed: errors are never shared
        return await self._lead(key, request, call, flight, loop_id)

    async def _lead(self, key: str, request: BidRequest,
                    call: Callable[[], Awaitable[ModelReply]], flight: _Flight,
                    loop_id: int) -> ModelReply:
        try:
            entry = None
            if self.store is not None:
                entry = await self._load(key, in_process=not request.messages)
            if entry is not None:
                self._count("hits")
                flight.reply = _hit(entry)
                return flight.reply
            self._count("misses")
            reply = await call()
            if _storable(reply):
                self.put(key, request.agent.model_name, reply)
                flight.reply = reply
            return reply
        finally:
            with self._backing.lock:
                self._backing.inflight.pop((key, loop_id), None)
            flight.done.set()

    def _count(self, name: str) -> None:
        with self._backing.lock:
            setattr(self.stats, name, getattr(self.stats, name) + 1)

    def put(self, key: str, model_name: str, reply: ModelReply) -> None:
        """Remember a valid reply (and queue it for the store)."""
        entry = _entry(reply)
        backing = self._backing
        backing.remember(key, entry)
        self._count("stored")
        if backing.store is None:
            return
        with backing.lock:
            backing.pending[key] = (model_name, entry)
            schedule, backing.scheduled = not backing.scheduled, True
        if schedule:
            backing.store.queue_write(self._persist)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every answer put so far is in the store."""
        if self.store is None:
            return True
        return self.store.flush(timeout)

    def clear(self, *, persistent: bool = False) -> None:
        """Forget the answers in memory (and in the store's table, when asked)."""
        with self._backing.lock:
            self._backing.memory.clear()
        if persistent and self.store is not None:
            self.flush()
            self.store.cache_clear()

    async def _load(self, key: str, *, in_process: bool) -> dict[str, Any] | None:
        """A store lookup: inline for in-process sims (CPU-bound anyway, a primary-key read),
        on a thread for network models so a slow database never stalls the event loop."""
        store = self.store
        assert store is not None
        backing = self._backing
        if backing.lookup is None:
            backing.lookup = store.cache_reader()
        try:
            if in_process:
                entry = backing.lookup(key)
            else:
                entry = await asyncio.to_thread(backing.lookup, key)
        except StoreError as exc:
            logger.warning("bid cache: %s; asking the model instead", exc)
            return None
        if entry is not None:
            self._backing.remember(key, entry)
        return entry

    def _persist(self) -> None:
        """On the store's writer thread: write the queued answers in one transaction."""
        backing = self._backing
        with backing.lock:
            batch, backing.pending, backing.scheduled = backing.pending, {}, False
        if batch and backing.store is not None:
            try:
                backing.store.cache_put(batch)
            except StoreError as exc:  # an optimisation only: losing entries costs calls
                logger.warning("bid cache: could not store %d answers: %s", len(batch), exc)


_default_lock = threading.Lock()
_default: BidCache | None = None


def default_cache() -> BidCache:
    """The process's memory-only cache, used by chats that do not say otherwise."""
    global _default
    with _default_lock:
        if _default is None:
            _default = BidCache()
        return _default


def resolve_cache(value: BidCache | bool | None) -> BidCache | None:
    """GroupChat(bid_cache=...): None auto (deterministic agents), True all, False off."""
    if value is None:
        return default_cache()
    if value is True:
        return default_cache().view(cache_all=True)
    if value is False:
        return None
    if isinstance(value, BidCache):
        return value
    raise ConfigError(f"bid_cache must be None, True, False or a BidCache, got {value!r}")


def cache_stats(store: RunStore, run_ids: Sequence[str] | None = None, *,
                sweep_id: str | None = None) -> Any:
    """Per run: bids, cache hits, model calls and hit rate, as a DataFrame (from the store)."""
    return store.cache_stats(run_ids, sweep_id=sweep_id)
