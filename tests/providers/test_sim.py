"""The offline bidding simulation and its litellm provider. Private imports (`providers._sim`,
`providers._sim_litellm`): units or test hooks with no public name."""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pytest

from groupchat_core import is_sim_model
from groupchat_core.providers._sim import (
    DEFAULT_SIM_MODEL,
    PERSONAS,
    SimBid,
    SimContext,
    SimOptions,
    SimulatedFailure,
    asimulate_bid,
    persona_for,
    sim_options_from,
    simulate_bid,
)
from groupchat_core.providers._sim_litellm import register_litellm_provider

TASK = ("User", "Should our school adopt AI tutoring tools for homework help?")
RESPOND_TOOL = {"type": "function", "function": {
    "name": "respond", "description": "Decide whether to reply in the groupchat.",
    "parameters": {"type": "object", "required": ["score", "message"],
                   "properties": {"score": {"type": "number"}, "message": {"type": "string"}}}}}
TOOLS = {"tools": [RESPOND_TOOL],
         "tool_choice": {"type": "function", "function": {"name": "respond"}}}
SEEDS = range(300)


def make_ctx(persona: str = "balanced", history: Sequence[tuple[str, str]] = (TASK,),
             seed: int = 0, agent: str = "Optimist", prompt: str = "You argue for the benefits.",
             ) -> SimContext:
    return SimContext(agent, prompt, persona, tuple(history), len(history), seed)


def mean_score(**kwargs: Any) -> float:
    """Average score over many seeds, so persona effects show through the noise."""
    return statistics.mean(simulate_bid(make_ctx(seed=s, **kwargs)).score for s in SEEDS)


def test_deterministic_for_equal_inputs_and_seeds_usually_differ() -> None:
    ctx = make_ctx(seed=7)
    assert simulate_bid(ctx) == simulate_bid(ctx) == simulate_bid(replace(ctx))
    assert len({simulate_bid(make_ctx(seed=s)).score for s in range(50)}) > 40


def test_scores_in_unit_interval_and_silent_bids_are_empty() -> None:
    history = [TASK, ("Skeptic", "Absolutely! The risks are clearly huge."), ("Optimist", "No.")]
    for persona in PERSONAS:
        for seed in range(200):
            for temperature in (0.0, 0.5, 2.0):
                ctx = replace(make_ctx(persona, history, seed), temperature=temperature)
                bid = simulate_bid(ctx)
                assert 0.0 <= bid.score <= 1.0
                assert (bid.message == "") == (bid.score < 0.25)


def test_messages_name_the_speaker_and_are_short() -> None:
    history = [TASK, ("Skeptic", "Cheating and privacy risks outweigh everything.")]
    bids = [simulate_bid(make_ctx("eager", history, s)) for s in range(30)]
    spoken = [b.message for b in bids if b.message]
    assert spoken
    assert all("Skeptic" in m and not m.startswith("[sim]") for m in spoken)
    assert all(len(m) < 200 for m in spoken)


EXPERT = {"persona": "expert",
          "prompt": "You are a database performance expert: indexes, queries, latency."}


@pytest.mark.parametrize("higher, lower, margin", [
    pytest.param({"persona": "eager"}, {"persona": "reserved"}, 0.1, id="eager over reserved"),
    pytest.param({**EXPERT, "history": [TASK, ("Skeptic", "Slow queries and missing indexes "
                                                          "hurt latency.")]},
                 {**EXPERT, "history": [TASK, ("Skeptic", "The weather is lovely for a picnic "
                                                          "today.")]},
                 0.2, id="expert on its keywords"),
    pytest.param({"history": [TASK, ("Analyst", "Tutoring tools could help students.")]},
                 {"history": [TASK, ("Optimist", "Tutoring tools could help students.")]},
                 0.05, id="fatigue after speaking last"),
    pytest.param({"persona": "contrarian",
                  "history": [TASK, ("Skeptic", "Absolutely, everyone clearly agrees on this!")]},
                 {"persona": "contrarian",
                  "history": [TASK, ("Skeptic", "Perhaps there are some considerations here.")]},
                 0.0, id="contrarian boosted by assertive messages"),
])
def test_persona_effects_show_through_the_noise(higher: dict, lower: dict, margin: float) -> None:
    assert mean_score(**higher) > mean_score(**lower) + margin


def test_persona_lookup_and_errors() -> None:
    assert DEFAULT_SIM_MODEL == "sim/balanced"
    assert persona_for(DEFAULT_SIM_MODEL).name == "balanced"
    assert is_sim_model("sim/eager") and not is_sim_model("gpt-4o-mini")
    assert all(p.description.startswith("Simulated") for p in PERSONAS.values())
    with pytest.raises(ValueError) as err:
        persona_for("sim/x")
    assert "unknown sim persona 'x'; choose one of: balanced, contrarian" in str(err.value)
    with pytest.raises(ValueError, match="'x'"):
        simulate_bid(make_ctx(persona="x"))


