"""The delta gate and the SSE coalescer, unit by unit (issue 19 rows 3, 4; over HTTP:
test_hostile_routes.py). Private imports: units with no public name."""

from __future__ import annotations

import json
from collections.abc import Iterable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groupchat_core.providers._bodies import ResponseTooLarge
from groupchat_core.providers._delta_gate import EVENTS_PER_SECOND, DeltaGate
from groupchat_core.providers._sse_coalesce import STREAM_TEXT_CAP, SSECoalescer

KEY = "sk-live-split-across-deltas-0123456789"


def gate_for(secrets: list[str]) -> tuple[DeltaGate, list[str], list[float]]:
    """A gate holding `secrets`; the messages it sent; its clock (`clock[0]`)."""
    sent: list[str] = []
    clock = [0.0]
    gate = DeltaGate(lambda score, message: sent.append(message), secrets, lambda: clock[0])
    return gate, sent, clock


def feed(gate: DeltaGate, clock: list[float], pieces: Iterable[str]) -> None:
    for piece in pieces:
        clock[0] += 1.0  # always due
        gate.send(0.5, piece)


def test_a_key_split_across_deltas_is_never_shown_even_in_part() -> None:
    gate, sent, clock = gate_for([KEY])
    text = f"my key is {KEY} ok then"
    feed(gate, clock, (text[:end] for end in range(1, len(text) + 1)))
    gate.send(0.5, text, final=True)
    assert sent[-1] == "my key is *** ok then"
    for message in sent:
        assert not any(KEY[:n] in message for n in range(3, len(KEY) + 1)), message


def test_a_short_reply_streams_while_a_long_key_is_held() -> None:
    """Only a tail that begins a held key waits (holding its length back showed nothing)."""
    gate, sent, clock = gate_for([KEY])
    text = "Every word reaches the screen."
    feed(gate, clock, (text[:end] for end in range(1, len(text) + 1)))
    assert sent[:4] == ["", "Every ", "Every word ", "Every word reaches "]
    # a secret with spaces: its start is more than one word
    gate, sent, clock = gate_for(["open sesame, now"])
    feed(gate, clock, ("say open ses", "say open sesame, no", "say open sesame, not"))
    assert sent == ["say ", "say open sesame, "]


@settings(max_examples=200, deadline=None)
@given(before=st.text(alphabet="sk-live 0123 ab", max_size=30),
       after=st.text(alphabet="sk-live 0123 ab", max_size=30),
       cuts=st.lists(st.integers(min_value=0, max_value=120), max_size=12))
def test_every_shown_message_is_a_prefix_of_the_masked_whole(before: str, after: str,
                                                             cuts: list[int]) -> None:
    """However split, each event is a prefix of the final masked message (nothing taken back)."""
    gate, sent, clock = gate_for([KEY])
    text = before + KEY + after
    feed(gate, clock, (text[:end] for end in sorted({min(c, len(text)) for c in cuts})))
    gate.send(0.5, text, final=True)
    final = sent[-1]
    assert KEY not in final
    assert all(final.startswith(shown) for shown in sent), (sent, final)


def test_the_budget_batches_events_and_the_final_one_is_always_sent() -> None:
    gate, sent, clock = gate_for([])
    words = [f"w{i} " for i in range(1000)]
    for i in range(1000):  # 1,000 deltas within one second
        clock[0] = i / 1000
        if gate.due():
            gate.send(None, "".join(words[: i + 1]))
    gate.send(None, "".join(words), final=True)
    assert len(sent) <= EVENTS_PER_SECOND + 1
    assert sent[-1] == "".join(words)


def _event(arguments: str | None = None, finish: str | None = None, chunk_id: str = "x") -> bytes:
    delta = {} if arguments is None else {"tool_calls": [{"index": 0, "function": {
        "arguments": arguments}}]}
    data = {"id": chunk_id, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(data).encode() + b"\n\n"


def _arguments(body: bytes) -> list[str | None]:
    out: list[str | None] = []
    for event in body.split(b"\n\n")[:-1]:
        payload = event[len(b"data: "):]
        if payload == b"[DONE]":
            out.append("[DONE]")
            continue
        delta = json.loads(payload)["choices"][0]["delta"]
        out.append(delta["tool_calls"][0]["function"]["arguments"] if delta else None)
    return out


def test_runs_of_text_deltas_merge_and_everything_else_passes_in_order() -> None:
    body = b"".join([_event("a"), _event("b"), _event("c"), _event(finish="tool_calls"),
                     _event("d"), b"data: [DONE]\n\n"])
    coalescer = SSECoalescer(ResponseTooLarge)
    out = coalescer.feed(body[:-5]) + coalescer.feed(body[-5:]) + coalescer.flush()
    assert _arguments(out) == ["abc", None, "d", "[DONE]"]


def test_a_partial_event_waits_for_its_end_and_crlf_bodies_pass_untouched() -> None:
    coalescer = SSECoalescer(ResponseTooLarge)
    event = _event("a")
    assert coalescer.feed(event[:10]) == b""
    assert _arguments(coalescer.feed(event[10:])) == ["a"]
    crlf = SSECoalescer(ResponseTooLarge)
    raw = event.replace(b"\n", b"\r\n")
    assert crlf.feed(raw) + crlf.flush() == raw


def test_a_stream_carries_a_bounded_amount_of_text() -> None:
    coalescer = SSECoalescer(ResponseTooLarge)
    with pytest.raises(ResponseTooLarge, match="400,000 characters"):
        coalescer.feed(_event("x" * (STREAM_TEXT_CAP + 1)))
