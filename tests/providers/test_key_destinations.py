"""Keys: checked before anything is spent (a sweep with no key once made 90 failing calls), and
sent only where they belong, by any door (issue 19 item 1; issue 44 point 1): a loopback attacker
records every header, per key source; a key hidden in `litellm_kwargs` is refused at import and
at bid time. `python -m tests.providers.test_key_destinations` prints the matrix.
Private imports (`_kwargs_policy`, `providers._credentials`, `_endpoints`, `_requests`): units.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr, ValidationError

from groupchat_core import (
    TRUSTED_BASES_ENV,
    Agent,
    ConfigError,
    GroupChat,
    StoreError,
    bids_csv,
    bundle_json,
    check_credentials,
    endpoint_trusted,
    normalise_base,
    transcript_markdown,
)
from groupchat_core._kwargs_policy import ALLOWED_KWARGS
from groupchat_core.cli import main
from groupchat_core.providers._credentials import is_credential_failure
from groupchat_core.providers._endpoints import trusted_bases
from groupchat_core.providers._requests import request_kwargs
from groupchat_core.store import RunStore
from groupchat_core.sweeps import parse_sweep, run_sweep
from groupchat_core.testing import FakeOpenAIServer, error
from groupchat_ui.kit.providers import endpoint_key_name, with_session_keys
from tests.helpers import ROOT
from tests.helpers.stores import release_store_engines

CANARY = "sk-canary-server-key-0123456789abcdef"


# --- keys checked before anything is spent ---------------------------------------------------


def test_a_missing_key_is_named_with_its_fix() -> None:
    """Alternative keys are all named (one key: test_the_cli_run_reports_every_missing_key_...)."""
    assert check_credentials([Agent(agent_name="G", model_name="gemini/gemini-pro")]) == [
        "agent 'G' uses gemini/gemini-pro but none of GOOGLE_API_KEY, GEMINI_API_KEY is set; set "
        "one or give the agent an api_key"]


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
        # a local OpenAI server gets a placeholder; an untrusted base no key (OPENAI_API_KEY
        # would not go there): only a trusted base needs one
        Agent(agent_name="Local", model_name="openai/smol", api_base="http://127.0.0.1:8080/v1"),
        Agent(agent_name="Remote", model_name="openai/smol", api_base="http://10.1.2.3/v1"),
    ]
    assert check_credentials(clear) == []
    monkeypatch.setenv("GROUPCHAT_TRUSTED_API_BASES", "http://10.1.2.3/v1")
    [problem] = check_credentials(clear)
    assert problem.startswith("agent 'Remote'") and "OPENAI_API_KEY" in problem
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    assert check_credentials([Agent(agent_name="Env", model_name="gpt-4o-mini")]) == []
    sims = [Agent(agent_name=n, model_name="sim/balanced") for n in ("A", "B")]
    assert GroupChat(agents=sims, max_loops=3).run("t")  # a sim run: never checked


def test_a_run_without_keys_raises_before_any_call(server: FakeOpenAIServer,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GROUPCHAT_TRUSTED_API_BASES", server.base_url)  # keys may go there
    chat = GroupChat(agents=[Agent(agent_name=n, model_name="anthropic/claude-3-5-haiku-20241022",
                                   api_base=server.base_url) for n in ("A", "B")])
    with pytest.raises(ConfigError) as info:
        chat.run("t")
    assert server.requests == [] and chat.last_run is None  # nothing was spent
    text = str(info.value)
    assert "\n" not in text and text.startswith("missing credentials (2 problems): ")
    assert "agent 'A'" in text and "agent 'B'" in text


def test_the_cli_run_reports_every_missing_key_on_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "chat.json"
    spec.write_text(json.dumps({"agents": [
        {"agent_name": "Critic", "model_name": "gpt-4o-mini"},
        {"agent_name": "Fan", "model_name": "sim/balanced"}]}))
    code = main(["--db", f"sqlite:///{tmp_path}/cli.db", "run", str(spec), "--task", "t",
                 "--quiet"])
    assert code == 2 and capsys.readouterr().err.strip().splitlines() == [
        "error: missing credentials: agent 'Critic' uses gpt-4o-mini but OPENAI_API_KEY is not "
        "set; set it or give the agent an api_key"]


def sweep_spec(agents: list[dict[str, Any]], concurrency: int = 2) -> Any:
    return parse_sweep({"name": "keys", "base": {"max_loops": 4, "agents": agents},
                        "grid": {"threshold": [round(0.01 * i, 2) for i in range(30)]},
                        "tasks": ["t"], "repeats": 1, "concurrency": concurrency,
                        "bid_cache": False})


def test_a_sweep_without_keys_is_refused_before_it_is_created(store: RunStore) -> None:
    agents = [{"agent_name": "A", "model_name": "gpt-4o-mini"},
              {"agent_name": "B", "model_name": "sim/balanced"}]
    with pytest.raises(ConfigError, match="agent 'A' uses gpt-4o-mini but OPENAI_API_KEY"):
        run_sweep(sweep_spec(agents), store)
    assert store.list_sweeps().empty and store.list_runs().empty


@pytest.fixture
def refusing(server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> FakeOpenAIServer:
    """A trusted server refusing the key in the environment (which passes the check)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong-key")
    monkeypatch.setenv("GROUPCHAT_TRUSTED_API_BASES", server.base_url)  # the key goes there
    server.set_responder(None, lambda body: error(401, "Incorrect API key provided: sk-w***"))
    return server


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


