"""Runs sim/<persona> models in-process: the same bids as the litellm provider, minus its cost."""

from __future__ import annotations

from ._providers import BidRequest, ModelReply, reply_from_arguments
from ._sim import SimContext, asimulate_bid, persona_for, sim_options_from


class SimProvider:
    """The Provider for `sim/...` models (docs/engine.md §3: sims may skip litellm); it bids
    from the structured history, so it needs no prompt and ignores the deadline and sink (the
    turn loop's own timeout still bounds it)."""

    needs_prompt = False

    async def bid(self, request: BidRequest) -> ModelReply:
        agent = request.agent
        options = sim_options_from(agent.litellm_kwargs)
        context = SimContext(
            agent_name=agent.agent_name,
            system_prompt=agent.system_prompt,
            persona=persona_for(agent.model_name).name,
            history=request.history,
            turn=request.turn,
            seed=request.seed,
            temperature=agent.temperature,
            answer_key=request.answer_key,
            accuracy=options.accuracy,
        )
        bid = await asimulate_bid(context, options)
        return reply_from_arguments({"score": bid.score, "message": bid.message}, "simulation")
