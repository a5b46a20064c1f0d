"""A model no provider can answer is refused before the run starts, offline, with "did you
mean"; sims and servers of the user's own (an api_base on loopback) still run.

Private imports: `groupchat_core.providers._model_names.model_problems` is the check itself,
tested on names the CLI cannot reach without a server (open catalogues, deployments)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from groupchat_core import Agent
from groupchat_core.providers._model_names import model_problems
from groupchat_core.store import RunStore
from groupchat_core.testing import FakeOpenAIServer, tool_call
from tests.helpers.cli import run_cli

pytestmark = pytest.mark.usefixtures("fresh_engines")


def spec(path: Path, *models: str, api_base: str | None = None) -> str:
    agents = [{"agent_name": f"A{i}", "system_prompt": "You talk.", "model_name": m,
               **({"api_base": api_base} if api_base else {})} for i, m in enumerate(models)]
    path.write_text(json.dumps({"schema_version": 1, "max_loops": 2, "agents": agents}))
    return str(path)


@pytest.mark.parametrize(("model", "said"), [
    ("gpt-4o-mni", "which litellm cannot route (no known provider): did you mean gpt-4o-mini"),
    ("opena/gpt-4o", "which litellm cannot route (no known provider): did you mean "
                     "openai/gpt-4o"),
    ("openai/gpt-4o-mni", "which openai does not list (litellm's model list): did you mean "
                          "gpt-4o-mini"),
])
def test_a_misspelt_model_is_refused_before_the_run_in_one_line(capsys, tmp_path, model, said,
                                                                monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")  # the key check is not what stops it
    code, out, err = run_cli(capsys, "run", spec(tmp_path / "s.json", "sim/balanced", model),
                             "--task", "t", "--quiet")
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert err.startswith(f"error: agent 'A1' uses model {model!r}, {said}")
    assert "(--no-model-check runs it anyway)" in err
    assert RunStore().list_runs().empty  # nothing started


def test_no_model_check_lets_the_run_start_and_fail_as_before(capsys, tmp_path):
    path = spec(tmp_path / "s.json", "gpt-4o-mni", "gpt-4o-mni")
    code, _, err = run_cli(capsys, "run", path, "--task", "t", "--quiet", "--no-model-check")
    assert code == 1 and "every bid failed" in err
    assert RunStore().list_runs()["stop_reason"].tolist() == ["error"]


def test_a_loopback_server_takes_any_model_name(capsys, tmp_path):
    with FakeOpenAIServer() as server:
        server.script("my-local-model", [tool_call(0.8, "Hello"), tool_call(0.1, "")])
        server.script("another-one", [tool_call(0.1, ""), tool_call(0.1, "")])
        path = spec(tmp_path / "s.json", "openai/my-local-model", "openai/another-one",
                    api_base=server.base_url)
        code, out, err = run_cli(capsys, "run", path, "--task", "t", "--quiet", "--no-store")
        assert code == 0, err
        assert "Hello" in out and server.unexpected == []


def test_the_check_judges_only_what_it_can_and_makes_no_network_call():
    def agent(model: str, **kw: str) -> Agent:
        return Agent(agent_name="X", system_prompt="p", model_name=model, **kw)

    assert model_problems([agent("gpt-4o-mini"), agent("sim/eager"), agent("ollama/my-tune"),
                           agent("hosted_vllm/whatever"),
                           agent("openai/custom", api_base="https://llm.example.org/v1")]) == []
    assert model_problems([agent("openai/routed-name")], served=lambda m: True) == []
    (problem,) = model_problems([agent("anthropic/claude-sonet-4-5")])
    assert "anthropic does not list" in problem and "did you mean claude-sonnet-4-5" in problem
    (problem,) = model_problems([agent("sim/balaced")])
    assert "no sim persona: did you mean sim/balanced?" in problem
