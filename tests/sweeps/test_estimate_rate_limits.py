"""The sweep estimate says how long rate limits make a sweep take (issue 42.2): a model whose
deployments all declare rpm (or with a process-wide set_rate_limit rpm) takes at most that many
calls a minute, so its calls / rpm minutes is a floor on the wall time; a queue on a limit only
paces (the wait counts against no deadline: tests/providers/test_rate_limits_pace.py), so no
warning asks for a lower concurrency.

Private imports (`providers._ratelimit`): the process-wide limits, cleared around each test.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from groupchat_core import set_rate_limit
from groupchat_core.providers._ratelimit import RATE_LIMITS
from groupchat_core.sweeps import estimate, parse_sweep

LOCAL = "http://127.0.0.1:9/v1"


@pytest.fixture(autouse=True)
def no_limits() -> Iterator[None]:
    RATE_LIMITS.clear()
    yield
    RATE_LIMITS.clear()


def spec(deployments: list[dict[str, Any]] | None = None, **extra: Any) -> Any:
    """16 cells of two agents on one model, two turns each: 64 calls."""
    agents = [{"agent_name": n, "system_prompt": "Speak.", "model_name": "openai/fake",
               "api_base": LOCAL, "timeout": 10} for n in "AB"]
    data: dict[str, Any] = {"name": "x", "base": {"agents": agents, "max_loops": 3},
                            "grid": {"threshold": [0.1, 0.2, 0.3, 0.4]}, "tasks": ["Go"],
                            "repeats": 4, "concurrency": 16, **extra}
    if deployments is not None:
        data["deployments"] = {"openai/fake": deployments}
    return parse_sweep(data)


def test_deployments_rpm_make_the_wall_time_at_least_calls_over_rpm() -> None:
    free = estimate(spec([{"name": "a", "api_base": LOCAL}]))
    paced = estimate(spec([{"name": "a", "api_base": LOCAL, "rpm": 12},
                           {"name": "b", "api_base": LOCAL, "rpm": 8}]))
    assert free.calls_upper == paced.calls_upper == 64
    assert free.wall_s_upper < 60  # two turns of 16 cells at once: seconds, not minutes
    assert paced.wall_s_upper >= 64 / 20 * 60  # 20 a minute together: 3.2 minutes at least
    assert any("at most 20 requests a minute" in a and "64 calls" in a
               for a in paced.assumptions)
    assert not any("rate limit" in a for a in free.assumptions)


def test_a_deployment_without_rpm_leaves_the_model_unpaced() -> None:
    mixed = estimate(spec([{"name": "a", "api_base": LOCAL, "rpm": 1},
                           {"name": "b", "api_base": LOCAL}]))
    assert mixed.wall_s_upper < 60 and not any("rate limit" in a for a in mixed.assumptions)


def test_a_process_wide_rpm_paces_the_estimate_too() -> None:
    set_rate_limit("openai/fake", rpm=32)
    assert estimate(spec()).wall_s_upper >= 64 / 32 * 60


def test_a_queue_longer_than_the_bid_deadline_only_paces() -> None:
    # 16 cells x 2 agents = 32 bids at once on 20 a minute: up to 2 minutes' wait against the
    # 120 s bid deadline, which that wait does not use up: a floor, no warning
    tight = estimate(spec([{"name": "a", "api_base": LOCAL, "rpm": 20}]))
    assert any("counts against neither" in a for a in tight.assumptions)
    assert not any(a.startswith("warning") for a in tight.assumptions)
