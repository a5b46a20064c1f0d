"""Hostile providers over real HTTP (issue 9 §4; issue 19 rows 2, 3, 4, 11): huge bodies,
trickles and floods end each bid with a clear error, never freeze the shared loop, never reach
the record, and every bid has a real deadline; a neighbour chat on the same loop completes.

Reached as `openai/`, `hosted_vllm/` (litellm's own HTTP handler) and `lm_studio/` (provider
not "openai"); the byte bounds also as `anthropic/` and `ollama_chat/`. Loop stalls are
measured in bench/hostile.py. Private imports (`_bidding`, `engine._turn_loop`,
`providers._litellm`, `_model_calls`, `_replies`, `_sse_coalesce`, `testing._hostile`): units or
test hooks with no public name.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from pydantic import SecretStr

from groupchat_core import (
    Agent,
    GroupChat,
    RunRecord,
    background_loop,
    bids_csv,
    hold_secrets,
    transcript_markdown,
)
from groupchat_core._bidding import MAX_MESSAGE_CHARS
from groupchat_core.engine import _turn_loop as turn_loop
from groupchat_core.providers._litellm import litellm_module
from groupchat_core.providers._model_calls import default_bid_deadline
from groupchat_core.providers._replies import MAX_ERROR_CHARS
from groupchat_core.providers._sse_coalesce import STREAM_TEXT_CAP
from groupchat_core.store import RunStore
from groupchat_core.testing import HostileServer
from groupchat_core.testing._hostile import FLOOD_DELTAS, FLOOD_MESSAGE, _completion
from tests.providers.conftest import Deltas, http_agent

ROUTES = ["openai", "hosted_vllm", "lm_studio"]
# Formats the hostile server does not speak: only the byte bounds (no format needed) apply.
OTHER_FORMATS = ["anthropic", "ollama_chat"]
AGENT_KEY = "sk-agent-canary-0123456789abcdefXYZ"
ENV_KEY = "env-canary-key-9876543210-qwerty"
HELD_KEY = "held-session-canary-5555-abcdef"  # another session's key the process holds
CANARIES = (AGENT_KEY, ENV_KEY, HELD_KEY)


@pytest.fixture(scope="module")
def hostile() -> Iterator[HostileServer]:
    with HostileServer(echo_values=(ENV_KEY, HELD_KEY)) as server:
        yield server


class Seen(Deltas):
    """Every event, deltas included."""

    wants = frozenset({"bid_delta", "bid_received", "message_posted", "run_finished"})

    def deltas(self, agent: str) -> list[str]:
        return [e.message for e in self if e.kind == "bid_delta" and e.agent == agent]


def agent(server: HostileServer, route: str, name: str, model: str, **kw: Any) -> Agent:
    kw.setdefault("num_retries", 0)
    return Agent(agent_name=name, model_name=f"{route}/{model}", api_base=server.base_url,
                 api_key=SecretStr(AGENT_KEY), **kw)


def run_beside_a_neighbour(server: HostileServer, route: str, chat: GroupChat,
                           ) -> tuple[RunRecord, RunRecord]:
    """Run `chat` beside an ordinary 4-message chat (on `route`, or openai/) on the shared loop."""
    route = route if route in ROUTES else "openai"
    neighbour = GroupChat(agents=[agent(server, route, "N1", "ok"),
                                  agent(server, route, "N2", "ok")], max_loops=4,
                          recency_penalty=0.0, threshold=0.3)

    async def both() -> tuple[RunRecord, RunRecord]:
        return await asyncio.gather(chat.arun_record("t"), neighbour.arun_record("t"))

    hostile_record, neighbour_record = background_loop().submit(both()).result()
    assert neighbour_record.stop_reason == "max_loops"
    assert [m.role for m in neighbour_record.messages][0] == "User"
    assert len(neighbour_record.messages) == 4
    assert all(m.content.startswith("fine from ok") for m in neighbour_record.messages[1:])
    return hostile_record, neighbour_record


def hostile_chat(server: HostileServer, route: str, model: str, *, stream: bool = False,
                 observer: Any = None, bid_timeout: float | None = 60, **kw: Any) -> GroupChat:
    return GroupChat(agents=[agent(server, route, "A", model, **kw),
                             agent(server, route, "B", "ok")],
                     max_loops=2, bid_timeout=bid_timeout, stream_bids=stream, threshold=0.3,
                     on_event=[observer] if observer is not None else [])


# --- a body held part-way: the shared loop stays free ------------------------------------------


class Hold(BaseHTTPRequestHandler):
    """Model huge_error (400) or huge_reply (200): sends part of a 10 MB body (below the client's
    cap, so it waits for more), then holds it until a probe on the shared loop ran (ordering,
    not timing): had reading the body held the loop, `resumed` would be [False] after 30 s."""

    protocol_version = "HTTP/1.1"
    midway, go_on = threading.Event(), threading.Event()
    resumed: list[bool] = []

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        model = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["model"]
        if model == "huge_error":  # the error body's cap is 8,000 bytes
            status, hold_at, body = 400, 4_000, json.dumps({"error": {
                "message": "x" * 10_000_000, "type": "invalid_request_error"}}).encode()
        else:  # huge_reply: the cap is 2 MB; ok: no hold
            status, hold_at = 200, 64_000 if model == "huge_reply" else None
            words = "y" * 10_000_000 if hold_at else ""
            body = _completion(json.dumps({"score": 0.9, "message": words}))
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            if hold_at is None:
                self.wfile.write(body)
                return
            try:
                self.wfile.write(body[:hold_at])
                self.wfile.flush()
            finally:
                self.midway.set()
            self.resumed.append(self.go_on.wait(30))
            self.wfile.write(body[hold_at:])
        except OSError:  # the client stopped reading at its cap: that is the point
            pass


@pytest.fixture(scope="module")
def held() -> Iterator[str]:
    """The holding server's base URL, after one ordinary chat (first-call set-up done)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), Hold)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                     daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/v1"
    GroupChat(agents=[http_agent(base, "W1", "ok"), http_agent(base, "W2", "ok")]).run("warm")
    yield base
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("model, refusal", [
    ("huge_error", "BadRequestError"), ("huge_reply", "ResponseTooLarge: reply body larger")])
