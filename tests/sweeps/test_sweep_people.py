"""A sweep runs agents only (docs/sweeps.md "People"): a sweep spec has no way to seat a person
(issue 22), so a people list, a person in the agents or a human selector is refused in one line
and every cell is built from the spec's agents alone."""

from __future__ import annotations

from typing import Any

import pytest

from groupchat_core import ConfigError
from groupchat_core.sweeps import parse_sweep

AGENTS = [{"agent_name": "A", "model_name": "sim/echo"},
          {"agent_name": "B", "model_name": "sim/echo"}]


@pytest.mark.parametrize(("base", "says"), [
    ({"agents": AGENTS, "people": [{"name": "Ann"}]}, "people: unknown key"),
    ({"agents": [*AGENTS, {"agent_name": "Ann", "kind": "human"}]}, "unknown keyword 'kind'"),
    ({"agents": AGENTS, "human_selector": {"name": "Judge"}}, "human_selector: unknown key"),
])
def test_a_sweep_spec_cannot_carry_people(base: dict[str, Any], says: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_sweep({"base": base, "tasks": ["Plan it."]})
    assert says in str(caught.value) and "\n" not in str(caught.value)