# --- the endpoint a key may go to --------------------------------------------------------------


@pytest.fixture
def echo(server: FakeOpenAIServer) -> FakeOpenAIServer:
    """A provider that answers every bid with the Authorization header it was sent."""
    server.echo_keys()
    return server


def _agents(base: str, **kw: object) -> list[Agent]:
    return [Agent(agent_name=n, model_name="openai/x", api_base=base, num_retries=0, **kw)
            for n in ("Mallory", "Bob")]


def _sent(server: FakeOpenAIServer) -> list[str]:
    return [r.headers.get("authorization", "") for r in server.requests]


def _stored_bytes(folder: Path) -> bytes:
    release_store_engines()  # close pooled connections so the WAL is in the files we read
    return b"".join(p.read_bytes() for p in folder.iterdir() if p.name.startswith("keys.db"))


@pytest.mark.parametrize(("url", "normal"), [
    ("https://api.openai.com/v1", "https://api.openai.com:443/v1"),
    ("https://API.OpenAI.com/v1/", "https://api.openai.com:443/v1"),  # case, trailing slash
    ("https://api.openai.com:443/v1", "https://api.openai.com:443/v1"),  # explicit port
    ("http://127.0.0.1:8000/v1//", "http://127.0.0.1:8000/v1"),
    ("http://[::1]:8000/v1", "http://[::1]:8000/v1"),
    ("https://api.openai.com@evil.example/v1", None),  # user info: the host is evil.example
    ("https://user:pw@api.openai.com/v1", None),
    ("https://api.openai.com/v1?x=1", None), ("https://api.openai.com/v1#frag", None),
    ("ftp://api.openai.com/v1", None), ("api.openai.com/v1", None), ("", None), (None, None),
    ("https://api.openai.com:99999/v1", None), ("https://api.openai.com:abc/v1", None),
])
def test_bases_are_normalised_or_refused(url: str | None, normal: str | None) -> None:
    assert normalise_base(url) == normal


@pytest.mark.parametrize(("base", "trusted"), [
    (None, True), ("", True),  # the provider's own default endpoint
    ("https://api.openai.com/v1", True), ("https://api.openai.com/v1/", True),
    ("https://api.openai.com", True), ("https://API.OPENAI.COM:443/v1", True),
    ("http://api.openai.com/v1", False),  # plain http is another endpoint
    ("https://api.openai.com:8443/v1", False),  # another port
    ("https://api.openai.com.evil.example/v1", False),  # a suffix is another host
    ("https://evil.api.openai.com/v1", False),  # a subdomain is another host
    ("https://api.openai.com@evil.example/v1", False),  # user info
    ("https://api.openai.com/v1/evil", False), ("https://api.openai.com/v", False),
    ("https://evil.example/api.openai.com/v1", False),
    ("https://api.anthropic.com/v1", False),  # another provider's endpoint
    ("http://127.0.0.1:8000/v1", False),  # loopback is not trusted by default either
])
def test_only_the_providers_own_endpoint_is_trusted_by_default(base: str | None,
                                                               trusted: bool) -> None:
    assert endpoint_trusted("openai/gpt-4o-mini", base, environ={}) is trusted


