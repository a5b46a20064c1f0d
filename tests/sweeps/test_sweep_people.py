"""A sweep runs agents only (docs/sweeps.md "People"): people in a spec are refused in one line
saying why, through parse_sweep, load_sweep and the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from groupchat_core import ConfigError
from groupchat_core.sweeps import load_sweep, parse_sweep
from tests.helpers.cli import run_cli

AGENTS = [{"agent_name": "A", "model_name": "sim/balanced"},
          {"agent_name": "B", "model_name": "sim/balanced"}]
WHY = "a sweep runs its cells unattended, so nobody would be in the room to bid"
SEATS = [
    ({"agents": AGENTS, "people": [{"name": "Ann"}]}, "base.people: a sweep cannot seat people"),
    ({"agents": [*AGENTS, {"agent_name": "Ann", "kind": "human"}]},
     "base.agents[2]: 'Ann' is a person (kind: human); a sweep cannot seat people"),
    ({"agents": AGENTS, "human_selector": {"name": "Judge"}},
     "base.human_selector: a sweep cannot have a person pick the speaker"),
]


def sweep(base: dict[str, Any]) -> dict[str, Any]:
    return {"base": base, "tasks": ["Plan it."]}


@pytest.mark.parametrize(("base", "says"), SEATS)
def test_a_sweep_spec_cannot_carry_people_and_says_why_there_and_from_the_cli(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, base: dict[str, Any],
        says: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_sweep(sweep(base))
    assert str(caught.value) == f"invalid sweep spec: {says}: {WHY}; run a chat with people " \
        "with GroupChat(...) or `groupchat-lab run --human NAME`"
    assert "unknown" not in str(caught.value)
    path = tmp_path / "people.yaml"
    path.write_text(json.dumps(sweep(base)))
    code, out, err = run_cli(capsys, "sweep", str(path), "--estimate")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith(f"error: invalid people.yaml: {says}: {WHY}")
    assert "Traceback" not in err


def test_people_at_the_top_of_a_sweep_file_are_refused_too(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps({**sweep({"agents": AGENTS}), "people": [{"name": "Ann"}]}))
    with pytest.raises(ConfigError, match=f"^invalid s.json: people: .*{WHY}"):
        load_sweep(path)


def test_an_agent_kind_is_no_seat_for_a_person() -> None:
    """Only `kind: human` is a person; any other kind stays the generic unknown keyword."""
    with pytest.raises(ConfigError, match="unknown keyword 'kind'"):
        parse_sweep(sweep({"agents": [*AGENTS, {"agent_name": "C", "kind": "agent"}]}))


def test_a_sweep_without_people_builds_its_cells_from_the_agents() -> None:
    spec = parse_sweep(sweep({"agents": AGENTS}))
    assert [a.agent_name for a in spec.base.agents] == ["A", "B"]
