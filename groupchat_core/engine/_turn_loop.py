"""One run of a chat: post the task, collect concurrent bids each turn, select, post, stop.

Observers get typed events as things happen; a stop reason is data on the record.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._agent import Agent
from .._bidding import (
    PromptRoom,
    build_bid_prompt,
    describe_participant,
    format_decimal,
)
from .._bounds import CHAT_CHOICES
from .._config import ChatConfig
from .._records import (
    Bid,
    BidDelta,
    BidReceived,
    Event,
    LullReached,
    Message,
    MessagePosted,
    Outcome,
    RunFinished,
    RunRecord,
    RunStarted,
    SpeakerSelected,
    TurnCompleted,
    TurnStarted,
    cost_totals,
    utc_now,
)
from .._secrets import (
    agent_secrets,
    held_secrets,
    hold_secrets,
    mask_secrets,
    mask_values,
    scrub,
)
from ..providers._delta_gate import gated_sink
from ..providers._limit_waits import pausing
from ..providers._model_calls import LITELLM, default_bid_deadline, provider_for
from ..providers._providers import BidRequest, DeltaSink, ModelReply, Provider
from ..providers._replies import ModelCallFailed, cap_text
from ..providers._retries import is_context_window_error, stated_context_window
from ..providers._routing import Providers
from ..providers._tokens import count_tokens
from ._outcome import FAILED, apply_reply
from ._participant import Human
from ._people import People
from ._room import Room
from ._selection import (
    NO_READ_BID_REASONS,
    Selection,
    candidate,
    standing,
)
from ._strategies import message_cap
from ._transcript import (
    TYPED_CONVERSATION,
    PromptBudget,
    Transcript,
    aliases,
    omitted_note,
    typed_turns,
)
from .strategies import recent_speakers, strategy_for, turn_row

if TYPE_CHECKING:
    from ._bidcache import BidCache

logger = logging.getLogger("groupchat_core")
Emit = Callable[[Event], None]
Scorer = Callable[[RunRecord], Awaitable[Outcome]]
EmitDelta = Callable[[BidDelta], None]
Post = Callable[[Message], None]

# What each kind of call adds to the bid prompt (docs/engine.md §16). "bid" adds nothing.
MODE_NOTES = {
    "bid": "",
    "score": "\n\nThis round is score only: call respond with your score and an EMPTY message. "
             "If your bid wins you will be asked to write your message.",
    "write": "\n\nYour bid won the floor: call respond with your score and the message you "
             "post now.",
    "speak": "\n\nIt is your turn to speak: call respond with your score and the message you "
             "post now.",
}


class TurnLoop:
    """The state of one run; `execute` drives it turn by turn to a stop reason."""

    def __init__(
        self, agents: Sequence[Agent], config: ChatConfig, task: str, emit: Emit, post: Post,
        bid_cache: BidCache | None = None, emit_delta: EmitDelta | None = None,
        providers: Providers | None = None,
        score: Scorer | None = None, answer_key: Mapping[str, Any] | None = None,
        roster: Sequence[Agent | Human] | None = None, room: Room | None = None,
        human_selector: Human | None = None, run_id: str | None = None,
    ) -> None:
        self.agents = list(agents)
        # Everyone who bids, in list order (a bid's position): the agents and the people.
        self.roster: list[Agent | Human] = list(roster if roster is not None else self.agents)
        self._position = {_name(p): i for i, p in enumerate(self.roster)}
        self._others = [(_name(p), p.description) for p in self.roster]
        # The people's room (self.room is the bid prompt's) follows the run from its events.
        self.live_room = room
        self.score = score  # a scored task's scorer, run as the run ends (docs/outcomes.md)
        self.answer_key = answer_key  # what sims need to state an answer (never sent out)
        # Each agent's provider, picked once (_routing.py): the chat's own for its prefix, a
        # sim, or litellm. Non-litellm models have their tokens estimated (None below).
        self.providers = {a.agent_name: provider_for(a.model_name, providers)
                          for a in self.agents}
        self._tokens_of = {a.agent_name: a.model_name if self.providers[a.agent_name] is LITELLM
                           else None for a in self.agents}
        self.emit_delta = emit_delta  # None: bids are not streamed (nobody watches them form)
        if emit_delta is not None and room is not None:
            self.emit_delta = _both(room.observe, emit_delta)
        self.bid_cache = bid_cache
        self.config = config
        self._observers = emit  # the chat's observers (GroupChat's fan-out)
        self._post_hook = post
        self.record = RunRecord(
            run_id=run_id or uuid.uuid4().hex, config=config.model_dump(), task=task
        )
        self.transcript = Transcript()  # as bidders read it (names anonymised or not)
        self.history: list[tuple[str, str]] = []
        # What bidders see (docs/engine.md "What agents see"): aliases for the names when
        # anonymised ({} when shown), and show_tally's running vote line, refreshed each turn.
        self._seen = (aliases([_name(p) for p in self.roster])
                      if config.speaker_names == "anonymised" else {})
        self._tally = ""
        self.view_key = view_key(config)
        self.recent = recent_speakers(config.recency_window)
        self.room = PromptRoom(
            config.bid_prompt, config.threshold, config.recency_penalty, config.recency_window
        )
        self._overhead = {a.agent_name: self._prompt_overhead(a) for a in self.agents}
        people = None if room is None else People(
            self.roster, room, human_selector, config, lambda: held_secrets(self.agents))
        # Who is asked and who speaks (docs/engine.md §16): one object per run.
        self.strategy = strategy_for(config, len(self.agents), providers, people)

    def _prompt_overhead(self, agent: Agent) -> PromptBudget:
        """What the agent's bid prompts may use (system prompt, tools and reply room counted);
        kept for the run, so a context-window rejection shrinks every later bid's history."""
        return PromptBudget.for_agent(agent, estimate=self._tokens_of[agent.agent_name] is None)

    # --- posting and the loop -------------------------------------------------------------

    def emit(self, event: Event) -> None:
        """An event to the people's room (when there is one), then to the chat's observers."""
        if self.live_room is not None:
            self.live_room.observe(event)
        self._observers(event)

    def _post(self, message: Message, turn: int) -> None:
        self.record.messages.append(message)
        self.transcript.append(self._seen.get(message.role, message.role), message.content)
        self.history.append((message.role, message.content))
        event = MessagePosted(run_id=self.record.run_id, turn=turn, message=message)
        if self.live_room is not None:
            self.live_room.observe(event)  # the room first, as with every event
        self._post_hook(message)
        self._observers(event)

    async def execute(self) -> RunRecord:
        record = self.record
        hold_secrets(s for a in self.agents for s in agent_secrets(a))  # masked in every chat
        # What the caller typed is masked here, once, like every reply: no observer, store,
        # export or prompt gets a key from the task or a setting's text
        secrets = held_secrets(self.agents)
        record.task = mask_secrets(record.task, secrets)
        record.config = mask_values(record.config, secrets)
        self.emit(RunStarted(run_id=record.run_id, task=record.task, config=record.config,
                             agents=[_name(p) for p in self.roster],
                             started_at=record.started_at))
        self.strategy.begin(record.run_id)
        self._post(Message(role="User", content=record.task), turn=0)
        try:
            record.stop_reason = await self._turns()
        except asyncio.CancelledError:
            record.stop_reason = "cancelled"
            self._finish()
            raise
        finally:
            self.strategy.end()
        await self._score()
        self._finish()
        return record

    async def _score(self) -> None:
        """The outcome of a scored task, before RunFinished (so the store records it). A
        scorer that fails is logged; the run keeps its record without an outcome."""
        if self.score is None:
            return
        try:
            self.record.outcome = await self.score(self.record)
        except Exception:
            logger.exception("run %s: the outcome could not be scored", self.record.run_id)

    async def _turns(self) -> Any:
        turn = 0
        limit = message_cap(self.config.strategy, self.config.max_loops, len(self.agents))
        while len(self.record.messages) < limit:
            turn += 1
            self.emit(TurnStarted(run_id=self.record.run_id, turn=turn))
            if self.config.show_tally == "shown":
                await self._refresh_tally()
            outcome = await self.strategy.turn(self, turn)
            if outcome is not None:
                return outcome
        return "max_loops"

    def _finish(self) -> None:
        record = self.record
        record.ended_at = utc_now()
        record.total_calls = sum(b.calls for b in record.bids)
        record.total_prompt_tokens = sum(b.prompt_tokens or 0 for b in record.bids)
        record.total_completion_tokens = sum(b.completion_tokens or 0 for b in record.bids)
        record.total_cost_usd, record.unpriced_bids = cost_totals(record.bids)
        # Handed over, not copied: the engine never changes the record again, and a deep copy
        # of a 200-turn x 16-agent record cost a quarter of the run's CPU. The store's recorder
        # takes its rows from the events as it receives them (store/_recorder.py), so what an
        # observer does to the record afterwards never reaches the store.
        self.emit(RunFinished(run_id=record.run_id, record=record))

    # --- what every strategy's turn shares (strategies/_base.Floor) ----------------------

    async def one_bid(self, turn: int, pos: int, mode: str) -> Bid:
        """The agent at `pos` alone bids."""
        return await self._bid(turn, pos, self.agents[pos], tuple(self.history),
                               set(self.recent), held_secrets(self.agents), mode)

    def settle(self, turn: int, bids: list[Bid], selection: Selection,
               rule_winner: str | None = None, human_pick: str | None = None,
               selector_reason: str | None = None) -> str | None:
        """Record the turn's selection, post the winner; return a stop reason or None.

        Each bid's penalized / adjusted / eligible is written from the Selection: selection is
        the only place those values are computed (see _selection.py, strategies/).
        """
        for i, bid in enumerate(bids):
            bid.penalized = selection.penalized[i]
            bid.adjusted = selection.adjusted[i]
            bid.eligible = selection.eligible[i]
        if selection.winner is not None:
            bids[selection.winner].winner = True
        row = turn_row(turn, bids, selection)
        row.rule_winner, row.human_pick = rule_winner, human_pick
        row.selector_reason = selector_reason
        self.record.bids.extend(bids)
        self.record.turns.append(row)
        run_id = self.record.run_id
        if selection.winner is None:
            unread = selection.reason in NO_READ_BID_REASONS
            if unread:  # not a lull: a broken set-up must not look like a quiet room
                self.record.error = scrub(no_readable_bid_error(turn, bids), self.agents)
            else:
                self.emit(LullReached(run_id=run_id, turn=row))
            self.emit(TurnCompleted(run_id=run_id, turn=row, bids=bids, message=None))
            return "error" if unread else "lull"
        won = bids[selection.winner]
        self.emit(SpeakerSelected(run_id=run_id, turn=row))
        message = Message(role=won.agent, content=won.message, score=won.score)
        self._post(message, turn)
        self.recent.append(won.agent)
        self.emit(TurnCompleted(run_id=run_id, turn=row, bids=bids, message=message))
        return None

    async def collect_bids(self, turn: int, mode: str = "bid",
                            first: int | None = None) -> list[Bid]:
        """Every agent (or the `first` ones) bids concurrently on the same snapshot; a turn
        lasts as its slowest bid."""
        history = tuple(self.history)
        recent = set(self.recent)
        secrets = held_secrets(self.agents)  # read once a turn: it scans the environment
        return list(await asyncio.gather(
            *(self._bid(turn, self._position[agent.agent_name], agent, history, recent, secrets,
                        mode) for agent in self.agents[:first])
        ))

    def _request(self, turn: int, agent: Agent, history: tuple[tuple[str, str], ...],
                 with_prompt: bool, deadline: float | None,
                 sink: DeltaSink | None, mode: str = "bid") -> BidRequest:
        messages: list[dict[str, Any]] = []
        if with_prompt:
            messages = self._messages_for(turn, agent, history, mode)
        return BidRequest(agent, messages, history, turn, self.config.seed, deadline, sink,
                          self.answer_key if not with_prompt else None)

    def _messages_for(self, turn: int, agent: Agent, history: tuple[tuple[str, str], ...],
                      mode: str = "bid") -> list[dict[str, Any]]:
        """The bid request's messages, the history trimmed to what the agent's context takes.

        The prompt is filled once without the conversation (with the longest note it could
        carry) to count everything but the history; what is left of the budget goes to the
        newest whole messages (see _transcript.py)."""
        seen = self._seen
        me = seen.get(agent.agent_name, agent.agent_name)
        last_speaker, last_message = history[-1]
        fill = functools.partial(
            build_bid_prompt, self.room, agent_name=me,
            others=[describe_participant(seen.get(name, name), text)
                    for name, text in self._others if name != agent.agent_name],
            last_speaker=seen.get(last_speaker, last_speaker), last_message=last_message,
            task=self.record.task, turn=turn)
        budget: PromptBudget = self._overhead[agent.agent_name]
        tokens_of = self._tokens_of[agent.agent_name]
        rest = count_tokens(tokens_of, fill(
            conversation="", omitted_note=omitted_note(len(self.transcript.lines))))
        history_block = self.transcript.window(tokens_of, budget.history_budget(rest))
        budget.sent = history_block.tokens
        typed = self.config.history == "typed"
        prompt = fill(conversation=TYPED_CONVERSATION if typed else history_block.text,
                      omitted_note=omitted_note(history_block.omitted)) \
            + self._view_notes(agent.agent_name) + MODE_NOTES[mode]
        system = [{"role": "system", "content": agent.system_prompt}] if agent.system_prompt else []
        if typed:  # the conversation as turns, the bid instruction last (swarms 16.0.3)
            turns = typed_turns([(seen.get(r, r), c) for r, c in history], me,
                                history_block.omitted)
            return [*system, *turns, {"role": "user", "content": prompt}]
        return [*system, {"role": "user", "content": prompt}]

    def _view_notes(self, agent_name: str) -> str:
        """show_bids and show_tally's paragraphs of the bid prompt ("" when hidden)."""
        notes = ""
        if self.config.show_bids == "shown":
            notes += bids_note(self.record.bids, agent_name, self._seen)
        return notes + self._tally

    async def _refresh_tally(self) -> None:
        """show_tally: the vote over what has been posted, by the task's own rule (the run's
        scorer, docs/outcomes.md); only a task answered by `vote` has one."""
        key = self.answer_key or {}
        if self.score is None or key.get("scorer") == "judge":
            return
        try:
            outcome = await self.score(self.record)
        except Exception:
            logger.exception("run %s: the running vote could not be counted",
                             self.record.run_id)
            return
        if outcome.answer_from == "vote":
            self._tally = tally_note(outcome.votes, key.get("scorer") == "numeric")

    async def _call_model(self, provider: Provider, request: BidRequest,
                          history: tuple[tuple[str, str], ...], mode: str = "bid") -> ModelReply:
        """A bid that needs a prompt. When the server says the context window is exceeded,
        shrinks this agent's budget for the rest of the run, rebuilds the prompt and tries
        once more (the same deadline and sink: it is the same bid)."""
        agent, turn, messages = request.agent, request.turn, request.messages
        try:
            return await provider.bid(request)
        except ModelCallFailed as exc:
            if not is_context_window_error(exc.cause):
                raise
            first = exc
        budget: PromptBudget = self._overhead[agent.agent_name]
        budget.shrink(stated_context_window(str(first.cause)))
        smaller = self._messages_for(turn, agent, history, mode)
        if smaller == messages:  # the window named did not trim it (tokenizers differ)
            budget.shrink(None)
            smaller = self._messages_for(turn, agent, history, mode)
        if smaller == messages:
            raise first
        try:
            reply = await provider.bid(dataclasses.replace(request, messages=smaller))
        except ModelCallFailed as again:
            again.calls += first.calls
            raise
        reply.calls += first.calls
        return reply

    def bid_limit(self, agent: Agent) -> float:
        """Seconds one bid may take: bid_timeout, or when unset, every request it may make."""
        limit = self.config.bid_timeout
        return default_bid_deadline(agent) if limit is None else limit

    async def _bid(self, turn: int, pos: int, agent: Agent,
                   history: tuple[tuple[str, str], ...], recent: set[str],
                   secrets: list[str], mode: str = "bid") -> Bid:
        start = time.perf_counter()
        bid = Bid(turn=turn, agent=agent.agent_name, position=pos)
        limit = self.bid_limit(agent)
        deadline = asyncio.timeout(limit)
        sink = None if self.emit_delta is None else self._delta_sink(turn, agent.agent_name)
        if sink is not None and self.providers[agent.agent_name] is not LITELLM:
            sink = gated_sink(sink, secrets)  # masked and paced, as litellm's stream reader is
        try:
            async with deadline:
                ends = asyncio.get_running_loop().time() + limit
                with pausing(deadline):  # time queued for a limit is not the bid's
                    reply = await self._call(turn, agent, history, ends, sink, mode)
            apply_reply(bid, reply)
            if mode == "score":  # a score-only bid posts nothing, whatever the model wrote
                bid.message = ""
        except ModelCallFailed as exc:
            bid.error, bid.calls, bid.outcome = str(exc), exc.calls, FAILED
        except Exception as exc:  # one agent's failure never fails the turn (docs/engine.md §3)
            bid.calls, bid.outcome = 1, FAILED
            bid.error = f"{type(exc).__name__}: {exc}"
            if isinstance(exc, TimeoutError) and deadline.expired():
                bid.error = f"TimeoutError: no bid within {limit:g} s" + (
                    "" if self.config.bid_timeout is not None else
                    " (bid_timeout unset: Agent.timeout x every request the bid may make)")
        if bid.error is not None:
            bid.error = mask_secrets(bid.error, secrets)
        if bid.message:  # model output may echo a key: masked before any observer or store
            bid.message = mask_secrets(bid.message, secrets)
        if bid.error is not None:
            bid.error = cap_text(bid.error)
        bid.latency_ms = (time.perf_counter() - start) * 1000.0
        # The live floor shows a bid before the turn is settled; a bid's standing depends on no
        # other bid, so the selection rule's own `standing` gives the values _settle will write.
        early = standing(candidate(bid), recent, self.config.threshold,
                         self.config.recency_penalty)
        live = bid.model_copy(update={"penalized": early.penalized, "adjusted": early.adjusted,
                                      "eligible": early.eligible})
        self.emit(BidReceived(run_id=self.record.run_id, bid=live))
        return bid

    def _delta_sink(self, turn: int, agent: str) -> DeltaSink:
        """What a streamed bid calls as it forms: a BidDelta to the observers asking for them."""
        emit, run_id = self.emit_delta, self.record.run_id
        assert emit is not None

        def sink(score: float | None, message: str) -> None:
            emit(BidDelta(run_id=run_id, turn=turn, agent=agent, score=score, message=message))

        return sink

    async def _call(self, turn: int, agent: Agent, history: tuple[tuple[str, str], ...],
                    deadline: float, sink: DeltaSink | None, mode: str = "bid") -> ModelReply:
        provider = self.providers[agent.agent_name]
        request = self._request(turn, agent, history, provider.needs_prompt, deadline, sink,
                                mode)
        call: Callable[[], Awaitable[ModelReply]]
        if provider.needs_prompt:
            call = functools.partial(self._call_model, provider, request, history, mode)
        else:
            call = functools.partial(provider.bid, request)
        local = None if provider is LITELLM else provider
        if self.bid_cache is not None and self.bid_cache.applies(agent, local):
            return await self.bid_cache.fetch(request, call, self.view_key)
        return await call()


