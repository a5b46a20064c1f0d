"""Keys are checked before anything is spent, and a sweep whose key is refused stops early.

A sweep with no key once made 90 failing calls over 30 cells before saying `0/30 cells done`.

Private imports (`providers._credentials`): a unit with no public name.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from groupchat_core import Agent, ConfigError, GroupChat, check_credentials
from groupchat_core.cli import main
from groupchat_core.providers._credentials import is_credential_failure
from groupchat_core.store import RunStore
from groupchat_core.sweeps import parse_sweep, run_sweep
from groupchat_core.testing import FakeOpenAIServer, error


@pytest.mark.parametrize("name, model, problem", [
    ("Critic", "gpt-4o-mini", "OPENAI_API_KEY is not set; set it"),
    ("G", "gemini/gemini-pro", "none of GOOGLE_API_KEY, GEMINI_API_KEY is set; set one"),
], ids=["one key", "alternative keys"])
def test_a_missing_key_is_named_with_its_fix(name: str, model: str, problem: str) -> None:
    assert check_credentials([Agent(agent_name=name, model_name=model)]) == [
        f"agent {name!r} uses {model} but {problem} or give the agent an api_key"]


def test_every_problem_is_listed(monkeypatch: pytest.MonkeyPatch) -> None:
    agents = [Agent(agent_name="A", model_name="gpt-4o-mini"),
              Agent(agent_name="B", model_name="anthropic/claude-3-5-haiku-latest"),
              Agent(agent_name="C", model_name="groq/llama3-8b-8192")]
    problems = check_credentials(agents)
    assert [p.split(" uses ")[0] for p in problems] == ["agent 'A'", "agent 'B'", "agent 'C'"]
    assert "ANTHROPIC_API_KEY" in problems[1] and "GROQ_API_KEY" in problems[2]
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    assert len(check_credentials(agents)) == 2


def test_what_cannot_or_need_not_be_checked_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    clear = [
        Agent(agent_name="Sim", model_name="sim/balanced"),  # in-process
        Agent(agent_name="Keyed", model_name="gpt-4o-mini", api_key="sk-own-key"),
        Agent(agent_name="Ollama", model_name="ollama/llama3", api_base="http://127.0.0.1:11434"),
        Agent(agent_name="OllamaDefault", model_name="ollama/llama3"),  # litellm's default base
        Agent(agent_name="Azure", model_name="azure/my-deployment"),  # Entra ID, identities
        Agent(agent_name="Aws", model_name="bedrock/anthropic.claude-v2"),  # ~/.aws, roles
        Agent(agent_name="Gcp", model_name="vertex_ai/gemini-pro"),  # gcloud credentials
        Agent(agent_name="Odd", model_name="no-such-provider/x"),  # litellm cannot tell
    ]
    assert check_credentials(clear) == []
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    assert check_credentials([Agent(agent_name="Env", model_name="gpt-4o-mini")]) == []


def test_a_local_openai_server_needs_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """Loopback gets a placeholder, an untrusted base no key: only a trusted base needs one."""
    local = Agent(agent_name="Local", model_name="openai/smol", api_base="http://127.0.0.1:8080/v1")
    assert check_credentials([local]) == []
    remote = Agent(agent_name="Remote", model_name="openai/smol", api_base="http://10.1.2.3/v1")
    assert check_credentials([remote]) == []  # untrusted: OPENAI_API_KEY would not go there
    monkeypatch.setenv("GROUPCHAT_TRUSTED_API_BASES", "http://10.1.2.3/v1")
    [problem] = check_credentials([remote])
    assert "OPENAI_API_KEY" in problem


def test_a_run_without_keys_raises_before_any_call(monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeOpenAIServer() as server:
        monkeypatch.setenv("GROUPCHAT_TRUSTED_API_BASES", server.base_url)  # keys may go there
        agents = [Agent(agent_name=n, model_name="anthropic/claude-3-5-haiku-20241022",
                        api_base=server.base_url) for n in ("A", "B")]
        chat = GroupChat(agents=agents)
        with pytest.raises(ConfigError) as info:
            chat.run("t")
        assert server.requests == []  # nothing was spent
    text = str(info.value)
    assert "\n" not in text and text.startswith("missing credentials (2 problems): ")
    assert "agent 'A'" in text and "agent 'B'" in text
    assert chat.last_run is None


def test_a_sim_run_is_never_checked_against_the_environment() -> None:
    agents = [Agent(agent_name=n, model_name="sim/balanced") for n in ("A", "B")]
    assert GroupChat(agents=agents, max_loops=3).run("t")


def test_the_cli_run_reports_every_missing_key_on_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "chat.json"
    spec.write_text(json.dumps({"agents": [
        {"agent_name": "Critic", "model_name": "gpt-4o-mini"},
        {"agent_name": "Fan", "model_name": "sim/balanced"}]}))
    code = main(["--db", f"sqlite:///{tmp_path}/cli.db", "run", str(spec), "--task", "t",
                 "--quiet"])
    _, err = capsys.readouterr()
    assert code == 2
    assert err.strip().splitlines() == [
        "error: missing credentials: agent 'Critic' uses gpt-4o-mini but OPENAI_API_KEY is not "
        "set; set it or give the agent an api_key"]


# --- sweeps ----------------------------------------------------------------------------------


def sweep_spec(agents: list[dict[str, Any]], cells: int = 30, concurrency: int = 2) -> Any:
    return parse_sweep({"name": "keys", "base": {"max_loops": 4, "agents": agents},
                        "grid": {"threshold": [round(0.01 * i, 2) for i in range(cells)]},
                        "tasks": ["t"], "repeats": 1, "concurrency": concurrency,
                        "bid_cache": False})


def test_a_sweep_without_keys_is_refused_before_it_is_created(store: RunStore) -> None:
    agents = [{"agent_name": "A", "model_name": "gpt-4o-mini"},
              {"agent_name": "B", "model_name": "sim/balanced"}]
    with pytest.raises(ConfigError, match="agent 'A' uses gpt-4o-mini but OPENAI_API_KEY"):
        run_sweep(sweep_spec(agents), store)
    assert store.list_sweeps().empty and store.list_runs().empty


@pytest.fixture
def refusing(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    """A trusted server refusing the key in the environment (which passes the check)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong-key")
    with FakeOpenAIServer() as server:
        monkeypatch.setenv("GROUPCHAT_TRUSTED_API_BASES", server.base_url)  # the key goes there
        server.set_responder(None, lambda body: error(401, "Incorrect API key provided: sk-w***"))
        yield server