def test_sim_options_from_validates() -> None:
    assert sim_options_from({}) == SimOptions()
    assert sim_options_from({"sim_latency": 0.01, "sim_failure_rate": 0.5}) == SimOptions(0.01, 0.5)
    with pytest.raises(ValueError, match="1.5"):
        sim_options_from({"sim_failure_rate": 1.5})
    with pytest.raises(ValueError, match="-1"):
        sim_options_from({"sim_latency": -1})


def test_asimulate_bid_matches_sync_and_waits() -> None:
    ctx = make_ctx(seed=3)
    start = time.perf_counter()
    bid = asyncio.run(asimulate_bid(ctx, SimOptions(latency_s=0.05)))
    assert time.perf_counter() - start >= 0.04
    assert bid == simulate_bid(ctx)


def test_asimulate_bid_failure_rate() -> None:
    async def run(rate: float) -> list[SimBid | Exception]:
        results: list[SimBid | Exception] = []
        for seed in range(100):
            try:
                results.append(await asimulate_bid(make_ctx(seed=seed), SimOptions(0.0, rate)))
            except SimulatedFailure as exc:
                results.append(exc)
        return results

    always = asyncio.run(run(1.0))
    assert all(isinstance(r, SimulatedFailure) for r in always)
    assert "failure_rate=1.0" in str(always[0])
    assert not any(isinstance(r, Exception) for r in asyncio.run(run(0.0)))
    some = asyncio.run(run(0.3))
    assert 10 < sum(isinstance(r, Exception) for r in some) < 60
    assert [type(r) for r in some] == [type(r) for r in asyncio.run(run(0.3))]


def test_many_bids_run() -> None:
    """10,000 bids over a growing history complete (speed is in bench/, not here)."""
    history = [TASK]
    for seed in range(500):
        for turn in range(20):
            agent = ("Optimist", "Skeptic", "Analyst")[turn % 3]
            bid = simulate_bid(make_ctx(history=history[-20:], seed=seed, agent=agent))
            history += [(agent, bid.message)] if bid.message else []
    assert len(history) > 1_000  # messages were posted and read back


# --- litellm provider ----------------------------------------------------------------------------

# litellm's own pydantic models emit this UserWarning on first use; it is not ours.
quiet = pytest.mark.filterwarnings("ignore:Item 'summary' on TypedDict:UserWarning")
MESSAGES = [{"role": "system", "content": "You are an optimist about technology."},
            {"role": "user", "content": "Should we adopt AI?"}]


@pytest.fixture(scope="module")
def litellm_mod() -> Any:
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    import litellm

    litellm.suppress_debug_info = True
    register_litellm_provider()
    register_litellm_provider()
    return litellm


def parse_respond(response: object) -> dict[str, object]:
    choice = response.choices[0]  # type: ignore[attr-defined]
    assert choice.finish_reason == "tool_calls"
    (call,) = choice.message.tool_calls
    assert call.function.name == "respond"
    args = json.loads(call.function.arguments)
    assert set(args) == {"score", "message"}
    assert 0.0 <= args["score"] <= 1.0
    return args


@quiet
def test_litellm_completion_answers_once_registered_however_often(litellm_mod: Any) -> None:
    register_litellm_provider()
    assert len([e for e in litellm_mod.custom_provider_map if e["provider"] == "sim"]) == 1
    response = litellm_mod.completion(model="sim/eager", messages=MESSAGES, **TOOLS)
    parse_respond(response)
    assert response.usage.total_tokens > 0
    response = litellm_mod.completion(model="sim/reserved", messages=MESSAGES)  # no tools
    payload = json.loads(response.choices[0].message.content)
    assert isinstance(payload, dict) and set(payload) == {"score", "message"}
    assert 0.0 <= payload["score"] <= 1.0
    with pytest.raises(Exception, match="simulated provider failure"):
        litellm_mod.completion(model="sim/eager", messages=MESSAGES, sim_failure_rate=1.0)


@quiet
def test_litellm_acompletion_respond_tool(litellm_mod: Any) -> None:
    response = asyncio.run(litellm_mod.acompletion(
        model="sim/balanced", messages=MESSAGES, **TOOLS, user="Optimist", seed=5))
    args = parse_respond(response)
    history = [("User", "Should we adopt AI?")]
    ctx = SimContext("Optimist", MESSAGES[0]["content"], "balanced", history, 1, 5)
    assert args["score"] == simulate_bid(ctx).score

