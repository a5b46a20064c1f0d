"""Keys never leave the process (issue 9, §3).

A hostile local provider echoes every request header (Authorization included) in its 401 body,
as real providers do with "Incorrect API key provided: ...". The key comes from the environment
(OPENAI_API_KEY, as the README recommends), from api_key=, or from litellm_kwargs headers; none
of them may reach a bid, a run record, the store, an export, a log line or the CLI's output.

Private imports (`_secrets`): units or test hooks with no public name; everything public comes from
the public API.
"""

from __future__ import annotations

import copy
import json
import logging
import os
import pickle
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from groupchat_core import (
    Agent,
    ChatSpec,
    ConfigError,
    GroupChat,
    bids_csv,
    bundle_json,
    dump_agents,
    dump_spec,
    load_spec_text,
    transcript_markdown,
)
from groupchat_core._secrets import (
    MIN_SECRET_LENGTH,
    ScrubFilter,
    is_credential_env_name,
    is_secret_name,
    scrub,
)
from groupchat_core.store import RunStore
from tests.helpers import ROOT
from tests.helpers.cli import run_cli

ENV_KEY = "sk-env-key-must-not-leak-0123456789"
AGENT_KEY = "sk-agent-key-must-not-leak-abcdef"
HEADER_SECRET = "hdr-secret-must-not-leak-42424242"
AZURE_TOKEN = "azure-ad-token-must-not-leak-777"
ALL_SECRETS = (ENV_KEY, AGENT_KEY, HEADER_SECRET, AZURE_TOKEN)


class _EchoHandler(BaseHTTPRequestHandler):
    """Answers every request with a 401 whose message echoes all request headers."""

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        echoed = "; ".join(f"{k}: {v}" for k, v in self.headers.items())
        body = json.dumps({"error": {
            "message": f"Incorrect API key provided. You sent: {echoed}",
            "type": "invalid_request_error", "code": "invalid_api_key"}}).encode()
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@pytest.fixture
def echo_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The echoing server, trusted (GROUPCHAT_TRUSTED_API_BASES) so the environment's key is
    sent there and the scrubbing of what it echoes is tested (test_endpoint_keys.py: an
    untrusted base never gets that key)."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _EchoHandler)
    base = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    monkeypatch.setenv("GROUPCHAT_TRUSTED_API_BASES", base)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


@pytest.fixture
def env_key(monkeypatch: pytest.MonkeyPatch) -> str:
    # set after the suite's autouse fixture, which strips *_API_KEY
    monkeypatch.setenv("OPENAI_API_KEY", ENV_KEY)
    monkeypatch.setenv("AZURE_AD_TOKEN", AZURE_TOKEN)
    return ENV_KEY


def _agent(base: str, name: str, **kw: object) -> Agent:
    return Agent(agent_name=name, model_name=f"openai/{name.lower()}", api_base=base,
                 num_retries=0, **kw)


def _assert_clean(text: str, where: str) -> None:
    for secret in ALL_SECRETS:
        assert secret not in text, f"{secret!r} leaked into {where}"


# --- the scrubber itself ----------------------------------------------------------------------


@pytest.mark.parametrize(("name", "credential"), [
    ("OPENAI_API_KEY", True), ("ANTHROPIC_API_KEY", True), ("AZURE_API_KEY", True),
    ("AZURE_OPENAI_AD_TOKEN", True), ("AWS_SECRET_ACCESS_KEY", True), ("HF_TOKEN", True),
    ("AWS_SESSION_TOKEN", True), ("VERTEX_CREDENTIALS", True), ("DB_PASSWORD", True),
    ("CLIENT_SECRET", True), ("MISTRAL_APIKEY", True), ("PATH", False), ("HOME", False),
    ("PWD", False), ("TOKENIZERS_PARALLELISM", False), ("KEYRING_BACKEND", False),
    ("LITELLM_LOCAL_MODEL_COST_MAP", False), ("GROUPCHAT_DB", False),
])
def test_credential_environment_names(name: str, credential: bool) -> None:
    assert is_credential_env_name(name) is credential


