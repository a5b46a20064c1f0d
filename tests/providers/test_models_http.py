"""The litellm path over real HTTP to a local OpenAI-compatible server (fake_server)."""

from __future__ import annotations

import asyncio
import json
import logging

from groupchat_core import RESPOND_TOOL, Agent, GroupChat
from groupchat_core.testing import FakeOpenAIServer, error, text, tool_call

KEY = "sk-test-never-leak-0123456789abcdef"


def http_agent(srv: FakeOpenAIServer, name: str, model: str | None = None, **kw) -> Agent:
    return Agent(agent_name=name, model_name=f"openai/{model or name.lower()}",
                 api_base=srv.base_url, api_key=KEY, **kw)


def run_ab(srv: FakeOpenAIServer, a: list, b: list, *agents: Agent, **config) -> GroupChat:
    """Script models a and b, then run task "t" with agents A and B (or the ones given)."""
    srv.script("a", a)
    srv.script("b", b)
    chat = GroupChat(agents=list(agents) or [http_agent(srv, "A"), http_agent(srv, "B")],
                     **config)
    chat.run("t")
    return chat


def test_request_carries_system_prompt_bid_prompt_tools_and_forced_choice(server):
    server.script("alice", [tool_call(0.9, "Hello"), tool_call(0.0, "")])
    server.script("bob", [tool_call(0.2, ""), tool_call(0.0, "")])
    alice = http_agent(server, "Alice", system_prompt="You are upbeat.")
    chat = GroupChat(agents=[alice, http_agent(server, "Bob")], threshold=0.35,
                     output_type="list")
    assert chat.run("Plan the offsite.") == ["User: Plan the offsite.", "Alice: Hello"]
    first = server.requests_for("alice")[0]
    body = first.body
    assert body["tools"] == [RESPOND_TOOL]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "respond"}}
    assert body["messages"][0] == {"role": "system", "content": "You are upbeat."}
    prompt = body["messages"][1]["content"]
    assert "You are Alice" in prompt and "Bob" in prompt and "0.35" in prompt
    assert "User: Plan the offsite." in prompt
    assert first.headers["authorization"] == f"Bearer {KEY}"
    assert KEY not in repr(first)
    bid = chat.last_run.bids[0]
    assert bid.path == "tool_call" and bid.calls == 1 and bid.prompt_tokens > 0
    assert bid.completion_tokens > 0


def test_bob_without_system_prompt_sends_only_the_user_message(server):
    run_ab(server, [tool_call(0.1, "")], [tool_call(0.1, "")])
    assert [m["role"] for m in server.requests_for("b")[0].body["messages"]] == ["user"]


def test_forced_tool_choice_rejected_falls_back_to_required_then_auto(server):
    server.configure("picky", reject_forced_tool_choice=True, reject_required_tool_choice=True)
    server.script("picky", [tool_call(0.8, "via auto"), tool_call(0.0, "")])
    server.script("other", [tool_call(0.1, ""), tool_call(0.0, "")])
    chat = GroupChat(agents=[http_agent(server, "P", "picky"), http_agent(server, "O", "other")])
    chat.run("t")
    choices = [r.body.get("tool_choice") for r in server.requests_for("picky")]
    assert choices[:3] == [{"type": "function", "function": {"name": "respond"}}, "required",
                           "auto"]
    assert choices[3] == "auto"  # the accepted mode is remembered: no second rejection
    first = chat.last_run.bids[0]
    assert first.path == "tool_call:auto" and first.calls == 3 and first.message == "via auto"


def test_tools_rejected_falls_back_to_json_text(server):
    server.configure("notools", reject_tools=True)
    server.script("notools", [text('Sure: {"score": 0.9, "message": "plain JSON"}'),
                              text("I pass.")])
    server.script("other", [tool_call(0.1, ""), tool_call(0.0, "")])
    chat = GroupChat(agents=[http_agent(server, "N", "notools"), http_agent(server, "O", "other")])
    chat.run("t")
    requests = server.requests_for("notools")
    assert "tools" in requests[0].body and "tools" not in requests[1].body
    assert "JSON object" in requests[1].body["messages"][-1]["content"]
    bids = chat.last_run.bids
    assert (bids[0].path, bids[0].message, bids[0].score) == ("json_text", "plain JSON", 0.9)
    assert bids[2].path == "json_text" and bids[2].message == "" and "no JSON" in bids[2].error


