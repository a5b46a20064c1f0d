"""Hostile providers over real HTTP: huge bodies and trickled replies never freeze the shared
loop, never reach the record, and every bid has a real deadline (issue 9 §4).

Private imports (`_bidding`, `engine._turn_loop`, `providers._model_calls`): units or test hooks
with no public name; everything public comes from the public API.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from pydantic import SecretStr

from groupchat_core import Agent, GroupChat, background_loop
from groupchat_core._bidding import MAX_MESSAGE_CHARS
from groupchat_core.engine import _turn_loop as turn_loop
from groupchat_core.providers._model_calls import default_bid_deadline
from groupchat_core.providers._replies import MAX_ERROR_CHARS

BIG = 10_000_000


def _completion(message: str) -> bytes:
    args = json.dumps({"score": 0.9, "message": message})
    call = {"id": "c1", "type": "function", "function": {"name": "respond", "arguments": args}}
    choice = {"index": 0, "finish_reason": "tool_calls",
              "message": {"role": "assistant", "content": None, "tool_calls": [call]}}
    return json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                       "choices": [choice],
                       "usage": {"prompt_tokens": 1, "completion_tokens": 1,
                                 "total_tokens": 2}}).encode()


class _Hold:
    """A hostile body held part-way until a probe on the shared loop has run (ordering, not
    timing): had reading the body held the loop, `resumed` would be [False] after 30 s."""

    def __init__(self) -> None:
        self.midway, self.go_on = threading.Event(), threading.Event()
        self.resumed: list[bool] = []

    async def probe(self) -> None:
        """On the shared loop: once the server has sent part of the body, let it go on."""
        while not self.midway.is_set():  # noqa: ASYNC110 - set by the server's thread
            await asyncio.sleep(0.005)
        self.go_on.set()


HOLD: list[_Hold] = []  # the hold armed by the running test, if any


class _Hostile(BaseHTTPRequestHandler):
    """Answers by model name: huge_error, huge_reply, long_message, trickle, hang, else ok."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, body: bytes, hold_at: int | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        hold = HOLD[0] if HOLD and hold_at is not None else None
        try:
            if hold is None:
                self.wfile.write(body)
                return
            try:
                self.wfile.write(body[:hold_at])  # below the client's cap: it waits for more
                self.wfile.flush()
            finally:
                hold.midway.set()
            hold.resumed.append(hold.go_on.wait(30))
            self.wfile.write(body[hold_at:])
        except OSError:  # the client stopped reading at its cap: that is the point
            pass

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        model = json.loads(raw).get("model", "")
        if model == "huge_error":
            message = "x" * BIG
            self._send(400, json.dumps({"error": {"message": message,
                                                  "type": "invalid_request_error"}}).encode(),
                       hold_at=4_000)  # the error body's cap is 8,000 bytes
        elif model == "huge_reply":
            self._send(200, _completion("y" * BIG), hold_at=64_000)  # the cap: 2 MB
        elif model == "long_message":
            self._send(200, _completion("z" * 100_000))
        elif model in ("trickle", "hang"):
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "100000")
            self.end_headers()
            try:
                for _ in range(1000):
                    if model == "trickle":
                        self.wfile.write(b" ")
                        self.wfile.flush()
                    time.sleep(0.3)
            except OSError:
                pass
        else:
            self._send(200, _completion(""))


@pytest.fixture(scope="module")
def hostile() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hostile)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def agent(base: str, name: str, model: str, **kw: Any) -> Agent:
    kw.setdefault("num_retries", 0)
    return Agent(agent_name=name, model_name=f"openai/{model}", api_base=base,
                 api_key=SecretStr("sk-hostile-test-0123456789"), **kw)


def beside_ok(base: str, model: str, **kw: Any) -> list[Agent]:
    """Agent A on the hostile `model`, agent B on an ordinary one."""
    return [agent(base, "A", model, **kw), agent(base, "B", "ok")]