def view_key(config: ChatConfig) -> dict[str, str] | None:
    """The settings of what a bidder sees that differ from their defaults, for the bid cache's
    key (None when all are defaults: today's keys stay as they were). A prompted model's
    request already shows them; this keeps an in-process model's apart too."""
    from .._bidding import bid_prompt_preset
    from .._config import chat_default

    view = {name: getattr(config, name) for name in CHAT_CHOICES
            if getattr(config, name) != chat_default(name)}
    if config.bid_prompt != chat_default("bid_prompt"):
        view["bid_prompt"] = bid_prompt_preset(config.bid_prompt) or config.bid_prompt
    return view or None


def bids_note(bids: Sequence[Bid], agent_name: str, seen: Mapping[str, str]) -> str:
    """show_bids: each other agent's latest read bid (score and turn), in the order they
    last bid; "none yet" before any."""
    latest: dict[str, Bid] = {}
    for bid in reversed(bids):
        if bid.agent != agent_name and bid.read and bid.agent not in latest:
            latest[bid.agent] = bid
    shown = ", ".join(f"{seen.get(b.agent, b.agent)} {format_decimal(b.score)} (turn {b.turn})"
                      for b in sorted(latest.values(), key=lambda b: (b.turn, b.position)))
    return f"\n\nThe other participants' latest bids: {shown or 'none yet'}."