def test_a_10mb_body_fails_fast_without_blocking_the_loop_and_is_never_stored(
        held: str, model: str, refusal: str) -> None:
    Hold.midway.clear()
    Hold.go_on.clear()
    Hold.resumed.clear()
    chat = GroupChat(agents=[http_agent(held, "A", model, num_retries=2),
                             http_agent(held, "B", "ok", num_retries=0)], bid_timeout=2)

    async def probe() -> None:  # on the shared loop: once half the body is sent, let it go on
        await asyncio.get_running_loop().run_in_executor(None, Hold.midway.wait, 30)
        Hold.go_on.set()

    background_loop().submit(probe())
    try:
        chat.run("t")
    finally:
        Hold.midway.set()
        Hold.go_on.set()
    # the loop ran other work while the body was half read (was blocked 43 s; bench.hostile)
    assert Hold.resumed == [True]
    bid = chat.last_run.bids[0]
    # failed on the body itself within its 2 s deadline (else TimeoutError; was 44 s)
    assert bid.error.startswith(refusal) and bid.message == "", bid.error
    assert bid.calls == 1  # not retried: the same body would come back
    assert len(chat.last_run.model_dump_json()) < 20_000


def test_an_unset_bid_timeout_is_still_a_total_deadline(
        hostile: HostileServer, monkeypatch: pytest.MonkeyPatch) -> None:
    a = agent(hostile, "openai", "A", "trickle", timeout=30.0)
    assert default_bid_deadline(a) == 30.0 * (0 + 1 + 3)
    assert default_bid_deadline(a.model_copy(update={"num_retries": 2})) == 30.0 * 6 + 2 * 8.0
    monkeypatch.setattr(turn_loop, "default_bid_deadline", lambda agent: 0.5)
    chat = GroupChat(agents=[a, agent(hostile, "openai", "B", "ok")], bid_timeout=None)
    chat.run("t")
    bid = chat.last_run.bids[0]
    assert bid.error.startswith("TimeoutError: no bid within 0.5 s (bid_timeout unset")
    assert bid.latency_ms >= 450  # the deadline, not something sooner (0.5 s, timer slack)


