"""Built-in rooms to start from: agents plus the settings and task they suit (pure data).

Why offline sims with a little simulated latency: a new user gets a working room with no key,
and the live view has something to show (a sim bid otherwise takes microseconds).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from groupchat_core import Agent, ChatSpec, is_sim_model

PRESET_LATENCY_S = 0.25


def _latency(seconds: float, model: str) -> dict[str, Any]:
    return {"sim_latency": round(seconds, 3)} if seconds and is_sim_model(model) else {}


@dataclass(frozen=True)
class Preset:
    """A room: agents in order (ties go to the earlier one), settings and a sample task."""

    name: str
    description: str
    task: str
    agents: tuple[tuple[str, str, str], ...]  # (name, role, model)
    settings: Mapping[str, Any] = field(default_factory=dict)
    agent_options: Mapping[str, Any] = field(default_factory=dict)  # e.g. api_base, max_tokens

    def build_agents(self, latency_s: float = PRESET_LATENCY_S) -> list[Agent]:
        """The agents; sims answer after latency_s, 1.5x, 2x, ... so bids arrive one by one."""
        return [Agent(agent_name=n, system_prompt=role, model_name=model,
                      litellm_kwargs=_latency(latency_s * (1 + i / 2), model),
                      **dict(self.agent_options))
                for i, (n, role, model) in enumerate(self.agents)]

    def spec(self) -> ChatSpec:
        return ChatSpec(name=self.name, description=self.description,
                        agents=self.build_agents(), **dict(self.settings))


DEBATE_TRIO = Preset(
    name="Debate trio",
    description="Optimist, Pessimist and Realist argue a question (the reference example).",
    task="Should we adopt AI for medical diagnosis?",
    agents=(
        ("Optimist", "You argue for the benefits.", "sim/eager"),
        ("Pessimist", "You argue for the risks.", "sim/contrarian"),
        ("Realist", "You seek a balanced analysis.", "sim/balanced"),
    ),
    settings={"max_loops": 12, "threshold": 0.5, "recency_penalty": 0.3, "recency_window": 1},
)

EXPERT_PANEL = Preset(
    name="Five-expert panel",
    description="Five specialists who speak up when the discussion reaches their field.",
    task="Should hospitals deploy AI diagnosis systems for patients, given costs, liability "
         "and safety?",
    agents=(
        ("Economist", "You are an economist: costs, budgets, markets, incentives and prices.",
         "sim/expert"),
        ("Ethicist", "You are an ethicist: fairness, consent, harm, rights and responsibility.",
         "sim/balanced"),
        ("Engineer", "You are an engineer: systems, reliability, safety, data and deployment.",
         "sim/expert"),
        ("Clinician", "You are a clinician: patients, diagnosis, treatment and clinical care.",
         "sim/balanced"),
        ("Lawyer", "You are a lawyer: liability, regulation, compliance, contracts and privacy.",
         "sim/expert"),
    ),
    settings={"max_loops": 14, "threshold": 0.45, "recency_penalty": 0.3, "recency_window": 2},
)

# A real (tiny) LLM with no key and no internet: `make llm` serves SmolLM2-135M on this address.
LOCAL_LLM_URL = "http://127.0.0.1:8080/v1"
LOCAL_LLM_DEBATE = Preset(
    name="Local LLM debate (SmolLM2)",
    description="The debate trio on a real local model: start its server first (`python -m "
                "groupchat_core.testing.local_llm serve`, in a clone `make llm`; no key, "
                "offline; a few seconds per bid, one bid at a time). SmolLM2-135M bids 0.25 "
                "or 0.3 almost always, so the threshold is 0.2 and the recency penalty picks who "
                "speaks: it shows the machinery on a real model, not judgement.",
    task="Discuss: AI for medical diagnosis. Give your view in one sentence.",
    agents=(
        ("Optimist-LLM", "You are an optimist. In one sentence, name a benefit of the idea "
                         "under discussion.", "openai/smollm2"),
        ("Pessimist-LLM", "You are a pessimist. In one sentence, name a risk of the idea "
                          "under discussion.", "openai/smollm2"),
        ("Realist-LLM", "You are a realist. In one sentence, weigh the benefits and risks "
                        "said so far.", "openai/smollm2"),
    ),
    # At 0.5 every agent bid 0.30 and the run lulled on turn 1 with no message (issue 41);
    # at 0.25 a seeded run whose two bids were 0.25 lulled too (a fresh clone, 2026-12-07);
    # at temperature 0.2 every message repeated the task.
    settings={"max_loops": 6, "threshold": 0.2, "recency_penalty": 0.3, "recency_window": 1},
    agent_options={"api_base": LOCAL_LLM_URL, "max_tokens": 160, "temperature": 0.7},
)

PRESETS: dict[str, Preset] = {
    p.name: p for p in (DEBATE_TRIO, EXPERT_PANEL, LOCAL_LLM_DEBATE)}
