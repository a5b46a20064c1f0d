"""Every litellm route against a hostile server on loopback (issue 19 rows 2, 3, 4, 11).

Reached as `openai/`, `hosted_vllm/` (litellm's own HTTP handler) and `lm_studio/` (provider
not "openai"); the byte bounds also as `anthropic/` and `ollama_chat/`. Each bid ends with a
clear error (the flood: its full text) while a neighbour chat on the same loop completes.
Loop stalls are measured in bench/hostile.py, not here.

Private imports (`_bidding`, `providers._litellm`, `_replies`, `_sse_coalesce`,
`testing._hostile`): units or test hooks with no public name.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
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
from groupchat_core.providers._litellm import litellm_module
from groupchat_core.providers._replies import MAX_ERROR_CHARS
from groupchat_core.providers._sse_coalesce import STREAM_TEXT_CAP
from groupchat_core.store import RunStore
from groupchat_core.testing import HostileServer
from groupchat_core.testing._hostile import FLOOD_DELTAS, FLOOD_MESSAGE

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


class Seen:
    """Every event, deltas included."""

    wants = frozenset({"bid_delta", "bid_received", "message_posted", "run_finished"})

    def __init__(self) -> None:
        self.events: list[Any] = []
        self.lock = threading.Lock()

    def __call__(self, event: Any) -> None:
        with self.lock:
            self.events.append(event)

    def deltas(self, agent: str) -> list[str]:
        return [e.message for e in self.events if e.kind == "bid_delta" and e.agent == agent]


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
                 observer: Any = None, **kw: Any) -> GroupChat:
    return GroupChat(agents=[agent(server, route, "A", model, **kw),
                             agent(server, route, "B", "ok")],
                     max_loops=2, bid_timeout=60, stream_bids=stream, threshold=0.3,
                     on_event=[observer] if observer is not None else [])


@pytest.mark.parametrize("route", ROUTES + OTHER_FORMATS)
def test_a_10mb_error_body_is_cut_before_litellm_reads_it(hostile: HostileServer,
                                                          route: str) -> None:
    record, _ = run_beside_a_neighbour(hostile, route, hostile_chat(hostile, route, "huge_error"))
    bid = record.bids[0]
    assert bid.path == "none" and bid.error.startswith("BadRequestError"), bid.error
    assert len(bid.error) <= MAX_ERROR_CHARS + 40
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
    chat = hostile_chat(hostile, route, "trickle", timeout=1.0)
    record, _ = run_beside_a_neighbour(hostile, route, chat)
    assert "no complete reply within 1.0 s" in record.bids[0].error


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
    _no_canary(json.dumps([e.model_dump(mode="json") for e in seen.events]))
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
