"""The people's side of a turn (issue 22, docs/engine.md "Human participants").

`People.collect` runs the agents' bids and the bid window side by side; `People.resolve` takes
the rule's Selection (always `select_speaker`, the agents' rule) through human-as-selector's pick
and a winning person's post window. Nothing here decides a winner by itself: a person's bid is a
`Bid(kind="human")`, and who speaks is what `select_speaker` says of the turn's bids, or the
selector person's pick among the top bids.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from .._agent import Agent
from .._config import ChatConfig
from .._records import Bid
from .._secrets import mask_secrets
from ..providers._replies import cap_text
from ._humans import HUMAN_PATH, HumanAction, ParticipantKind, Phase
from ._participant import Human, HumanPrompt
from ._room import Room
from ._room_state import LiveBid
from ._selection import Candidate, Selection, candidate

logger = logging.getLogger("groupchat_core")
Select = Callable[[Sequence[Bid]], Selection]


@dataclass(frozen=True)
class Resolved:
    """The turn's final Selection, and for the turn row what the rule picked / who picked."""

    selection: Selection
    rule_winner: str | None = None
    human_pick: str | None = None  # the name the person picked


def no_post_note(window: float) -> str:
    """Bid.error of a person who won and did not post: the floor went to the next bid."""
    return f"no post within {window:g} s: the floor went to the next bid"


class People:
    """The people of one run: their bids, posts and picks, through the chat's Room."""

    def __init__(self, roster: Sequence[Agent | Human], room: Room,
                 selector: Human | None, config: ChatConfig,
                 secrets: Callable[[], list[str]]) -> None:
        self.room, self.selector, self.config = room, selector, config
        self.humans = {p.name: (pos, p) for pos, p in enumerate(roster)
                       if isinstance(p, Human)}
        self._roster: list[tuple[str, ParticipantKind]] = [
            (p.name, "human") if isinstance(p, Human) else (p.agent_name, "agent")
            for p in roster]
        self._secrets = secrets

    def start(self, run_id: str) -> None:
        """The run starts (on the engine's loop): the room gets its roster and picker."""
        picker = None if self.selector is None else self.selector.name
        self.room._start(run_id, self._roster, picker)

    def finish(self) -> None:
        """The run's turns are over: the room takes no more actions."""
        self.room._finish()

    async def collect(self, turn: int, agents: Awaitable[list[Bid]],
                      history: tuple[tuple[str, str], ...]) -> tuple[list[Bid], list[Bid]]:
        """The agents' bids and the people's, concurrently: the window closes at
        `human_window` or once every person has bid and every agent's bid is in. Returns
        (agent bids, people's bids); a person without input passes (score 0)."""
        room, window = self.room, self.config.human_window
        opened = time.perf_counter()
        room._open_bidding(turn, window)
        agent_task = asyncio.ensure_future(agents)
        agent_task.add_done_callback(lambda _: room._kick())
        players = self._players("bid", turn, window, history)
        try:
            await room._wait(lambda: room._everyone_bid(agent_task.done()), window)
        except BaseException:  # cancelled (chat.cancel()): the agents' bids go with the turn
            agent_task.cancel()
            raise
        finally:
            for task in players:
                task.cancel()
        final = room._close_bidding()
        waited_ms = (time.perf_counter() - opened) * 1000.0
        people = [self._bid(turn, name, final[name], waited_ms) for name in self.humans]
        return await agent_task, people

    def _bid(self, turn: int, name: str, live: LiveBid, waited_ms: float) -> Bid:
        pos, _ = self.humans[name]
        message = mask_secrets(cap_text(live.message.replace("\x00", "\ufffd")),
                               self._secrets()) if live.message else ""
        return Bid(turn=turn, agent=name, position=pos, score=live.score or 0.0,
                   message=message, path=HUMAN_PATH, calls=0, kind="human", outcome="read",
                   latency_ms=waited_ms)

    def _players(self, phase: Phase, turn: int, window: float,
                 history: tuple[tuple[str, str], ...], *, only: str | None = None,
                 draft: str = "", candidates: tuple[LiveBid, ...] = (),
                 rule_pick: str | None = None) -> list[asyncio.Task[None]]:
        """A task per headless player of this phase, each cancelled at the window's end."""
        who: list[Human] = []
        if phase == "pick":
            who = [self.selector] if self.selector is not None else []
        else:
            who = [h for _, h in self.humans.values() if only is None or h.name == only]
        deadline = self.room.clock() + window
        return [asyncio.create_task(self._play(h, window, HumanPrompt(
            phase, turn, h.name, self.room, deadline, draft, candidates, rule_pick, history)))
            for h in who if h.callback is not None]

    async def _play(self, human: Human, window: float, prompt: HumanPrompt) -> None:
        """One headless player's answer, submitted as a person's action would be; no answer,
        an exception or the window's end all count as no input."""
        assert human.callback is not None
        action: HumanAction | None = None
        try:
            async with asyncio.timeout(window):
                action = await human.callback(prompt)
        except Exception:  # a player's failure is its silence, never the room's
            logger.info("person %s gave no %s on turn %d", human.name, prompt.phase,
                        prompt.turn, exc_info=True)
            return
        if action is not None:
            self.room.submit(human.name, action)

    async def resolve(self, turn: int, bids: list[Bid], selection: Selection, select: Select,
                      history: tuple[tuple[str, str], ...]) -> Resolved:
        """The rule's selection, then the selector person's pick (if any), then a winning
        person's post window; a person who does not post loses the floor to the next bid
        (the rule run again with their bid unable to speak)."""
        rule_winner = None if selection.winner is None else bids[selection.winner].agent
        human_pick: str | None = None
        if self.selector is not None:
            selection, human_pick = await self._pick(turn, bids, selection, history)
        while selection.winner is not None and bids[selection.winner].kind == "human":
            won = bids[selection.winner]
            text = await self._post(turn, won, history)
            if text:
                won.message = text
                self.room._won(won.agent)
                break
            won.error = no_post_note(self.config.human_post_window)
            selection = select(bids)  # its candidate can no longer speak: the next bid wins
        return Resolved(selection, rule_winner if self.selector is not None else None,
                        human_pick)

    async def _post(self, turn: int, won: Bid, history: tuple[tuple[str, str], ...]) -> str:
        """The winner's second window: their text, their confirmed draft, or "" (no post)."""
        room, window = self.room, self.config.human_post_window
        room._open_post(won.agent, window)
        players = self._players("post", turn, window, history, only=won.agent,
                                draft=won.message)
        try:
            await room._wait(room._posted_yet, window)
        finally:
            for task in players:
                task.cancel()
        text = room._close_post()
        if text is None:
            return ""
        text = text.replace("\x00", "\ufffd").strip() or won.message
        return mask_secrets(cap_text(text), self._secrets()) if text else ""

    async def _pick(self, turn: int, bids: list[Bid], selection: Selection,
                    history: tuple[tuple[str, str], ...]) -> tuple[Selection, str | None]:
        """Human as selector: the top-k bids that could be posted, the person picks one (or
        accepts the rule's pick); no pick in the window and the rule's pick stands. Returns
        the selection and the name picked (None: no pick)."""
        assert self.selector is not None
        top = top_bids(bids, selection, self.config.selector_top_k)
        if not top:
            return selection, None
        rule_pick = None if selection.winner is None else bids[selection.winner].agent
        live = tuple(LiveBid(bids[i].agent, bids[i].kind, bids[i].score, bids[i].message,
                             selection.adjusted[i], selection.eligible[i]) for i in top)
        room, window = self.room, self.config.human_window
        room._open_pick(live, rule_pick, window)
        players = self._players("pick", turn, window, history, candidates=live,
                                rule_pick=rule_pick)
        try:
            await room._wait(room._picked_yet, window)
        finally:
            for task in players:
                task.cancel()
        pick = room._close_pick()
        if pick is None:
            return selection, None
        if pick.name is None or pick.name == rule_pick:
            return selection, rule_pick
        index = next(i for i in top if bids[i].agent == pick.name)
        return picked_selection(selection, index, [candidate(b) for b in bids]), pick.name


