"""A hostile OpenAI-compatible server on 127.0.0.1: what a broken or malicious provider sends.

Why: the engine's bounds (body caps, the whole-request deadline, delta coalescing, scrubbing)
are only proven against real bytes on a real socket, for every litellm route that can reach
such a server (`openai/`, `hosted_vllm/`, `lm_studio/`, ...). The behaviour is chosen by the
model name the request carries (the route's prefix is stripped by litellm), for streamed and
unstreamed requests alike:

- `ok`: a normal respond call (score 0.5, message "fine from <model>");
- `huge_error`: a 400 whose JSON error body is HUGE bytes;
- `huge_reply`: a 200 of HUGE bytes of garbage (not JSON, not SSE);
- `trickle`: a 200 whose body arrives one byte every 0.2 s, for minutes;
- `big_stream`: a valid SSE stream of 50 MB of respond-argument deltas;
- `flood`: a valid SSE stream of FLOOD_DELTAS one-character deltas (FLOOD_MESSAGE whole);
- `echo`: a respond call whose message echoes the request's bearer token and every value of
  `echo_values` (split across deltas when streamed);
- `done_mid_call`: a stream that sends half the respond arguments, then `[DONE]`.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

HUGE = 10_000_000
BIG_STREAM = 50_000_000
FLOOD_DELTAS = 20_000
_HEAD = '{"score": 0.5, "message": "'
_TAIL = '"}'
FLOOD_MESSAGE = ("".join(chr(ord("a") + i % 26) for i in range(FLOOD_DELTAS
                                                               - len(_HEAD) - len(_TAIL))))


def _completion(arguments: str) -> bytes:
    call = {"id": "c1", "type": "function",
            "function": {"name": "respond", "arguments": arguments}}
    choice = {"index": 0, "finish_reason": "tool_calls",
              "message": {"role": "assistant", "content": None, "tool_calls": [call]}}
    return json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                       "choices": [choice], "usage": {"prompt_tokens": 1,
                                                      "completion_tokens": 1,
                                                      "total_tokens": 2}}).encode()


def _event(arguments: str | None = None, *, first: bool = False,
           finish: str | None = None) -> bytes:
    call: dict[str, Any] = {"index": 0}
    if first:
        call.update(id="c1", type="function", function={"name": "respond", "arguments": ""})
    elif arguments is not None:
        call["function"] = {"arguments": arguments}
    delta = {"tool_calls": [call]} if (first or arguments is not None) else {}
    data = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(data, separators=(",", ":")).encode() + b"\n\n"


def _stream(fragments: Iterator[str], *, done: bool = True, finish: bool = True,
            ) -> Iterator[bytes]:
    yield _event(first=True)
    for fragment in fragments:
        yield _event(fragment)
    if finish:
        yield _event(finish="tool_calls")
    if done:
        yield b"data: [DONE]\n\n"


def _message_arguments(message: str) -> str:
    return json.dumps({"score": 0.5, "message": message})


class HostileServer:
    """A threaded HTTP server answering every POST by the request's model name (see above).

    `echo_values` are echoed by the `echo` model; `requests` counts the requests served.
    """

    def __init__(self, echo_values: tuple[str, ...] = ()) -> None:
        self.echo_values = echo_values
        self.requests = 0
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._server.owner = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)

    def start(self) -> HostileServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> HostileServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def echo_text(self, token: str) -> str:
        return "I was sent " + " and ".join((token, *self.echo_values)) + " today"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _head(self, status: int, kind: str, length: int | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        if length is None:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(length))
        self.end_headers()

    def _whole(self, status: int, body: bytes, kind: str = "application/json") -> None:
        self._head(status, kind, len(body))
        for start in range(0, len(body), 1 << 16):
            self.wfile.write(body[start:start + (1 << 16)])

    def _chunked(self, parts: Iterator[bytes], batch: int = 1 << 16) -> None:
        """SSE in chunked encoding, written in batches of about `batch` bytes."""
        self._head(200, "text/event-stream")
        pending: list[bytes] = []
        size = 0
        for part in parts:
            pending.append(part)
            size += len(part)
            if size >= batch:
                self._write_chunk(b"".join(pending))
                pending, size = [], 0
        if pending:
            self._write_chunk(b"".join(pending))
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.loads(raw or b"{}")
        owner: HostileServer = self.server.owner  # type: ignore[attr-defined]
        owner.requests += 1
        model = str(body.get("model", "")).rsplit("/", 1)[-1]
        token = self.headers.get("Authorization", "").partition(" ")[2]
        try:
            self._answer(model, bool(body.get("stream")), owner.echo_text(token))
        except OSError:  # the client stopped reading at its bound: that is the point
            self.close_connection = True

    def _answer(self, model: str, stream: bool, echo: str) -> None:
        if model == "huge_error":
            message = "x" * HUGE
            self._whole(400, json.dumps({"error": {"message": message,
                                                   "type": "invalid_request_error"}}).encode())
        elif model == "huge_reply":
            self._whole(200, b"garbage " * (HUGE // 8))
        elif model == "trickle":
            self._head(200, "application/json", 100_000)
            for _ in range(100_000):
                self.wfile.write(b" ")
                self.wfile.flush()
                time.sleep(0.2)
        elif model == "big_stream":
            piece = "a" * 60_000
            fragments = iter([_HEAD, *([piece] * (BIG_STREAM // len(piece))), _TAIL])
            self._chunked(_stream(fragments))
        elif model == "flood":
            self._chunked(_stream(iter(_HEAD + FLOOD_MESSAGE + _TAIL)))
        elif model == "done_mid_call":
            self._chunked(_stream(iter([_HEAD, "I was sa"]), finish=False))
        elif model == "echo" and stream:
            arguments = _message_arguments(echo)
            self._chunked(_stream(iter(arguments[i:i + 3]
                                       for i in range(0, len(arguments), 3))))
        elif model == "echo":
            self._whole(200, _completion(_message_arguments(echo)))
        elif stream:
            self._chunked(_stream(iter([_message_arguments(f"fine from {model}")])))
        else:
            self._whole(200, _completion(_message_arguments(f"fine from {model}")))