@pytest.mark.parametrize(("name", "secret"), [
    ("Authorization", True), ("api-key", True), ("X-Api-Key", True), ("azure_ad_token", True),
    ("aws_secret_access_key", True), ("client_secret", True), ("Cookie", True),
    ("vertex_credentials", True), ("top_p", False), ("max_tokens", False), ("seed", False),
    ("extra_headers", False), ("OpenAI-Organization", False), ("sim_latency", False),
])
def test_secret_kwarg_names(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret


def test_scrub_masks_environment_keys_agent_keys_headers_and_bearer_tokens(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOMEPROVIDER_API_KEY", ENV_KEY)
    agent = Agent(agent_name="A", api_key=AGENT_KEY)
    text = (f"401: {ENV_KEY} / {AGENT_KEY} / X-Custom-Auth: Bearer {HEADER_SECRET} / "
            "Authorization: Bearer eyJhbGciOi.unknown-token / key sk-unknownshape0123456789abcd")
    clean = scrub(text, [agent])
    for secret in (ENV_KEY, AGENT_KEY, HEADER_SECRET, "eyJhbGciOi", "sk-unknownshape"):
        assert secret not in clean
    assert clean.startswith("401: *** / *** / X-Custom-Auth: Bearer *** / Authorization: Bearer "
                            "***")


def test_short_dummy_keys_leave_error_text_intact(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    monkeypatch.setenv("LOCAL_TOKEN", "e" * (MIN_SECRET_LENGTH - 1))
    text = "litellm.ContextWindowExceededError: OpenAIException - context exceeded"
    assert scrub(text, [Agent(agent_name="A", api_key="x")]) == text


def test_the_longest_secret_is_masked_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("A_API_KEY", "abcdefgh")
    monkeypatch.setenv("B_API_KEY", "abcdefgh-and-more")
    assert scrub("got abcdefgh-and-more and abcdefgh") == "got *** and ***"


def test_log_records_are_scrubbed_including_tracebacks(
        env_key: str, caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("groupchat_core")
    assert any(isinstance(f, ScrubFilter) for f in logger.filters)
    with caplog.at_level(logging.INFO, logger="groupchat_core"):
        logger.info("provider said %s", f"bad key {env_key}")
        try:
            raise RuntimeError(f"Authorization: Bearer {env_key}")
        except RuntimeError:
            logger.exception("call failed")
    text = caplog.text + "".join(r.getMessage() + (r.exc_text or "") for r in caplog.records)
    _assert_clean(text, "the log")
    assert "bad key ***" in text and "RuntimeError" in text


# --- the key is kept in memory, never dumped; litellm_kwargs carries none -----------------------


def _keyed_agent() -> Agent:
    return Agent(agent_name="A", model_name="sim/balanced", api_key=AGENT_KEY, litellm_kwargs={
        "extra_headers": {"X-Trace": "keep-me"}, "top_p": 0.9})


@pytest.mark.parametrize("kwargs", [
    {"extra_headers": {"Authorization": f"Bearer {HEADER_SECRET}"}},
    {"extra_headers": {"X-Custom-Auth": HEADER_SECRET}},
    {"azure_ad_token": AZURE_TOKEN},
    {"extra_body": {"api_key": AZURE_TOKEN}},
])
def test_an_agent_in_code_cannot_carry_credentials_in_litellm_kwargs(kwargs: dict) -> None:
    """Issue 44: credentials have one door (api_key, Settings, the environment), in code too."""
    with pytest.raises(ValueError, match="credential") as info:
        Agent(agent_name="A", litellm_kwargs={**kwargs, "top_p": 0.5})
    assert HEADER_SECRET not in str(info.value) and AZURE_TOKEN not in str(info.value)
    assert next(iter(kwargs)) in str(info.value) and "api_key" in str(info.value)
    with pytest.raises(ValueError, match="litellm_kwargs") as info:  # spec data, not a file
        ChatSpec(agents=[{"agent_name": "A", "litellm_kwargs": kwargs}])
    assert HEADER_SECRET not in str(info.value) and AZURE_TOKEN not in str(info.value)


def test_every_dump_leaves_the_key_out() -> None:
    agent = _keyed_agent()
    spec = agent.to_spec()
    assert spec["litellm_kwargs"] == {"extra_headers": {"X-Trace": "keep-me"}, "top_p": 0.9}
    chat_spec = ChatSpec(agents=[agent])
    dumps = [json.dumps(spec), agent.model_dump_json(), json.dumps(agent.model_dump()),
             repr(agent), str(agent), dump_spec(chat_spec, "yaml"), dump_spec(chat_spec, "json"),
             json.dumps(chat_spec.to_data()), dump_agents([agent], "json"),
             dump_spec(GroupChat(agents=[agent, Agent(agent_name="B")]).to_spec())]
    for text in dumps:
        _assert_clean(text, "a dump")
        assert "keep-me" in text
    assert "api_key" not in agent.model_dump() and "api_key" not in spec
    assert "api_key" not in dump_spec(chat_spec, "yaml") + dump_spec(chat_spec, "json")
    assert agent.secret_key() == AGENT_KEY  # still usable for the call itself


@pytest.mark.parametrize("kwargs", [
    "{extra_headers: {X-Custom-Auth: Bearer SECRET}}",
    "{azure_ad_token: SECRET}",
    "{extra_headers: {Cookie: SECRET}}",
    "{vertex_credentials: SECRET}",
])
def test_a_spec_file_with_litellm_kwargs_secrets_is_rejected_without_echo(kwargs: str) -> None:
    value = kwargs.replace("SECRET", AZURE_TOKEN)
    text = f"agents:\n  - agent_name: A\n    litellm_kwargs: {value}\n"
    with pytest.raises(ConfigError, match="litellm_kwargs|secret") as info:
        load_spec_text(text)
    assert AZURE_TOKEN not in str(info.value)
    assert "environment" in str(info.value)


def test_pickling_an_agent_drops_its_key_and_deepcopy_keeps_it() -> None:
    agent = _keyed_agent()
    data = pickle.dumps(agent)
    assert AGENT_KEY.encode() not in data
    back = pickle.loads(data)
    assert back.api_key is None and back.agent_name == "A"
    assert back.litellm_kwargs == agent.litellm_kwargs
    twin = copy.deepcopy(agent)
    assert twin.secret_key() == AGENT_KEY
    assert twin.litellm_kwargs == agent.litellm_kwargs
    assert twin.litellm_kwargs is not agent.litellm_kwargs
    assert agent.model_copy(deep=True).secret_key() == AGENT_KEY
    assert agent.secret_key() == AGENT_KEY  # pickling left the original alone


# --- over real HTTP: a provider that echoes the key ---------------------------------------------


def test_an_echoed_environment_key_reaches_no_record_store_export_or_log(
        echo_server: str, env_key: str, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    store = RunStore(f"sqlite:///{tmp_path}/secrets.db")
    env_agent = _agent(echo_server, "Envy")  # the key comes from OPENAI_API_KEY
    own_key = _agent(echo_server, "Owner", api_key=AGENT_KEY)
    chat = GroupChat(agents=[env_agent, own_key], verbose=True)
    recorder = store.attach(chat)
    with caplog.at_level(logging.INFO, logger="groupchat_core"):
        chat.run("Say something.")
    recorder.flush()
    record = chat.last_run
    assert record is not None and record.stop_reason == "error"
    errors = [b.error or "" for b in record.bids]
    assert all("AuthenticationError" in e and "Bearer ***" in e for e in errors), errors
    _assert_clean(" ".join(errors), "bid.error")
    _assert_clean(record.error or "", "record.error")
    assert record.error and "Envy" in record.error

    run_id = record.run_id
    assert store.load_run(run_id).bids[0].error == errors[0]
    _assert_clean(bundle_json(store, run_id), "the bundle")
    _assert_clean(bids_csv(store, run_id), "the bids CSV")
    _assert_clean(transcript_markdown(store, run_id), "the Markdown transcript")
    _assert_clean(store.bids(run_id).to_string(), "the store's bid table")
    _assert_clean(json.dumps(store.run_info(run_id), default=str), "the store's run row")
    store.flush()
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("secrets.db*"))
    for secret in ALL_SECRETS:
        assert secret.encode() not in raw, f"{secret!r} is in the database file"
    _assert_clean(caplog.text, "the verbose log")
    assert "Envy" in caplog.text


def test_a_one_character_dummy_key_leaves_the_error_text_intact(echo_server: str) -> None:
    chat = GroupChat(agents=[_agent(echo_server, "A", api_key="x"),
                             _agent(echo_server, "B", api_key="x")])
    chat.run("Hi")
    error = chat.last_run.bids[0].error or ""
    assert "AuthenticationError" in error and "OpenAIException" in error
    assert "Incorrect API key provided" in error
    assert error.count("***") == 1  # only the echoed "Bearer x", nothing inside words
    assert "Bearer ***" in error


def test_cli_stderr_and_the_store_never_show_an_environment_key(
        echo_server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The run in a process of its own (the key only in its real environment); what reads the
    stored run back, in this one with the same environment."""
    spec = tmp_path / "chat.yaml"
    spec.write_text("agents:\n"
                    f"  - {{agent_name: A, model_name: openai/a, api_base: '{echo_server}', "
                    "num_retries: 0}\n"
                    f"  - {{agent_name: B, model_name: openai/b, api_base: '{echo_server}', "
                    "num_retries: 0}\n")
    env = {"OPENAI_API_KEY": ENV_KEY, "GROUPCHAT_DB": f"sqlite:///{tmp_path}/cli.db"}
    ran = subprocess.run([sys.executable, "-m", "groupchat_core", "run", str(spec), "--task",
                          "Say something."], cwd=ROOT, env={**os.environ, **env},
                         capture_output=True, text=True, timeout=120)
    assert ran.returncode == 1, ran.stderr
    assert "every bid failed" in ran.stderr and "AuthenticationError" in ran.stderr
    assert "Bearer ***" in ran.stderr
    _assert_clean(ran.stdout + ran.stderr, "CLI output of run")
    run_id = ran.stderr.split("run ", 1)[1].split()[0]
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    for args in (("show", run_id, "--bids"), ("export", run_id, "--format", "json"),
                 ("export", run_id, "--format", "csv"), ("export", run_id, "--format", "md"),
                 ("list",)):
        code, out, err = run_cli(capsys, *args)
        assert code == 0, err
        _assert_clean(out + err, f"CLI output of {args[0]}")
        if args[0] == "show":
            assert "AuthenticationError" in out


def test_a_key_typed_into_the_task_or_a_settings_text_is_masked_once_in_the_engine(
        tmp_path: Path):
    """The dashboard's session key sits on the agents (kit/providers.with_session_keys); typed
    into the task, the chat's name or its bid prompt, it reaches no event, record or store: the
    engine masks it before any observer, so the recorder needs no wrapper of its own."""
    session_key = "session-key-typed-by-mistake-31415926"
    agents = [Agent(agent_name=n, model_name="sim/eager", api_key=session_key) for n in "AB"]
    chat = GroupChat(agents=agents, max_loops=2, name=f"debate {session_key}",
                     bid_prompt=f"Bid. {session_key} {{threshold}}")
    seen: list = []
    chat.add_observer(seen.append)
    store = RunStore(f"sqlite:///{tmp_path}/runs.db")
    store.attach(chat)
    chat.run(f"Discuss this key: {session_key}")
    record = chat.last_run
    assert record.task == "Discuss this key: ***" and record.config["name"] == "debate ***"
    texts = [e.model_dump_json() for e in seen] + [record.model_dump_json(),
                                                   bundle_json(store, record.run_id)]
    assert seen and not [t for t in texts if session_key in t]
    assert store.load_run(record.run_id).task == "Discuss this key: ***"
