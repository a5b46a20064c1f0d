"""`selector` (AutoGen's SelectorGroupChat, docs/engine.md §16): a selector model names the
next speaker from the roster and the transcript; a reply that names nobody (or a failed call)
falls back to round robin, and the turn's reason says which."""

from __future__ import annotations

import asyncio
import logging

from ..._agent import Agent
from ..._bidding import RESPOND_TOOL, describe_participant
from ..._config import ChatConfig
from ..._records import Bid, Turn, TurnReason
from ..._secrets import held_secrets, mask_secrets
from ...providers._model_calls import provider_for
from ...providers._providers import BidRequest, Provider
from ...providers._replies import cap_text
from ...providers._routing import Providers
from .._outcome import apply_reply
from .._selection import Selection, candidate
from .._strategies import assigned, pick_named, scheduled
from ._base import Floor, Named, add_call

logger = logging.getLogger("groupchat_core")

SELECTOR_NAME = "selector"
SELECTOR_SYSTEM = ("You choose who speaks next in a group conversation. Reply by calling respond "
                   "with score 1 and a message that starts with the exact name of the next "
                   "speaker, then ': ' and one short sentence saying why.")
SELECTOR_HISTORY = 20  # messages of the transcript the selector reads (newest)
SELECTOR_LINE_CHARS = 2_000


class Selector(Named):
    """The selector model's pick speaks; its call is counted on the chosen agent's bid and
    what it said is the turn's selector_reason."""

    name = "selector"
    reason = "selector"

    def __init__(self, config: ChatConfig, agents: int,
                 providers: Providers | None = None) -> None:
        super().__init__(config, agents)
        self.selector = Agent(agent_name=SELECTOR_NAME, model_name=config.selector_model,
                              temperature=0.0, system_prompt=SELECTOR_SYSTEM,
                              tools_list_dictionary=[RESPOND_TOOL],
                              api_base=config.selector_api_base,
                              tool_choice_mode=config.selector_tool_choice_mode)
        # Who answers its call: picked once, as an agent's provider is.
        self.provider: Provider = provider_for(config.selector_model, providers)

    async def turn(self, floor: Floor, turn: int) -> str | None:
        pos, reason, call, said = await self.ask(floor, turn)
        bid = await floor.one_bid(turn, pos, "speak")
        add_call(bid, call)
        return floor.settle(turn, [bid], assigned(candidate(bid), reason),
                            selector_reason=said or None)

    def prompt(self, floor: Floor) -> str:
        """The roster and the newest messages, asking for one name."""
        names = [a.agent_name for a in floor.agents]
        roster = "\n".join(f"- {describe_participant(a.agent_name, a.description)}"
                           for a in floor.agents)
        lines = "\n".join(f"{role}: {text[:SELECTOR_LINE_CHARS]}"
                          for role, text in floor.history[-SELECTOR_HISTORY:])
        return (f"Participants:\n{roster}\n\nConversation so far, oldest first:\n{lines}"
                f"\n\nWho should speak next? Name exactly one of: {', '.join(names)}.")

    async def ask(self, floor: Floor, turn: int) -> tuple[int, TurnReason, Bid, str]:
        """The position to ask, the turn's reason, the selector's call as a Bid (so the turn
        counts its calls and tokens) and what it said (its reply, else its error)."""
        names = [a.agent_name for a in floor.agents]
        provider, history = self.provider, tuple(floor.history)
        messages = [{"role": "system", "content": SELECTOR_SYSTEM},
                    {"role": "user", "content": self.prompt(floor)}] \
            if provider.needs_prompt else []
        call = Bid(turn=turn, agent=SELECTOR_NAME, position=0)
        try:
            async with asyncio.timeout(floor.bid_limit(self.selector)):
                reply = await provider.bid(BidRequest(self.selector, messages, history, turn,
                                                      self.config.seed))
            apply_reply(call, reply)
        except Exception as exc:  # a failed selector never fails the turn
            call.calls = getattr(exc, "calls", 1)
            call.error = mask_secrets(f"{type(exc).__name__}: {exc}",
                                      held_secrets(floor.agents))
        pos = pick_named(call.message, names) if call.error is None or call.message else None
        said = cap_text(mask_secrets(call.message or call.error or "",
                                     held_secrets(floor.agents)), SELECTOR_LINE_CHARS)
        logger.info("turn %d: selector %s %s", turn,
                    "chose" if pos is not None else "named nobody (round robin):", said)
        if pos is None:
            return scheduled("round_robin", turn, len(names), self.config.seed), \
                "round_robin", call, said
        return pos, "selector", call, said

    def _replay_one(self, row: Turn, bid: Bid) -> Selection:
        """A selector's pick cannot be re-made: it is taken as recorded (its reason)."""
        named: TurnReason = "round_robin" if row.reason == "round_robin" else "selector"
        if named == "round_robin" and bid.position != scheduled("round_robin", row.turn,
                                                                self.agents, self.config.seed):
            raise ValueError("the selector's round-robin fallback asks the next agent in "
                             "list order")
        return assigned(candidate(bid), named)