def test_the_admin_list_is_compared_exactly() -> None:
    env = {TRUSTED_BASES_ENV: " http://127.0.0.1:8000/v1/ , https://proxy.corp.example/llm,"
                              "https://user@bad.example/v1, not a url"}
    assert trusted_bases(env) == {"http://127.0.0.1:8000/v1", "https://proxy.corp.example:443/llm"}
    for base, trusted in [("http://127.0.0.1:8000/v1", True), ("http://localhost:8000/v1", False),
                          ("http://127.0.0.1:8001/v1", False), ("https://127.0.0.1:8000/v1", False),
                          ("https://proxy.corp.example:443/llm/", True),
                          ("https://proxy.corp.example/llm2", False),
                          ("https://proxy.corp.example/llm/sub", False),
                          ("https://bad.example/v1", False)]:
        assert endpoint_trusted("openai/x", base, environ=env) is trusted, base


@pytest.mark.parametrize("env, trusted, own, key", [
    (CANARY, False, None, "no-key"), (None, False, None, "no-key"), (CANARY, True, None, CANARY),
    (CANARY, False, "sk-own-agent-key-fedcba9876543210", "sk-own-agent-key-fedcba9876543210"),
], ids=["untrusted: a placeholder", "no key at all: a placeholder", "trusted: the server key",
        "the agent's own key"])
def test_a_key_goes_only_where_it_belongs(
        echo: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        env: str | None, trusted: bool, own: str | None, key: str) -> None:
    if env:
        monkeypatch.setenv("OPENAI_API_KEY", env)  # after the suite strips *_API_KEY
    if trusted:
        monkeypatch.setenv(TRUSTED_BASES_ENV, echo.base_url + "/")
    store = RunStore(f"sqlite:///{tmp_path}/keys.db")
    chat = GroupChat(agents=_agents(echo.base_url, **({"api_key": own} if own else {})),
                     max_loops=2)
    store.attach(chat)
    chat.run("Say hello.")
    # a placeholder at an untrusted base, so litellm cannot fall back to the env key
    assert set(_sent(echo)) == {f"Bearer {key}"}
    if key == "no-key":
        messages = store.load_run(chat.last_run.run_id).messages
        assert any("You sent me no-key" in m.content for m in messages)  # the echo arrived
    if key != CANARY:
        run_id = chat.last_run.run_id
        assert CANARY not in bundle_json(store, run_id) + bids_csv(store, run_id) + \
            transcript_markdown(store, run_id)
        assert CANARY.encode() not in _stored_bytes(tmp_path)


def test_an_untrusted_endpoint_that_wants_a_key_says_how_to_give_one(
        server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    server.set_responder(None, lambda body: error(401, "Incorrect API key provided"))
    chat = GroupChat(agents=_agents(server.base_url), max_loops=2)
    chat.run("Say hello.")
    assert {b.agent for b in chat.last_run.bids} == {"Mallory", "Bob"}
    for bid in chat.last_run.bids:
        text = bid.error or ""
        assert "\n" not in text
        assert text.startswith(f"UntrustedEndpoint: agent {bid.agent!r} points at untrusted "
                               f"api_base {server.base_url}: no server key is sent there; give "
                               "a key for it in Settings")
        assert TRUSTED_BASES_ENV in text and "AuthenticationError" in text


@pytest.mark.parametrize("trusted", [False, True])
def test_the_cli_sends_the_server_key_only_to_a_trusted_base(
        echo: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], trusted: bool) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    if trusted:
        monkeypatch.setenv(TRUSTED_BASES_ENV, echo.base_url)
    db, spec = f"sqlite:///{tmp_path}/keys.db", tmp_path / "room.json"
    spec.write_text(json.dumps({"max_loops": 2, "agents": [
        {"agent_name": n, "model_name": "openai/x", "api_base": echo.base_url, "num_retries": 0}
        for n in ("Mallory", "Bob")]}))
    assert main(["--db", db, "run", str(spec), "--task", "Say hello."]) == 0
    if trusted:
        assert set(_sent(echo)) == {f"Bearer {CANARY}"}
        return
    run_id = RunStore(db).list_runs()["run_id"].iloc[0]
    outputs = []
    for fmt in ("json", "csv", "md"):
        out = tmp_path / f"export.{fmt}"
        assert main(["--db", db, "export", run_id, "--format", fmt, "-o", str(out)]) == 0
        outputs.append(out.read_text())
    printed = capsys.readouterr()
    assert set(_sent(echo)) == {"Bearer no-key"}
    assert "You sent me no-key" in printed.out  # the hostile echo was printed, without a key
    for text in (*outputs, printed.out, printed.err):
        assert CANARY not in text
    assert CANARY.encode() not in _stored_bytes(tmp_path)