def test_text_reply_to_forced_call_is_parsed_or_silent(server):
    chat = run_ab(server, [text('{"score": 0.7, "message": "from text"}'), text("no thanks")],
                  [tool_call(0.1, ""), tool_call(0.1, "")])
    bids = chat.last_run.bids
    assert (bids[0].path, bids[0].message) == ("text_fallback", "from text")
    assert bids[2].path == "text_fallback" and bids[2].score == 0.0 and bids[2].error


def test_malformed_arguments_are_unreadable_and_stop_with_error_not_lull(server):
    chat = run_ab(server, [tool_call(None, None, arguments_raw="{not json")],
                  [tool_call(None, None, arguments_raw="[1, 2]")])
    a, b = chat.last_run.bids
    assert a.score == 0.0 and a.error.startswith("unreadable: ") and "not JSON" in a.error
    assert b.message == "" and "not a JSON object" in b.error
    record = chat.last_run
    assert record.stop_reason == "error" and record.turns[0].reason == "no_readable_bid"
    assert record.error.startswith("no agent produced a readable bid on turn 1: A: unreadable")
    assert "; B: unreadable: respond arguments are not a JSON object" in record.error


def test_retries_on_429_and_500_then_succeeds(server):
    chat = run_ab(server, [error(429), error(500), tool_call(0.9, "after retries"),
                           tool_call(0, "")], [tool_call(0.1, ""), tool_call(0.1, "")])
    first = chat.last_run.bids[0]
    assert first.message == "after retries" and first.calls == 3
    assert len(server.requests_for("a")) == 4
    assert chat.last_run.total_calls == 3 + 1 + 1 + 1


def test_retries_are_bounded_and_the_error_is_named(server):
    chat = run_ab(server, [error(429, "slow down")] * 2 + [tool_call(0.0, "")],  # + turn 2
                  [tool_call(0.9, "b speaks"), tool_call(0.0, "")],
                  http_agent(server, "A", num_retries=1), http_agent(server, "B"))
    first = chat.last_run.bids[0]
    assert first.error.startswith("RateLimitError") and "slow down" in first.error
    assert first.calls == 2 and first.score == 0.0
    assert chat.last_run.messages[1].content == "b speaks"


def test_one_agent_timing_out_while_the_others_bid(server):
    server.script("slow", [tool_call(0.9, "too late", latency=3.0)])
    server.script("fast", [tool_call(0.8, "on time"), tool_call(0.0, "")])
    server.script("slow", [tool_call(0.0, "")])
    slow = http_agent(server, "Slow", "slow", timeout=0.5, num_retries=0)
    chat = GroupChat(agents=[slow, http_agent(server, "Fast", "fast")])
    chat.run("t")
    bids = chat.last_run.bids
    # its own 0.5 s timeout ended it (a bid that waited out the 3 s reply would say "too late")
    assert "Timeout" in bids[0].error and bids[0].message == "", bids[0]
    assert chat.last_run.messages[1].content == "on time"


def test_every_agent_failing_stops_with_error_naming_the_errors(server):
    chat = run_ab(server, [error(401, "bad key for a")], [error(404, "model b does not exist")])
    record = chat.last_run
    assert record.stop_reason == "error" and not record.turns[0].lull
    assert "AuthenticationError" in record.error and "bad key for a" in record.error
    assert "NotFoundError" in record.error and "model b does not exist" in record.error


def test_many_runs_in_one_process_sync_and_async(server):
    server.set_responder(None, lambda body: tool_call(0.1, ""))
    chat = GroupChat(agents=[http_agent(server, "A"), http_agent(server, "B")])
    for _ in range(3):
        chat.run("sync")
        assert chat.last_run.stop_reason == "lull" and chat.last_run.bids[0].error is None
    for _ in range(2):  # a fresh loop each time, as asyncio.run in scripts and notebooks does
        asyncio.run(chat.arun("async"))
        assert chat.last_run.bids[0].error is None, chat.last_run.bids[0].error
    chat.run("sync again")
    assert chat.last_run.bids[0].error is None