def top_bids(bids: Sequence[Bid], selection: Selection, k: int) -> list[int]:
    """Indexes of the k best bids that could be posted, by adjusted score (ties: roster
    order), the rule's winner always among them."""
    cands = [candidate(b) for b in bids]
    speakable = [i for i, c in enumerate(cands) if c.message and not c.failed]
    ranked = sorted(speakable, key=lambda i: (-selection.adjusted[i], i))[:k]
    if selection.winner is not None and selection.winner not in ranked:
        ranked = [selection.winner, *ranked[:-1]]
    return ranked


def picked_selection(selection: Selection, index: int, cands: Sequence[Candidate]) -> Selection:
    """The Selection of a turn whose speaker a person picked: the rule's values for every
    bid, the winner the pick (reason human_pick), the margin over the best other bid that
    could be posted."""
    adjusted = selection.adjusted
    others = [i for i, c in enumerate(cands) if i != index and c.message and not c.failed]
    runner = max(others, key=lambda i: (adjusted[i], -i)) if others else None
    runner_adj = None if runner is None else adjusted[runner]
    return dataclasses.replace(
        selection, winner=index, winning_adjusted=adjusted[index], runner_up=runner,
        runner_up_adjusted=runner_adj,
        margin=None if runner_adj is None else adjusted[index] - runner_adj,
        reason="human_pick", penalty_changed_winner=False)
