"""Warming a process's model-call path before it serves anyone (issue 24, target 2).

The first chat in a fresh process paid litellm's import and the hundreds of modules its first
completion loads (seconds; BENCHMARKS.md "Target 2"). Done lazily, that cost lands on a user's
Start click; done on a side thread while sessions run, it holds the GIL and slows them all
(measured, and dropped). A server calls `warm_up` once, before it accepts sessions.
"""

from __future__ import annotations

import time

from .._agent import Agent
from ..providers import _direct  # noqa: F401  (loaded: the engine's OpenAI-compatible client)
from ..providers._litellm import warm_routes
from ._groupchat import GroupChat


def warm_up() -> float:
    """Load litellm and exercise a completion on each kind of route (answered inside litellm,
    nothing sent) and one short offline chat (the engine's loop, selection and records).
    Returns the seconds it took."""
    started = time.perf_counter()
    warm_routes()
    agents = [Agent(agent_name=name, model_name="sim/balanced") for name in ("Warm", "Up")]
    GroupChat(agents=agents, max_loops=3).run("Warm up the engine.")
    return time.perf_counter() - started