# --- every route ---------------------------------------------------------------------------------


@pytest.mark.parametrize("route", ROUTES + OTHER_FORMATS)
def test_a_10mb_error_body_is_cut_before_litellm_reads_it(hostile: HostileServer,
                                                          route: str) -> None:
    record, _ = run_beside_a_neighbour(hostile, route, hostile_chat(hostile, route, "huge_error"))
    bid = record.bids[0]
    assert bid.path == "none" and bid.error.startswith("BadRequestError"), bid.error
    assert len(bid.error) <= MAX_ERROR_CHARS + 40 and "characters cut)" in bid.error
    # litellm saw at most ERROR_BODY_CAP bytes: before, it built (and regex-scanned, on the
    # loop) a 10,000,000-character message for every route but openai/
    cut = int(bid.error.rsplit("(", 1)[1].split()[0].replace(",", ""))
    assert cut < 20_000, bid.error


@pytest.mark.parametrize("route", ROUTES + OTHER_FORMATS)
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_10mb_garbage_reply_is_refused_unread(hostile: HostileServer, route: str,
                                                stream: bool) -> None:
    chat = hostile_chat(hostile, route, "huge_reply", stream=stream, observer=Seen())
    record, _ = run_beside_a_neighbour(hostile, route, chat)
    bid = record.bids[0]
    assert bid.error.startswith("ResponseTooLarge: reply body larger than 2,000,000 bytes")
    assert bid.message == "" and bid.calls == 1


@pytest.mark.parametrize("route", ROUTES)
def test_a_50mb_stream_is_cut_at_the_stream_bound(hostile: HostileServer, route: str) -> None:
    chat = hostile_chat(hostile, route, "big_stream", stream=True, observer=Seen())
    record, _ = run_beside_a_neighbour(hostile, route, chat)
    bid = record.bids[0]
    assert bid.error == (f"ResponseTooLarge: streamed reply larger than {STREAM_TEXT_CAP:,} "
                         "characters; not read further (a bid reply is a few kilobytes)")
    assert len(record.model_dump_json()) < 50_000


@pytest.mark.parametrize("route", ROUTES)
def test_a_trickle_is_stopped_where_the_bytes_are_read(hostile: HostileServer,
                                                       route: str) -> None:
    # litellm's own timeout bounds each read; a byte every 0.2 s never trips it. The bounded
    # layer ends the request at its deadline even when litellm is called directly.
    async def direct() -> str:
        try:
            await asyncio.wait_for(litellm_module().acompletion(
                model=f"{route}/trickle", api_base=hostile.base_url, api_key=AGENT_KEY,
                messages=[{"role": "user", "content": "hi"}], timeout=1.0, max_retries=0),
                timeout=30)  # a guard for the old code, which never ended
        except TimeoutError:
            return "still reading after 30 s"
        except Exception as exc:
            return type(exc).__name__
        return "a reply"

    assert background_loop().submit(direct()).result() == "Timeout"
    # Agent.timeout was per read (this hung forever): now it bounds the request, bid_timeout
    # unset; the request's own deadline ended it (the message says which), not before 1 s
    chat = hostile_chat(hostile, route, "trickle", timeout=1.0, bid_timeout=None)
    bid = run_beside_a_neighbour(hostile, route, chat)[0].bids[0]
    assert "no complete reply within 1.0 s" in bid.error and bid.path == "none"
    assert bid.latency_ms / 1000 > 0.9