def tally_note(votes: Mapping[str, str | None], numeric: bool) -> str:
    """show_tally: how many participants' latest stated answers give each answer (equal
    numbers are one answer), most votes first, ties in the order first stated."""
    from ..outcomes import last_number, normalise

    counts: dict[str, int] = {}
    label: dict[str, str] = {}
    for answer in votes.values():
        if answer is None:
            continue
        number = last_number(answer) if numeric else None
        key = repr(number) if number is not None else normalise(answer)
        counts[key] = counts.get(key, 0) + 1
        label.setdefault(key, answer)
    if not counts:
        return "\n\nThe running vote: no answers stated yet."
    order = sorted(counts, key=lambda k: -counts[k])  # stable: ties keep first-stated order
    shown = ", ".join(f"{label[k]} ({counts[k]} vote{'s' if counts[k] != 1 else ''})"
                      for k in order)
    return f"\n\nThe running vote (each participant's latest stated answer): {shown}."


def _name(participant: Agent | Human) -> str:
    return participant.name if isinstance(participant, Human) else participant.agent_name


MAX_REASON_CHARS = 300  # per agent in RunRecord.error: enough to name the cause, never a body


def no_readable_bid_error(turn: int, bids: Sequence[Bid]) -> str:
    """RunRecord.error for a turn where no bid was read: each agent with its reason, bounded."""
    reasons = []
    for bid in bids:
        reason = bid.error or "no reason recorded"
        if len(reason) > MAX_REASON_CHARS:
            reason = reason[:MAX_REASON_CHARS] + " …"
        reasons.append(f"{bid.agent}: {reason}")
    return f"no agent produced a readable bid on turn {turn}: " + "; ".join(reasons)


def _both(first: Callable[[BidDelta], None],
          then: Callable[[BidDelta], None]) -> Callable[[BidDelta], None]:
    def both(delta: BidDelta) -> None:
        first(delta)
        then(delta)

    return both
