"""A real OpenAI-compatible chat-completions server on 127.0.0.1 for tests and benchmarks.

Tests talk to it through litellm (``model="openai/<name>"``, ``api_base=server.base_url``) so
the whole HTTP/SDK path is exercised, while replies, latencies and provider quirks stay
scripted and deterministic. Standard library only. Reply builders live in fake_replies.py.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ._fake_replies import (
    _ERROR_TYPES,
    CHAT_PATHS,
    MODELS_PATHS,
    ModelConfig,
    RecordedRequest,
    Reply,
    Responder,
    _completion,
    _context_rejection,
    _error,
    _parse_object,
    _rejection,
    _Response,
    error,
    stream_events,
    text,
    tool_call,
)

__all__ = [
    "CHAT_PATHS", "MODELS_PATHS", "FakeOpenAIServer", "ModelConfig", "RecordedRequest", "Reply",
    "Responder", "error", "text", "tool_call",
]


class FakeOpenAIServer:
    """Scripted OpenAI chat-completions endpoint running in a background thread."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, default_latency: float = 0.0):
        self.host, self.port, self.default_latency = host, port, default_latency
        self._lock = threading.Lock()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._counter = 0
        self._scripts: dict[str, deque[Reply]] = {}
        self._responders: dict[str | None, Responder] = {}
        self._configs: dict[str, ModelConfig] = {}
        self._requests: list[RecordedRequest] = []
        self._unexpected: list[str] = []
        self._stream_writes: list[tuple[str, list[float]]] = []
        self._answering = threading.local()  # the request a handler thread is answering

    def start(self) -> FakeOpenAIServer:
        """Bind (port 0 picks a free port) and serve in a daemon thread."""
        if self._httpd is None:
            self._httpd = _HTTPServer((self.host, self.port), self)
            self.port = self._httpd.server_address[1]
            kwargs = {"poll_interval": 0.05}
            self._thread = threading.Thread(
                target=self._httpd.serve_forever, kwargs=kwargs, daemon=True
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        """Shut down, break lingering keep-alive connections and join; safe to call twice."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        httpd.shutdown()
        httpd.close_connections()
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        """OpenAI-style base URL to pass as litellm's api_base."""
        if self._httpd is None:
            raise RuntimeError("FakeOpenAIServer is not running; call start() first")
        return f"http://{self.host}:{self.port}/v1"

    def script(self, model: str, replies: list[Reply]) -> None:
        """Queue replies for a model name as it appears in the body (no 'openai/' prefix)."""
        with self._lock:
            self._scripts.setdefault(model, deque()).extend(replies)

    def request_headers(self) -> dict[str, str]:
        """For a responder: the headers (lower-case names) of the request it is answering, so
        a test server can play a hostile provider that echoes what it was sent."""
        return dict(getattr(self._answering, "headers", {}))

    def echo_keys(self) -> None:
        """Play a hostile provider: every bid answers with the key it was sent (the bearer
        token of its Authorization header), so a test sees any key that reached it."""

        def echo(body: dict[str, Any]) -> Reply:
            sent = self.request_headers().get("authorization", "nothing")
            return tool_call(0.9, f"You sent me {sent.removeprefix('Bearer ')}")

        self.set_responder(None, echo)

    def set_responder(self, model: str | None, fn: Responder) -> None:
        """Fallback for when the model's queue is empty; model None applies to all models."""
        with self._lock:
            self._responders[model] = fn

    def configure(
        self,
        model: str,
        *,
        reject_forced_tool_choice: bool = False,
        reject_tools: bool = False,
        reject_required_tool_choice: bool = False,
        context_window: int | None = None,
        reject_stream: bool = False,
        stream_text_only: bool = False,
        no_stream_usage: bool = False,
    ) -> None:
        """Make a model behave like a provider that rejects some tool options with HTTP 400, or
        (context_window=N) whose context holds N tokens: a longer prompt (counted by
        `prompt_tokens`) gets llama-cpp-python's context-length 400 and consumes nothing.
        `reject_stream` answers stream=true with a 400; `stream_text_only` streams every reply
        as content deltas without tool calls (non-streamed requests still get the tool call);
        `no_stream_usage` streams without the usage chunk even when asked (llama.cpp's server)."""
        config = ModelConfig(reject_forced_tool_choice, reject_tools, reject_required_tool_choice,
                             context_window, reject_stream, stream_text_only, no_stream_usage)
        with self._lock:
            self._configs[model] = config

    def reset(self) -> None:
        """Forget scripts, responders, configs and records (the server keeps running)."""
        with self._lock:
            for store in (self._scripts, self._responders, self._configs):
                store.clear()
            self._stream_writes.clear()
            self._requests.clear()
            self._unexpected.clear()

    @property
    def requests(self) -> list[RecordedRequest]:
        """Snapshot of every request received, in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def unexpected(self) -> list[str]:
        """Models called with nothing scripted; tests should assert this stays empty."""
        with self._lock:
            return list(self._unexpected)

    @property
    def stream_writes(self) -> list[tuple[str, list[float]]]:
        """Per streamed reply, in order of completion: (model, time.monotonic() after each SSE
        write was flushed); for measuring delivery, e.g. first token to first character."""
        with self._lock:
            return list(self._stream_writes)

    def _streamed(self, model: str, times: list[float]) -> None:
        with self._lock:
            self._stream_writes.append((model, times))

    def requests_for(self, model: str) -> list[RecordedRequest]:
        """Requests whose body named this model."""
        return [r for r in self.requests if r.model == model]

    def pending(self, model: str) -> int:
        """How many scripted replies for the model are still unconsumed."""
        with self._lock:
            return len(self._scripts.get(model, ()))

    def _dispatch(self, method: str, path: str, raw: bytes, headers: dict[str, str]) -> _Response:
        """Decide the response and record the request (before any latency is slept)."""
        received_at = time.monotonic()
        body: dict[str, Any] = {}
        if method == "POST" and path in CHAT_PATHS:
            parsed = _parse_object(raw)
            if parsed is None:
                response = _error(400, "body is not a JSON object", _ERROR_TYPES[400])
            else:
                self._answering.headers = headers
                body, response = parsed, self._chat(parsed)
        elif method == "GET" and path in MODELS_PATHS:
            response = _Response(200, self._models_payload())
        else:
            message = f"FakeOpenAIServer: no route for {method} {path}"
            response = _error(404, message, _ERROR_TYPES[404])
        model = str(body.get("model", ""))
        record = RecordedRequest(path, model, body, headers, response.status, received_at)
        with self._lock:
            self._requests.append(record)
        return response

    def _chat(self, body: dict[str, Any]) -> _Response:
        """Rejection, else next scripted reply, else responder, else a loud 404."""
        model, delay = str(body.get("model", "")), self.default_latency
        with self._lock:
            config = self._configs.get(model, ModelConfig())
            rejection = _rejection(body, config)
            too_long = _context_rejection(body, config) if rejection is None else None
            queue = self._scripts.get(model)
            reply = queue.popleft() if queue and rejection is None and too_long is None else None
            responder = self._responders.get(model, self._responders.get(None))
        if rejection is not None:
            return _error(400, rejection, _ERROR_TYPES[400], delay)
        if too_long is not None:
            too_long.delay = delay
            return too_long
        if reply is None and responder is not None:
            try:
                reply = responder(body)
            except Exception as exc:  # a responder bug should fail the test loudly
                return _error(500, f"FakeOpenAIServer responder failed: {exc!r}", "server_error")
        if reply is None:
            with self._lock:
                self._unexpected.append(model)
            message = (
                f"FakeOpenAIServer: unexpected call for model '{model}' "
                "(no scripted reply and no responder)"
            )
            return _error(404, message, _ERROR_TYPES[404], delay)
        delay += reply.latency
        if reply.kind == "error":
            response = _error(reply.status, reply.content or "", reply.err_type or "", delay)
            if reply.retry_after is not None:
                response.headers["Retry-After"] = f"{reply.retry_after:g}"
            if reply.retry_after_ms is not None:
                response.headers["retry-after-ms"] = f"{reply.retry_after_ms:g}"
            return response
        with self._lock:
            self._counter += 1
            n = self._counter
        if body.get("stream") is True:
            return _Response(200, {}, delay, events=stream_events(body, reply, n, config),
                             chunk_delay=reply.chunk_delay, cut=reply.cut, model=model,
                             pace=reply.pace)
        return _Response(200, _completion(body, reply, n), delay)

    def _models_payload(self) -> dict[str, Any]:
        with self._lock:
            names = sorted({*self._scripts, *self._configs, *(m for m in self._responders if m)})
        data = [{"id": m, "object": "model", "created": 0, "owned_by": "fake"} for m in names]
        return {"object": "list", "data": data}


class _Handler(BaseHTTPRequestHandler):
    """Thin HTTP/1.1 keep-alive shell around FakeOpenAIServer._dispatch."""

    protocol_version = "HTTP/1.1"
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        """Silence per-request logging so test output stays readable."""

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length > 0 else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        path = self.path.split("?", 1)[0]
        response = self.server.owner._dispatch(self.command, path, raw, headers)
        if response.delay > 0:
            time.sleep(response.delay)
        if response.events is not None:
            self._stream(response)
            return
        data = json.dumps(response.payload).encode()
        self.send_response(response.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in response.headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, response: _Response) -> None:
        """Server-sent events in chunked encoding, a write (and a flush) per element; a cut
        stream ends without the closing chunk and drops the connection."""
        assert response.events is not None
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        times: list[float] = []
        for index, data in enumerate(response.events):
            if response.pace is not None:
                response.pace(index)
            if response.chunk_delay > 0:
                time.sleep(response.chunk_delay)
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()
            times.append(time.monotonic())
        self.server.owner._streamed(response.model, times)
        if response.cut:
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle


class _HTTPServer(ThreadingHTTPServer):
    """Threaded server tuned for many short keep-alive requests from one process."""

    daemon_threads = True
    request_queue_size = 128
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], owner: FakeOpenAIServer):
        self.owner = owner
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()
        super().__init__(address, _Handler)

    def get_request(self) -> tuple[socket.socket, Any]:
        """Disable Nagle: otherwise small replies can stall ~40 ms on delayed ACKs."""
        sock, addr = super().get_request()
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self._open_lock:
            self._open.add(sock)
        return sock, addr

    def shutdown_request(self, request: Any) -> None:
        with self._open_lock:
            self._open.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        """Break idle keep-alive connections so stale handler threads stop serving."""
        with self._open_lock:
            socks, self._open = list(self._open), set()
        for sock in socks:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients dropping connections mid-reply is normal in tests; report anything else."""
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)