def _run_held(chat: GroupChat) -> _Hold:
    """Run the chat with the hostile body held part-way until a probe on the shared loop ran."""
    hold = _Hold()
    HOLD[:] = [hold]
    try:
        background_loop().submit(hold.probe())
        chat.run("t")
    finally:
        HOLD.clear()
        hold.midway.set()  # a probe still waiting ends, and a held body goes on
        hold.go_on.set()
    return hold


def _warm(base: str) -> None:
    """One ordinary chat first, so first-call set-up (imports, clients) is not measured."""
    GroupChat(agents=[agent(base, "W1", "ok"), agent(base, "W2", "ok")]).run("warm up")


def test_a_10mb_error_body_fails_fast_without_blocking_the_loop(hostile: str) -> None:
    _warm(hostile)
    chat = GroupChat(agents=beside_ok(hostile, "huge_error"), bid_timeout=2)
    hold = _run_held(chat)
    # the loop ran other work while the body was half read (was blocked 43 s; see bench.hostile)
    assert hold.resumed == [True]
    bid = chat.last_run.bids[0]
    # failed on the error body itself within its 2 s deadline (else TimeoutError; was 44 s)
    assert bid.path == "none" and bid.error.startswith("BadRequestError"), bid.error
    assert len(bid.error) <= MAX_ERROR_CHARS + 40 and "characters cut)" in bid.error


def test_a_10mb_reply_is_refused_unread_and_never_stored(hostile: str) -> None:
    _warm(hostile)
    chat = GroupChat(agents=beside_ok(hostile, "huge_reply", num_retries=2), bid_timeout=2)
    hold = _run_held(chat)
    assert hold.resumed == [True]  # the loop was free while the body was half read
    bid = chat.last_run.bids[0]
    # refused at the cap within the 2 s deadline (else TimeoutError)
    assert bid.message == "" and bid.error.startswith("ResponseTooLarge: reply body larger")
    assert bid.calls == 1  # not retried: the same body would come back
    assert len(chat.last_run.model_dump_json()) < 20_000


def test_a_long_message_is_cut_and_the_bid_says_so(hostile: str) -> None:
    chat = GroupChat(agents=beside_ok(hostile, "long_message"), max_loops=2)
    chat.run("t")
    bid = chat.last_run.bids[0]
    assert len(bid.message) == MAX_MESSAGE_CHARS and bid.winner
    assert bid.error == "message cut to 20,000 characters (80,000 characters cut)"
    assert chat.last_run.messages[1].content == "z" * MAX_MESSAGE_CHARS


def test_a_trickling_server_cannot_hold_a_bid_without_bid_timeout(hostile: str) -> None:
    # Agent.timeout was per read (a byte every 0.3 s hung forever); now it bounds the request
    chat = GroupChat(agents=beside_ok(hostile, "trickle", timeout=1.0), bid_timeout=None)
    chat.run("t")
    bid = chat.last_run.bids[0]
    # the request's own deadline ended it (the message says which), not before 1 s
    assert "no complete reply within 1.0 s" in bid.error and bid.path == "none"
    assert bid.latency_ms / 1000 > 0.9


def test_an_unset_bid_timeout_is_still_a_total_deadline(
    hostile: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    a = agent(hostile, "A", "hang", timeout=30.0)
    assert default_bid_deadline(a) == 30.0 * (0 + 1 + 3)
    assert default_bid_deadline(a.model_copy(update={"num_retries": 2})) == 30.0 * 6 + 2 * 8.0
    monkeypatch.setattr(turn_loop, "default_bid_deadline", lambda agent: 0.5)
    chat = GroupChat(agents=[a, agent(hostile, "B", "ok")], bid_timeout=None)
    chat.run("t")
    bid = chat.last_run.bids[0]
    assert bid.error.startswith("TimeoutError: no bid within 0.5 s (bid_timeout unset")
    assert bid.latency_ms >= 450  # the deadline, not something sooner (0.5 s, timer slack)