def test_no_key_in_any_record_log_or_serialization(server, caplog):
    caplog.set_level(logging.DEBUG)
    agents = [http_agent(server, "A"), http_agent(server, "B")]
    chat = run_ab(server, [tool_call(0.9, "hi"), tool_call(0.0, "")],
                  [tool_call(0.1, ""), tool_call(0.0, "")], *agents, verbose=True)
    texts = [
        chat.last_run.model_dump_json(), chat.to_json(), chat.to_spec().model_dump_json(),
        json.dumps(chat.to_spec().to_data()), repr(chat), repr(agents[0]), str(agents[0]),
        agents[0].model_dump_json(), caplog.text, chat.last_run.bids_frame().to_csv(),
    ]
    assert all(KEY not in t for t in texts)


def test_real_model_calls_are_blocked_in_tests(monkeypatch):
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):  # past the pre-run key check
        monkeypatch.setenv(name, "sk-not-a-real-key")
    agents = [Agent(agent_name="A", model_name="gpt-4o-mini"),
              Agent(agent_name="B", model_name="anthropic/claude-3-5-haiku-latest")]
    chat = GroupChat(agents=agents)
    chat.run("t")
    record = chat.last_run
    assert record.stop_reason == "error"
    assert all("blocked" in b.error for b in record.bids)


def test_a_provider_error_echoing_the_key_is_scrubbed_and_not_retried(server):
    chat = run_ab(server, [error(500, f"Missing credentials: api_key {KEY} was rejected")],
                  [error(401, "no")])
    bid = chat.last_run.bids[0]
    assert KEY not in bid.error and "***" in bid.error
    assert bid.calls == 1 and len(server.requests_for("a")) == 1


def test_litellm_is_never_imported_on_the_shared_loop_thread(server):
    import ast
    import subprocess
    import sys

    code = f"""
import sys, threading
import builtins
real_import = builtins.__import__
threads = set()
def spy(name, *a, **k):
    if name == "litellm" and "litellm" not in sys.modules:
        threads.add(threading.current_thread().name)
    return real_import(name, *a, **k)
builtins.__import__ = spy
from groupchat_core import Agent, GroupChat
agents = [Agent(agent_name=n, model_name="openai/x", api_base="{server.base_url}", api_key="k")
          for n in "AB"]
GroupChat(agents=agents).run("t")
print(sorted(threads))
"""
    server.set_responder(None, lambda body: tool_call(0.0, ""))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, env={"GROUPCHAT_BLOCK_REMOTE_CALLS": "1", "PATH": ""})
    assert out.returncode == 0, out.stderr
    threads = ast.literal_eval(out.stdout.strip().splitlines()[-1])
    assert threads and "groupchat-loop" not in threads


def test_a_local_server_gets_a_placeholder_key_and_the_env_key_only_when_trusted(
        server, monkeypatch):
    """The OpenAI SDK sends nothing without a key (local servers ignore it); OPENAI_API_KEY goes
    only to a trusted base: anyone may point a shared agent at a server of their own."""
    agents = [Agent(agent_name=n, model_name=f"openai/{n.lower()}", api_base=server.base_url)
              for n in ("Local", "Other")]
    server.script("local", [tool_call(0.9, "hi"), tool_call(0.0, "")])
    server.script("other", [tool_call(0.1, ""), tool_call(0.0, "")])
    chat = GroupChat(agents=agents, max_loops=2)
    chat.run("t")
    assert [b.path for b in chat.last_run.bids] == ["tool_call", "tool_call"]
    assert server.requests_for("local")[-1].headers["authorization"] == "Bearer no-key"
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    for trusted, sent in ((False, "Bearer no-key"), (True, f"Bearer {KEY}")):
        if trusted:
            monkeypatch.setenv("GROUPCHAT_TRUSTED_API_BASES", server.base_url)
        server.script("local", [tool_call(0.1, "")])
        server.script("other", [tool_call(0.1, "")])
        GroupChat(agents=agents).run("t")
        assert server.requests_for("local")[-1].headers["authorization"] == sent, trusted