@pytest.mark.parametrize(("model", "base", "key"), [
    ("anthropic/claude-3-5-haiku-latest", "https://evil.example/v1", "no-key"),
    ("hosted_vllm/m", "https://evil.example/v1", "no-key"),
    ("ollama/llama3", "http://127.0.0.1:11434", "no-key"),
    ("anthropic/claude-3-5-haiku-latest", None, None),  # its own endpoint: litellm's env key
    ("anthropic/claude-3-5-haiku-latest", "https://api.anthropic.com", None),
    ("gpt-4o-mini", "https://api.openai.com/v1", None),
    ("gpt-4o-mini", "https://api.openai.com.evil.example/v1", "no-key"),
])
def test_every_provider_gets_the_placeholder_at_an_untrusted_base(
        model: str, base: str | None, key: str | None) -> None:
    agent = Agent(agent_name="A", model_name=model, api_base=base)
    sent = request_kwargs(agent, [{"role": "user", "content": "hi"}], "forced")
    assert sent.get("api_key") == key


# --- endpoints hidden in the settings ----------------------------------------------------------


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
        # the fake servers answer at once: the timeout only ends a hang (5 s once ran out on
        # a loaded machine before litellm's first Azure call was sent, failing the case)
        data: dict[str, Any] = {"agent_name": "Mallory", "model_name": self.model,
                                "num_retries": 0, "timeout": 120.0}
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


SOURCE_ENV = {
    "aws": {"AWS_ACCESS_KEY_ID": AWS_KEY_ID, "AWS_SECRET_ACCESS_KEY": AWS_SECRET,
            "AWS_REGION_NAME": "us-east-1", "AWS_REGION": "us-east-1"},
    "azure": {"AZURE_API_KEY": AZURE_KEY, "AZURE_AD_TOKEN": AZURE_AD,
              "AZURE_API_VERSION": "2024-06-01"},
    "anthropic": {"ANTHROPIC_API_KEY": ANTHROPIC_KEY}}


def _environment(case: Case, trusted: str) -> dict[str, str]:
    return {TRUSTED_BASES_ENV: trusted, "OPENAI_API_KEY": ENV_KEY,
            **SOURCE_ENV.get(case.source, {})}


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
    headers = [" ".join(f"{k}: {v}" for k, v in r.headers.items()) for r in server.requests]
    return sorted({c for text in headers for c in CANARIES if c in text})


def _bid_errors(agent: Agent) -> list[str]:
    """Run one turn; the bid errors, one line each."""
    chat = GroupChat(agents=[agent, agent.model_copy(update={"agent_name": "Bob"})], max_loops=2)
    chat.run("Say hello.")
    return [b.error or "" for b in chat.last_run.bids]


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
    errors = _bid_errors(_with_keys(case, agent, trusted.base_url))
    return refusal, _received(attacker), errors


def _complete(fields: dict[str, Any]) -> dict[str, Any]:
    """Every field an Agent has, for model_construct (which validates nothing)."""
    return {**Agent(agent_name="x").__dict__, **fields}


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
    assert not any(c in e for e in errors for c in CANARIES)


def test_a_loopback_base_hiding_a_remote_one_is_blocked(server: FakeOpenAIServer,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A loopback api_base hiding a remote base_url neither imports nor runs (refused, unsent)."""
    monkeypatch.setenv("GROUPCHAT_BLOCK_REMOTE_CALLS", "1")
    data = {"agent_name": "A", "model_name": "openai/x", "api_base": server.base_url,
            "num_retries": 0, "litellm_kwargs": {"base_url": "https://remote.invalid/v1"}}
    with pytest.raises(ValidationError, match="litellm_kwargs.base_url would change where"):
        Agent.model_validate(data)
    errors = _bid_errors(Agent.model_construct(**_complete(data)))
    assert server.requests == [] and errors and all("refused" in e for e in errors)
    plain = Agent(agent_name="B", model_name="openai/x", num_retries=0,
                  api_base="https://remote.invalid/v1")
    assert all("GROUPCHAT_BLOCK_REMOTE_CALLS" in e for e in _bid_errors(plain))


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


if __name__ == "__main__":
    _matrix()