def test_a_sweep_whose_key_is_refused_stops_after_three_cells(
        store: RunStore, refusing: FakeOpenAIServer) -> None:
    agents = [{"agent_name": n, "model_name": "openai/m", "api_base": refusing.base_url,
               "litellm_kwargs": {"extra_headers": {"X-Test": "1"}}} for n in ("A", "B")]
    outcome = run_sweep(sweep_spec(agents), store)
    calls = len(refusing.requests)
    assert outcome.status == "error" and outcome.cells_done == 0
    reason = outcome.reason or ""
    assert "3 cells in a row failed because the provider refused the credentials" in reason
    assert "AuthenticationError" in reason
    # 3 refused cells plus at most the one more in flight (concurrency 2), 2 bids each, no retry
    # (a call of the cell cancelled in flight reaches the server but is not counted as a bid)
    assert 6 <= calls <= (3 + 1) * 2 and 6 <= outcome.calls <= calls
    assert store.get_sweep(outcome.sweep_id)["status"] == "error"


def test_credential_failures_are_recognised_in_error_text() -> None:
    assert is_credential_failure("AuthenticationError: litellm.AuthenticationError: 401")
    assert is_credential_failure("every bid failed on turn 1: A: Incorrect API key provided")
    assert not is_credential_failure("RateLimitError: slow down")
    assert not is_credential_failure(None)


def test_the_cli_sweep_says_why_it_stopped(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], refusing: FakeOpenAIServer) -> None:
    agents = [{"agent_name": n, "model_name": "openai/m", "api_base": refusing.base_url}
              for n in ("A", "B")]
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(sweep_spec(agents, concurrency=1).to_data()))
    code = main(["--db", f"sqlite:///{tmp_path}/cli.db", "sweep", str(path)])
    calls = len(refusing.requests)
    out, err = capsys.readouterr()
    assert code == 1 and calls == 3 * 2
    assert "sweep" in out and " error: 0/30 cells done" in out
    assert "provider refused the credentials" in out
    assert err.count("cell ") >= 3
