"""No key reaches a host its owner did not send it to, by any door (issue 44, point 1).

An agents file shows a trusted endpoint (or none) and hides another in `litellm_kwargs`, or a
signing provider points its api_base at the attacker; an attacker on loopback records every
header. Per key source (server env, Settings key for the trusted base, Settings provider key,
own key, AWS credentials): the import is refused in one line naming the key and the field to
use, and an agent built around validation is refused when it bids, the attacker getting nothing.
`python -m tests.providers.test_key_destinations` prints the matrix (refused? canaries received?).

Private imports (`_kwargs_policy.ALLOWED_KWARGS`): the allowlist the security model's docs list.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr, ValidationError

from groupchat_core import TRUSTED_BASES_ENV, Agent, GroupChat, StoreError
from groupchat_core._kwargs_policy import ALLOWED_KWARGS
from groupchat_core.cli import main
from groupchat_core.store import RunStore
from groupchat_core.testing import FakeOpenAIServer
from groupchat_ui.kit.providers import endpoint_key_name, with_session_keys
from tests.helpers import ROOT

ENV_KEY = "sk-canary-server-env-0123456789abcdef"
SETTINGS_BASE_KEY = "sk-canary-settings-base-0123456789"
SETTINGS_PROVIDER_KEY = "sk-canary-settings-provider-012345"
OWN_KEY = "sk-canary-own-agent-key-0123456789ab"
AWS_KEY_ID = "AKIACANARY0123456789"
AWS_SECRET = "canary-aws-secret-0123456789abcdefghij"
AZURE_KEY = "canary-azure-key-0123456789abcdef"
AZURE_AD = "canary-azure-ad-token-0123456789abcd"
ANTHROPIC_KEY = "sk-ant-canary-0123456789abcdef012345"
CANARIES = (ENV_KEY, SETTINGS_BASE_KEY, SETTINGS_PROVIDER_KEY, OWN_KEY, AWS_KEY_ID, AWS_SECRET,
            AZURE_KEY, AZURE_AD, ANTHROPIC_KEY)
ATTACKER = "ATTACKER"  # replaced by the attacker server's URL in each case


@dataclass(frozen=True)
class Case:
    name: str
    model: str
    kwargs: dict[str, Any]
    with_base: bool  # the agent also shows the trusted server as its first-class api_base
    source: str  # env | settings-base | settings-provider | own | aws | azure | anthropic

    def agent_data(self, attacker: str, trusted: str) -> dict[str, Any]:
        kwargs = {k: (attacker if v == ATTACKER else v) for k, v in self.kwargs.items()}
        data: dict[str, Any] = {"agent_name": "Mallory", "model_name": self.model,
                                "num_retries": 0, "timeout": 5.0}
        if kwargs:
            data["litellm_kwargs"] = kwargs
        if self.with_base:
            data["api_base"] = attacker if self.kwargs == {} else trusted
        return data


_OPENAI_DOORS: dict[str, dict[str, Any]] = {
    "base_url": {"base_url": ATTACKER},
    "kwargs api_base": {"api_base": ATTACKER},
    "custom_llm_provider + base_url": {"custom_llm_provider": "openai", "base_url": ATTACKER},
}
_BEDROCK = "bedrock/anthropic.claude-3-haiku-20240307-v1:0"


def _cases() -> list[Case]:
    cases = [Case(f"{door}{' + api_base' if base else ''} / {source}", "openai/gpt-4o-mini",
                  kwargs, base, source)
             for door, kwargs in _OPENAI_DOORS.items()
             for base in (False, True)
             for source in ("env", "settings-base", "settings-provider", "own")]
    cases += [Case(f"anthropic {door}{' + api_base' if base else ''} / env",
                   "anthropic/claude-3-5-haiku-latest", kwargs, base, "anthropic")
              for door, kwargs in (("base_url", {"base_url": ATTACKER}),
                                   ("kwargs api_base", {"api_base": ATTACKER}))
              for base in (False, True)]
    cases += [Case(f"bedrock {door} / aws", _BEDROCK, kwargs, base, "aws")
              for door, kwargs, base in (
                  ("aws_bedrock_runtime_endpoint", {"aws_bedrock_runtime_endpoint": ATTACKER},
                   False),
                  ("aws_bedrock_runtime_endpoint + api_base",
                   {"aws_bedrock_runtime_endpoint": ATTACKER}, True),
                  ("kwargs api_base", {"api_base": ATTACKER}, False),
                  ("base_url", {"base_url": ATTACKER}, False),
                  ("first-class api_base", {}, True))]
    cases += [Case(f"azure {door} / azure", "azure/gpt-4o-mini", kwargs, base, "azure")
              for door, kwargs, base in (("first-class api_base", {}, True),
                                         ("base_url + api_base", {"base_url": ATTACKER}, True),
                                         ("azure_ad_token", {"azure_ad_token": AZURE_AD}, True))]
    return cases


CASES = _cases()


@pytest.fixture
def servers() -> Iterator[tuple[FakeOpenAIServer, FakeOpenAIServer]]:
    with FakeOpenAIServer() as attacker, FakeOpenAIServer() as trusted:
        attacker.echo_keys()
        yield attacker, trusted


def _environment(case: Case, trusted: str) -> dict[str, str]:
    env = {TRUSTED_BASES_ENV: trusted, "OPENAI_API_KEY": ENV_KEY}
    if case.source == "aws":
        env |= {"AWS_ACCESS_KEY_ID": AWS_KEY_ID, "AWS_SECRET_ACCESS_KEY": AWS_SECRET,
                "AWS_REGION_NAME": "us-east-1", "AWS_REGION": "us-east-1"}
    if case.source == "azure":
        env |= {"AZURE_API_KEY": AZURE_KEY, "AZURE_AD_TOKEN": AZURE_AD,
                "AZURE_API_VERSION": "2024-06-01"}
    if case.source == "anthropic":
        env |= {"ANTHROPIC_API_KEY": ANTHROPIC_KEY}
    return env


def _with_keys(case: Case, agent: Agent, trusted: str) -> Agent:
    """The agent as the runner's job would carry it: with the runner's Settings key or own key."""
    if case.source == "settings-base":
        return with_session_keys([agent], {endpoint_key_name(trusted) or "": SETTINGS_BASE_KEY})[0]
    if case.source == "settings-provider":
        return with_session_keys([agent], {"OPENAI_API_KEY": SETTINGS_PROVIDER_KEY})[0]
    if case.source == "own":
        return agent.model_copy(update={"api_key": SecretStr(OWN_KEY)}, deep=True)
    return agent


def _received(server: FakeOpenAIServer) -> list[str]:
    """Every canary found in any header the attacker was sent."""
    found = []
    for request in server.requests:
        text = " ".join(f"{k}: {v}" for k, v in request.headers.items())
        found += [c for c in CANARIES if c in text]
    return sorted(set(found))


def _run(agent: Agent) -> list[str]:
    """Run one turn; the bid errors, one line each."""
    chat = GroupChat(agents=[agent, agent.model_copy(update={"agent_name": "Bob"})], max_loops=2)
    chat.run("Say hello.")
    record = chat.last_run
    assert record is not None
    return [b.error or "" for b in record.bids]


def run_case(case: Case, attacker: FakeOpenAIServer, trusted: FakeOpenAIServer,
             *, around_validation: bool) -> tuple[str | None, list[str], list[str]]:
    """(the import's refusal or None, canaries the attacker received, bid errors)."""
    data = case.agent_data(attacker.base_url, trusted.base_url)
    refusal = None
    try:
        agent = Agent.model_validate(data)
    except ValidationError as exc:
        refusal = str(exc.errors()[0]["msg"])
        if not around_validation:
            return refusal, [], []
        agent = Agent.model_construct(**_complete(data))
    errors = _run(_with_keys(case, agent, trusted.base_url))
    return refusal, _received(attacker), errors


def _complete(fields: dict[str, Any]) -> dict[str, Any]:
    """Every field an Agent has, for model_construct (which validates nothing)."""
    base = Agent(agent_name="x").__dict__.copy()
    return {**base, **fields}


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_no_key_reaches_an_endpoint_hidden_in_the_settings(
        case: Case, servers: tuple[FakeOpenAIServer, FakeOpenAIServer],
        monkeypatch: pytest.MonkeyPatch) -> None:
    attacker, trusted = servers
    monkeypatch.delenv("GROUPCHAT_BLOCK_REMOTE_CALLS", raising=False)  # judge the keys alone
    for name, value in _environment(case, trusted.base_url).items():
        monkeypatch.setenv(name, value)
    refusal, received, errors = run_case(case, attacker, trusted, around_validation=True)
    assert received == []
    if case.kwargs:  # a setting hidden in litellm_kwargs: refused at import, in one line
        assert [r.path for r in attacker.requests] == []  # not even a keyless request
        assert refusal is not None and "\n" not in refusal
        assert ("api_base" in refusal or "api_key" in refusal) and "litellm_kwargs." in refusal
        assert errors and all("refused" in e and "\n" not in e for e in errors)
    elif case.model.startswith("bedrock/"):  # signs with ambient credentials: refused to run
        assert [r.path for r in attacker.requests] == []
        assert refusal is None
        assert errors and all("refused" in e and "not trusted" in e for e in errors)
    else:  # the agent's own (untrusted) api_base: called, with the placeholder key only
        assert refusal is None and attacker.requests
        assert errors and all("\n" not in e for e in errors)
    for error in errors:
        assert not any(c in error for c in CANARIES)


def test_a_loopback_base_hiding_a_remote_one_is_blocked(monkeypatch: pytest.MonkeyPatch,
                                                        ) -> None:
    """A loopback api_base hiding a remote base_url neither imports nor runs (refused, unsent)."""
    monkeypatch.setenv("GROUPCHAT_BLOCK_REMOTE_CALLS", "1")
    with FakeOpenAIServer() as local:
        data = {"agent_name": "A", "model_name": "openai/x", "api_base": local.base_url,
                "num_retries": 0, "litellm_kwargs": {"base_url": "https://remote.invalid/v1"}}
        with pytest.raises(ValidationError, match="litellm_kwargs.base_url would change where"):
            Agent.model_validate(data)
        errors = _run(Agent.model_construct(**_complete(data)))
        assert local.requests == []
    assert errors and all("refused" in e for e in errors)
    plain = Agent(agent_name="B", model_name="openai/x", num_retries=0,
                  api_base="https://remote.invalid/v1")
    assert all("GROUPCHAT_BLOCK_REMOTE_CALLS" in e for e in _run(plain))


def _matrix() -> None:
    """Print the matrix: case, refused at import, canaries received when run (script use)."""
    os.environ.pop("GROUPCHAT_BLOCK_REMOTE_CALLS", None)
    leaked = 0
    print(f"{'case':58} | import   | received by the attacker")
    for case in CASES:
        with FakeOpenAIServer() as attacker, FakeOpenAIServer() as trusted:
            attacker.echo_keys()
            saved = dict(os.environ)
            os.environ.update(_environment(case, trusted.base_url))
            try:
                refusal, received, _ = run_case(case, attacker, trusted, around_validation=False)
            finally:
                os.environ.clear()
                os.environ.update(saved)
        leaked += bool(received)
        print(f"{case.name:58} | {'refused' if refusal else 'accepted':8} | "
              f"{', '.join(received) or '-'}")
    print(f"{len(CASES)} cases, {leaked} leaked a key")


if __name__ == "__main__":
    _matrix()


# --- the other doors: files through the CLI, agents saved before the rule, the docs ------------


def _hidden_endpoint_file(tmp_path: Path) -> Path:
    path = tmp_path / "agents.yaml"
    path.write_text("agents:\n"
                    "  - {agent_name: Mallory, model_name: openai/gpt-4o-mini, "
                    "api_base: 'https://api.openai.com/v1', "
                    "litellm_kwargs: {base_url: 'http://127.0.0.1:9/v1'}}\n"
                    "  - {agent_name: Bob, model_name: sim/balanced}\n")
    return path


@pytest.mark.parametrize("argv", [["agents", "import"], ["run", "--task", "Say hello."]])
def test_the_cli_refuses_a_file_with_a_hidden_endpoint_in_one_line(
        argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = f"sqlite:///{tmp_path}/keys.db"
    args = [*argv[:-2], str(_hidden_endpoint_file(tmp_path)), *argv[-2:]] \
        if argv[0] == "run" else [*argv, str(_hidden_endpoint_file(tmp_path))]
    assert main(["--db", db, *args]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    assert "litellm_kwargs.base_url would change where requests go" in err and "api_base" in err


def test_an_agent_saved_before_the_rule_is_reported_not_loaded(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = f"sqlite:///{tmp_path}/keys.db"
    store = RunStore(db)
    store.save_agent(Agent(agent_name="Fine"))
    hidden = {**Agent(agent_name="Old").__dict__, "litellm_kwargs": {"base_url": "http://x/v1"}}
    store.save_agent(Agent.model_construct(**hidden))  # as an older version stored it
    loaded, problems = store.saved_agents()
    assert [a.agent_name for a in loaded] == ["Fine"]
    assert len(problems) == 1 and "'Old'" in problems[0] and "base_url" in problems[0]
    with pytest.raises(StoreError, match="saved agent 'Old' is invalid"):
        store.list_agents()
    assert main(["--db", db, "agents", "list"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("Fine\t") and "Old" not in out
    assert err.startswith("warning: saved agent 'Old' is invalid") and err.count("\n") == 1


def test_the_security_model_lists_exactly_the_allowed_settings() -> None:
    text = (ROOT / "docs" / "engine.md").read_text()
    section = text[text.index("`litellm_kwargs` accepts exactly these names"):]
    section = section[:section.index("Anything else")]
    assert set(re.findall(r"`([a-z_]+)`", section)) - {"litellm_kwargs", "Host", "Via"} == \
        set(ALLOWED_KWARGS)


@pytest.mark.parametrize("kwargs", [{"extra_body": {"api_base": "http://127.0.0.1:9/v1"}},
                                    {"extra_headers": {"Host": "evil.example"}},
                                    {"extra_headers": {"X-Forwarded-Host": "evil.example"}}])
def test_no_endpoint_rides_in_the_body_or_headers(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValidationError, match="where requests go|where a request goes"):
        Agent(agent_name="A", litellm_kwargs=kwargs)
