"""Keys go only to the endpoint they belong to (issue 19, item 1).

Anyone may point a shared `openai/...` agent at their own server: a loopback provider echoing
the Authorization header must not get the canary OPENAI_API_KEY (nor may the store or an
export hold it), unless GROUPCHAT_TRUSTED_API_BASES lists it (so the two can be told apart).

Private imports (`providers._endpoints`, `providers._requests`): units with no public name.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from groupchat_core import (
    TRUSTED_BASES_ENV,
    Agent,
    GroupChat,
    bids_csv,
    bundle_json,
    endpoint_trusted,
    normalise_base,
    transcript_markdown,
)
from groupchat_core.cli import main
from groupchat_core.providers._endpoints import trusted_bases
from groupchat_core.store import RunStore
from groupchat_core.testing import FakeOpenAIServer, error
from tests.helpers.stores import release_store_engines

CANARY = "sk-canary-server-key-0123456789abcdef"
OWN_KEY = "sk-own-agent-key-fedcba9876543210"


@pytest.fixture
def hostile() -> Iterator[FakeOpenAIServer]:
    """A provider that answers every bid with the Authorization header it was sent."""
    with FakeOpenAIServer() as server:
        server.echo_keys()
        yield server


@pytest.fixture
def canary(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)  # after the suite strips *_API_KEY
    return CANARY


def _agents(base: str, **kw: object) -> list[Agent]:
    return [Agent(agent_name=n, model_name="openai/x", api_base=base, num_retries=0, **kw)
            for n in ("Mallory", "Bob")]


def _sent(server: FakeOpenAIServer) -> list[str]:
    return [r.headers.get("authorization", "") for r in server.requests]


def _stored_bytes(folder: Path) -> bytes:
    release_store_engines()  # close pooled connections so the WAL is in the files we read
    return b"".join(p.read_bytes() for p in folder.iterdir() if p.name.startswith("keys.db"))


def _run(base: str, folder: Path, **kw: object) -> tuple[RunStore, str]:
    store = RunStore(f"sqlite:///{folder}/keys.db")
    chat = GroupChat(agents=_agents(base, **kw), max_loops=2)
    store.attach(chat)
    chat.run("Say hello.")
    assert chat.last_run is not None
    return store, chat.last_run.run_id


def _room(folder: Path, base: str) -> str:
    """A room file of two agents at `base`; its path."""
    spec = folder / "room.json"
    spec.write_text(json.dumps({"max_loops": 2, "agents": [
        {"agent_name": n, "model_name": "openai/x", "api_base": base, "num_retries": 0}
        for n in ("Mallory", "Bob")]}))
    return str(spec)


def _exports(store: RunStore, run_id: str) -> str:
    return bundle_json(store, run_id) + bids_csv(store, run_id) + transcript_markdown(store,
                                                                                        run_id)


# --- the normaliser ---------------------------------------------------------------------------


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


# --- the Python API ---------------------------------------------------------------------------


def test_an_untrusted_base_gets_no_server_key_and_nothing_stores_it(
        hostile: FakeOpenAIServer, canary: str, tmp_path: Path) -> None:
    store, run_id = _run(hostile.base_url, tmp_path)
    sent = _sent(hostile)
    assert sent and all(canary not in s for s in sent), "the server key reached the endpoint"
    assert set(sent) == {"Bearer no-key"}  # a placeholder, so litellm cannot fall back to env
    messages = store.load_run(run_id).messages
    assert any("You sent me no-key" in m.content for m in messages)  # the echo arrived
    assert canary not in _exports(store, run_id)
    assert canary.encode() not in _stored_bytes(tmp_path)


@pytest.mark.parametrize("trusted, own, key", [(True, None, CANARY), (False, OWN_KEY, OWN_KEY)],
                         ids=["a trusted base gets the server key", "the agent's own key goes"])
def test_a_key_goes_where_it_belongs(hostile: FakeOpenAIServer, canary: str, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch, trusted: bool,
                                     own: str | None, key: str) -> None:
    if trusted:
        monkeypatch.setenv(TRUSTED_BASES_ENV, hostile.base_url + "/")
    _run(hostile.base_url, tmp_path, **({"api_key": own} if own else {}))
    assert set(_sent(hostile)) == {f"Bearer {key}"}
    if own:
        assert canary.encode() not in _stored_bytes(tmp_path)


def test_an_untrusted_endpoint_that_wants_a_key_says_how_to_give_one(
        canary: str, tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        server.set_responder(None, lambda body: error(401, "Incorrect API key provided"))
        base = server.base_url
        chat = GroupChat(agents=_agents(base), max_loops=2)
        chat.run("Say hello.")
    record = chat.last_run
    assert record is not None
    assert {b.agent for b in record.bids} == {"Mallory", "Bob"}
    for bid in record.bids:
        text = bid.error or ""
        assert "\n" not in text
        assert text.startswith(f"UntrustedEndpoint: agent {bid.agent!r} points at untrusted "
                               f"api_base {base}: no server key is sent there; give "
                               "a key for it in Settings")
        assert TRUSTED_BASES_ENV in text and "AuthenticationError" in text


# --- the CLI ----------------------------------------------------------------------------------


def test_the_cli_sends_no_server_key_to_an_untrusted_base(
        hostile: FakeOpenAIServer, canary: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    db = f"sqlite:///{tmp_path}/keys.db"
    assert main(["--db", db, "run", _room(tmp_path, hostile.base_url), "--task", "Say hello."]
                ) == 0
    run_id = RunStore(db).list_runs()["run_id"].iloc[0]
    outputs = []
    for fmt in ("json", "csv", "md"):
        out = tmp_path / f"export.{fmt}"
        assert main(["--db", db, "export", run_id, "--format", fmt, "-o", str(out)]) == 0
        outputs.append(out.read_text())
    printed = capsys.readouterr()
    sent = _sent(hostile)
    assert sent and all(canary not in s for s in sent)
    assert "You sent me no-key" in printed.out  # the hostile echo was printed, without a key
    for text in (*outputs, printed.out, printed.err):
        assert canary not in text
    assert canary.encode() not in _stored_bytes(tmp_path)


def test_the_cli_sends_the_key_to_a_trusted_base(
        hostile: FakeOpenAIServer, canary: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TRUSTED_BASES_ENV, hostile.base_url)
    assert main(["--db", f"sqlite:///{tmp_path}/keys.db", "run",
                 _room(tmp_path, hostile.base_url), "--task", "t", "--quiet"]) == 0
    assert set(_sent(hostile)) == {f"Bearer {canary}"}


# --- every provider, not only openai/ ---------------------------------------------------------


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
    from groupchat_core.providers._requests import request_kwargs

    agent = Agent(agent_name="A", model_name=model, api_base=base)
    sent = request_kwargs(agent, [{"role": "user", "content": "hi"}], "forced")
    assert sent.get("api_key") == key
