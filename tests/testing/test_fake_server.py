"""Tests for the fake OpenAI server, over raw HTTP and through litellm + the openai SDK.

Private imports (`testing._fake_replies`): units or test hooks with no public name; everything
public comes from the public API.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import threading
import time
from collections.abc import Iterator
from typing import Any

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"

import litellm  # noqa: E402
import pytest  # noqa: E402

from groupchat_core.testing import FakeOpenAIServer, RecordedRequest, Reply, error, text, tool_call
from groupchat_core.testing._fake_replies import prompt_tokens  # noqa: E402

litellm.suppress_debug_info = True

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "respond",
            "description": "Answer with a score and a message.",
            "parameters": {
                "type": "object",
                "properties": {"score": {"type": "number"}, "message": {"type": "string"}},
                "required": ["score", "message"],
            },
        },
    }
]
FORCED = {"type": "function", "function": {"name": "respond"}}
MESSAGES = [
    {"role": "system", "content": "be brief"},
    {"role": "user", "content": "hello big world"},
]
NO_RETRY: dict[str, Any] = {"num_retries": 0, "max_retries": 0}


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as srv:
        yield srv


@pytest.fixture()
def srv(server: FakeOpenAIServer) -> Iterator[FakeOpenAIServer]:
    server.reset()
    server.default_latency = 0.0
    yield server
    server.reset()


def post(
    srv: FakeOpenAIServer, body: dict[str, Any] | bytes, path: str = "/v1/chat/completions"
) -> tuple[int, dict[str, Any], http.client.HTTPResponse]:
    """One raw HTTP request, returning status, parsed JSON and the response object."""
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=5)
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    headers = {"Content-Type": "application/json", "Authorization": "Bearer sk-secret"}
    conn.request("POST", path, body=data, headers=headers)
    resp = conn.getresponse()
    payload = json.loads(resp.read())
    conn.close()
    return resp.status, payload, resp


def complete(srv: FakeOpenAIServer, model: str = "fake-a", **kwargs: Any) -> Any:
    return litellm.completion(
        model=f"openai/{model}",
        api_base=srv.base_url,
        api_key="sk-test",
        messages=MESSAGES,
        **kwargs,
    )


# --- raw HTTP -------------------------------------------------------------------------------


def test_raw_tool_call_shape_and_usage(srv: FakeOpenAIServer) -> None:
    srv.script("m", [tool_call(3, "hi there")])
    status, payload, resp = post(srv, {"model": "m", "messages": MESSAGES, "tools": TOOLS})
    assert status == 200
    assert resp.getheader("Content-Length") is not None
    assert payload["object"] == "chat.completion"
    assert payload["model"] == "m"
    choice = payload["choices"][0]
    assert choice["index"] == 0 and choice["finish_reason"] == "tool_calls"
    message = choice["message"]
    assert message["role"] == "assistant" and message["content"] is None
    (call,) = message["tool_calls"]
    assert call["type"] == "function" and call["id"].startswith("call_")
    assert call["function"]["name"] == "respond"
    assert json.loads(call["function"]["arguments"]) == {"score": 3, "message": "hi there"}
    # prompt: "be brief" + "hello big world" = 5 words; reply arguments JSON has 5 words
    assert payload["usage"] == {"prompt_tokens": 5, "completion_tokens": 5, "total_tokens": 10}


def test_raw_keep_alive_and_routes(srv: FakeOpenAIServer) -> None:
    srv.set_responder(None, lambda body: text("pong"))
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=5)
    for path in ("/v1/chat/completions", "/chat/completions"):
        conn.request("POST", path, body=json.dumps({"model": "x", "messages": []}))
        resp = conn.getresponse()
        assert resp.status == 200
        assert json.loads(resp.read())["choices"][0]["message"]["content"] == "pong"
    conn.request("GET", "/v1/models")
    resp = conn.getresponse()
    assert resp.status == 200 and json.loads(resp.read())["object"] == "list"
    conn.request("GET", "/v1/embeddings")
    resp = conn.getresponse()
    assert resp.status == 404 and "error" in json.loads(resp.read())
    conn.close()
    assert [r.path for r in srv.requests][:2] == ["/v1/chat/completions", "/chat/completions"]


def test_raw_invalid_json_is_400(srv: FakeOpenAIServer) -> None:
    status, payload, _ = post(srv, b"not json")
    assert status == 400
    assert payload["error"]["type"] == "invalid_request_error"
    assert srv.requests[-1].status == 400


def test_error_reply_format_and_retry_after(srv: FakeOpenAIServer) -> None:
    srv.script("m", [error(429, "slow down", retry_after=1.5)])
    status, payload, resp = post(srv, {"model": "m", "messages": []})
    assert status == 429
    assert resp.getheader("Retry-After") == "1.5"
    assert payload == {
        "error": {
            "message": "slow down",
            "type": "rate_limit_exceeded",
            "param": None,
            "code": "rate_limit_exceeded",
        }
    }


def test_recording_headers_and_redacted_repr(srv: FakeOpenAIServer) -> None:
    srv.script("m", [text("ok")])
    post(srv, {"model": "m", "messages": MESSAGES})
    (record,) = srv.requests_for("m")
    assert isinstance(record, RecordedRequest)
    assert record.headers["authorization"] == "Bearer sk-secret"
    assert record.body["messages"] == MESSAGES
    assert record.status == 200 and record.path == "/v1/chat/completions"
    assert "sk-secret" not in repr(record) and "<redacted>" in repr(record)


def test_responders_and_scripts_order(srv: FakeOpenAIServer) -> None:
    srv.script("m", [text("first"), text("second")])
    srv.set_responder("m", lambda body: text(f"echo {len(body['messages'])}"))
    srv.set_responder(None, lambda body: text("default"))
    replies = [post(srv, {"model": "m", "messages": MESSAGES})[1] for _ in range(3)]
    other = post(srv, {"model": "other", "messages": []})[1]
    contents = [p["choices"][0]["message"]["content"] for p in [*replies, other]]
    assert contents == ["first", "second", "echo 2", "default"]


def test_responder_exception_is_500(srv: FakeOpenAIServer) -> None:
    def broken(body: dict[str, Any]) -> Reply:
        raise ValueError("bug in test responder")

    srv.set_responder("m", broken)
    status, payload, _ = post(srv, {"model": "m", "messages": []})
    assert status == 500 and "bug in test responder" in payload["error"]["message"]


def test_reset_and_lifecycle() -> None:
    srv = FakeOpenAIServer()
    with pytest.raises(RuntimeError):
        _ = srv.base_url
    srv.start()
    try:
        assert srv.base_url == f"http://127.0.0.1:{srv.port}/v1" and srv.port > 0
        srv.script("m", [text("a")])
        srv.configure("m", reject_tools=True)
        post(srv, {"model": "m", "messages": []})
        srv.reset()
        assert srv.requests == [] and srv.pending("m") == 0
        status, _, _ = post(srv, {"model": "m", "messages": [], "tools": TOOLS})
        assert status == 404  # config gone, nothing scripted
    finally:
        srv.stop()
        srv.stop()  # idempotent


# --- through litellm / openai SDK --------------------------------------------------------


def test_litellm_forced_tool_call(srv: FakeOpenAIServer) -> None:
    srv.script("fake-a", [tool_call(0.75, "I agree")])
    resp = complete(srv, tools=TOOLS, tool_choice=FORCED)
    (call,) = resp.choices[0].message.tool_calls
    assert call.function.name == "respond"
    assert json.loads(call.function.arguments) == {"score": 0.75, "message": "I agree"}
    assert resp.choices[0].finish_reason == "tool_calls"
    assert resp.usage.prompt_tokens == 5
    (record,) = srv.requests_for("fake-a")  # model arrives without the "openai/" prefix
    assert record.body["tool_choice"] == FORCED
    assert record.headers["authorization"] == "Bearer sk-test"
    assert srv.unexpected == []


def test_litellm_text_reply(srv: FakeOpenAIServer) -> None:
    srv.script("fake-a", [text("just words here")])
    resp = complete(srv, tools=TOOLS)
    assert resp.choices[0].message.content == "just words here"
    assert not resp.choices[0].message.tool_calls
    assert resp.choices[0].finish_reason == "stop"
    assert resp.usage.completion_tokens == 3


def test_litellm_malformed_arguments_arrive_verbatim(srv: FakeOpenAIServer) -> None:
    srv.script(
        "fake-a",
        [tool_call(0, "", arguments_raw="not json"), tool_call(0, "", arguments_raw="[1,2]")],
    )
    first = complete(srv, tools=TOOLS, tool_choice=FORCED)
    second = complete(srv, tools=TOOLS, tool_choice=FORCED)
    assert first.choices[0].message.tool_calls[0].function.arguments == "not json"
    assert second.choices[0].message.tool_calls[0].function.arguments == "[1,2]"


def test_litellm_forced_tool_choice_rejected_without_consuming(srv: FakeOpenAIServer) -> None:
    srv.configure("fake-a", reject_forced_tool_choice=True)
    srv.script("fake-a", [tool_call(1, "fallback worked")])
    with pytest.raises(litellm.BadRequestError) as info:
        complete(srv, tools=TOOLS, tool_choice=FORCED, **NO_RETRY)
    assert "tool_choice of type 'function' is not supported" in str(info.value)
    assert srv.pending("fake-a") == 1
    resp = complete(srv, tools=TOOLS, tool_choice="auto")  # the retry a caller would do
    assert json.loads(resp.choices[0].message.tool_calls[0].function.arguments)["score"] == 1
    assert [r.status for r in srv.requests_for("fake-a")] == [400, 200]


def test_retry_after_ms_header(srv: FakeOpenAIServer) -> None:
    srv.script("m", [error(429, "slow down", retry_after_ms=250)])
    status, _, resp = post(srv, {"model": "m", "messages": []})
    assert status == 429 and resp.getheader("retry-after-ms") == "250"
    assert resp.getheader("Retry-After") is None


def test_prompt_tokens_count_contents_tools_and_framing() -> None:
    body: dict[str, Any] = {"messages": [{"role": "user", "content": "x" * 40}]}
    assert prompt_tokens(body) == 10 + 4
    body["tools"] = TOOLS
    assert prompt_tokens(body) == 14 + -(-len(json.dumps(TOOLS)) // 4)


def test_context_window_rejects_a_long_prompt_without_consuming(srv: FakeOpenAIServer) -> None:
    srv.configure("small", context_window=30)
    srv.script("small", [text("fits")])
    long_body = {"model": "small", "max_tokens": 16,
                 "messages": [{"role": "user", "content": "word " * 40}]}
    status, payload, _ = post(srv, long_body)
    assert status == 400 and srv.pending("small") == 1
    assert payload["error"]["code"] == "context_length_exceeded"
    assert payload["error"]["message"].startswith(
        "This model's maximum context length is 30 tokens. However, you requested 70 tokens "
        "(54 in the messages, 16 in the completion).")
    status, _, _ = post(srv, {"model": "small", "messages": MESSAGES})
    assert status == 200 and srv.pending("small") == 0


def test_litellm_maps_the_context_window_rejection(srv: FakeOpenAIServer) -> None:
    srv.configure("small", context_window=5)
    with pytest.raises(litellm.ContextWindowExceededError, match="maximum context length is 5"):
        complete(srv, "small", **NO_RETRY)


def test_litellm_required_and_tools_rejections(srv: FakeOpenAIServer) -> None:
    srv.configure("fake-r", reject_required_tool_choice=True)
    srv.configure("fake-t", reject_tools=True)
    srv.script("fake-t", [text("plain")])
    with pytest.raises(litellm.BadRequestError, match="'required' is not supported"):
        complete(srv, "fake-r", tools=TOOLS, tool_choice="required", **NO_RETRY)
    with pytest.raises(litellm.BadRequestError, match="tools are not supported"):
        complete(srv, "fake-t", tools=TOOLS, **NO_RETRY)
    assert complete(srv, "fake-t").choices[0].message.content == "plain"
    assert [r.status for r in srv.requests] == [400, 400, 200]


def test_litellm_rate_limit_without_retries(srv: FakeOpenAIServer) -> None:
    srv.set_responder("fake-a", lambda body: error(429, "slow down"))
    with pytest.raises(litellm.RateLimitError):
        complete(srv, **NO_RETRY)
    assert len(srv.requests) == 1


def test_litellm_default_retries_are_openai_sdk_retries(srv: FakeOpenAIServer) -> None:
    # Without num_retries/max_retries the openai SDK (max_retries=2) retries 429 and 5xx,
    # honouring Retry-After; a tiny Retry-After keeps the test fast.
    srv.set_responder("fake-a", lambda body: error(429, "slow down", retry_after=0.01))
    with pytest.raises(litellm.RateLimitError):
        complete(srv)
    retry_counts = [r.headers.get("x-stainless-retry-count") for r in srv.requests]
    assert retry_counts == ["0", "1", "2"]


def test_litellm_server_error_mapping(srv: FakeOpenAIServer) -> None:
    srv.set_responder("fake-a", lambda body: error(500, "kaboom"))
    with pytest.raises(litellm.InternalServerError, match="kaboom"):
        complete(srv, **NO_RETRY)
    assert len(srv.requests) == 1


def test_litellm_unexpected_call_is_not_found_and_recorded(srv: FakeOpenAIServer) -> None:
    with pytest.raises(litellm.NotFoundError, match="unexpected call for model 'ghost'"):
        complete(srv, "ghost", **NO_RETRY)
    assert srv.unexpected == ["ghost"]
    assert srv.requests_for("ghost")[0].status == 404


def test_latency_is_honoured(srv: FakeOpenAIServer) -> None:
    srv.script("fake-a", [text("slow", latency=0.3)])
    srv.default_latency = 0.1
    start = time.monotonic()
    complete(srv)
    assert time.monotonic() - start >= 0.4


def test_concurrent_acompletion(srv: FakeOpenAIServer) -> None:
    n, latency, together = 32, 0.2, 4
    # Each reply waits until `together` requests are being answered at once: a server that
    # answers one at a time never gets there (the barrier breaks after a minute and the
    # request fails), whatever the machine's speed. No upper bound on time.
    meeting = threading.Barrier(together)

    def answer(body: dict[str, Any]) -> Reply:
        meeting.wait(timeout=60)
        return tool_call(1, body["model"], latency=latency)

    srv.set_responder(None, answer)

    async def run_all() -> list[Any]:
        calls = [
            litellm.acompletion(
                model=f"openai/fake-{i}",
                api_base=srv.base_url,
                api_key="sk-test",
                messages=MESSAGES,
                tools=TOOLS,
                tool_choice=FORCED,
            )
            for i in range(n)
        ]
        return await asyncio.gather(*calls)

    start = time.monotonic()
    results = asyncio.run(run_all())
    elapsed = time.monotonic() - start
    assert elapsed >= latency
    for i, resp in enumerate(results):
        args = json.loads(resp.choices[0].message.tool_calls[0].function.arguments)
        assert args == {"score": 1, "message": f"fake-{i}"}
    assert len(srv.requests) == n and srv.unexpected == []