@pytest.mark.parametrize("route", ROUTES)
def test_a_flood_of_tiny_deltas_is_coalesced_and_arrives_whole(hostile: HostileServer,
                                                               route: str) -> None:
    seen = Seen()
    chat = hostile_chat(hostile, route, "flood", stream=True, observer=seen, timeout=60)
    record, _ = run_beside_a_neighbour(hostile, route, chat)
    bid = record.bids[0]
    assert bid.error is None and bid.path == "tool_call:stream"
    assert bid.message == FLOOD_MESSAGE[:MAX_MESSAGE_CHARS]
    deltas = seen.deltas("A")
    assert deltas[-1] == bid.message  # batched, never lost
    assert len(deltas) < FLOOD_DELTAS // 20  # was one event per changed delta (~20,000)


def _no_canary(text: str) -> None:
    for canary in CANARIES:
        for size in (8, len(canary)):  # not whole, and no 8-character piece of it either
            pieces = {canary[i:i + size] for i in range(len(canary) - size + 1)}
            assert not any(p in text for p in pieces), (canary, text[:300])


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_key_echoed_in_the_reply_is_masked_everywhere(
    hostile: HostileServer, route: str, stream: bool, tmp_path: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CANARY_API_KEY", ENV_KEY)
    hold_secrets([HELD_KEY])
    seen = Seen()
    chat = GroupChat(agents=[agent(hostile, route, "A", "echo"),
                             agent(hostile, route, "B", "echo")],
                     max_loops=2, stream_bids=stream, on_event=[seen], threshold=0.3)
    store = RunStore(f"sqlite:///{tmp_path / 'runs.db'}")
    recorder = store.attach(chat)
    record, _ = run_beside_a_neighbour(hostile, route, chat)
    recorder.flush()
    posted = record.messages[1].content
    assert posted == "I was sent *** and *** and *** today"
    assert record.bids[0].message == posted
    if stream:
        assert seen.deltas("A")  # deltas were shown, each masked, no key in part either
    _no_canary(json.dumps([e.model_dump(mode="json") for e in seen]))
    _no_canary(record.model_dump_json())
    _no_canary(bids_csv(store, record.run_id) + transcript_markdown(store, record.run_id))
    _no_canary((tmp_path / "runs.db").read_bytes().decode("latin-1"))


@pytest.mark.parametrize("route", ROUTES)
def test_a_stream_ended_by_done_mid_call_says_it_was_cut_off(hostile: HostileServer,
                                                             route: str) -> None:
    seen = Seen()
    chat = hostile_chat(hostile, route, "done_mid_call", stream=True, observer=seen)
    record, _ = run_beside_a_neighbour(hostile, route, chat)
    bid = record.bids[0]
    assert bid.error.startswith("unreadable: ")
    assert bid.error.endswith("(the stream was cut off: it ended mid tool call)"), bid.error
    assert seen.deltas("A")[-1] == "I was sa"  # what was seen, never posted


def test_a_key_one_chat_ran_with_is_masked_in_every_later_chat() -> None:
    # a Settings key reaches the engine on an agent; once a chat runs it, the process holds it,
    # so another chat whose provider echoes it (another user's room) never shows it
    earlier = "earlier-session-key-0123456789abcdef"  # no sk- shape: masked as held only
    with HostileServer(echo_values=(earlier,)) as server:
        first = GroupChat(agents=[
            Agent(agent_name="A", model_name="openai/ok", api_base=server.base_url,
                  api_key=SecretStr(earlier), num_retries=0),
            agent(server, "openai", "B", "ok")], max_loops=2, threshold=0.3)
        first.run("t")
        later = GroupChat(agents=[agent(server, "hosted_vllm", "C", "echo"),
                                  agent(server, "hosted_vllm", "D", "echo")],
                          max_loops=2, threshold=0.3)
        later.run("t")
    assert later.last_run.messages[1].content == "I was sent *** and *** today"
